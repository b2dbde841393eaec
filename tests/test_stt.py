"""Whisper tiny.en through faster-whisper on real speech, and model resolution."""

import numpy as np
import pytest

from _pipeline_support import EVAL, components, needs_eval
from voicekit.audio import load_audio
from voicekit.evaluation import wer
from voicekit.models import ModelError, check_whisper_dir, resolve_whisper, verify

pytestmark = needs_eval

JFK = ("And so my fellow Americans, ask not what your country can do for you, "
       "ask what you can do for your country.")


def test_jfk_words_with_times_inside_the_offset_audio():
    x = load_audio(EVAL / "faster_whisper" / "jfk.flac")
    words = components().transcriber.transcribe(x, offset=100.0)
    text = "".join(w.text for w in words)
    print(text)
    assert wer(JFK, text) <= 0.1
    assert all(100.0 <= w.start <= w.end <= 100.0 + len(x) / 16000 + 1e-3 for w in words)
    assert all(0.0 <= w.probability <= 1.0 for w in words)
    assert [w.start for w in words] == sorted(w.start for w in words)


def test_silence_gives_no_words():
    assert components().transcriber.transcribe(np.zeros(16000 * 5, np.float32)) == []


def test_bundled_tiny_en_matches_its_recorded_checksums():
    assert verify("tiny.en") == {"model.bin": True, "config.json": True, "tokenizer.json": True,
                                 "vocabulary.txt": True}


def test_missing_and_corrupt_model_directories_name_the_fix(tmp_path):
    with pytest.raises(ModelError, match="does not exist"):
        resolve_whisper(str(tmp_path / "nope"))
    with pytest.raises(ModelError, match="unknown model 'large-v9'"):
        resolve_whisper("large-v9")
    (tmp_path / "model.bin").write_bytes(b"x" * 10)
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelError, match="truncated"):
        check_whisper_dir(tmp_path)
    (tmp_path / "model.bin").write_bytes(b"x" * 4096)
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ModelError, match="not valid JSON"):
        check_whisper_dir(tmp_path)
