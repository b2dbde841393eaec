"""Whisper tiny.en through faster-whisper on real speech, and model resolution."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from _pipeline_support import EVAL, components, needs_eval
from voicekit.audio import load_audio
from voicekit.evaluation import wer
from voicekit.models import ModelError, check_whisper_dir, resolve_whisper, verify

pytestmark = needs_eval

ROOT = Path(__file__).resolve().parents[1]

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
    assert {type(v) for w in words for v in (w.start, w.end, w.probability)} == {float}  # not numpy floats


def test_same_audio_gives_the_same_words_from_run_to_run(tmp_path):
    # the first 7.2 s of diarizationExample2 (its first utterance) are hard for tiny.en: every
    # temperature of the fallback is tried, up to sampling at 1.0; before the seed was fixed, two
    # runs gave "I love you all, I love you all…" and "I hope you can find me in this video…"
    script = tmp_path / "run.py"
    script.write_text(
        "from voicekit.audio import load_audio\n"
        "from voicekit.stt import Transcriber\n"
        f"x = load_audio({str(EVAL / 'pyaudioanalysis' / 'diarizationExample2.wav')!r})\n"
        "print([(w.start, w.end, w.text) for w in Transcriber().transcribe(x[:int(7.2 * 16000)])])\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    runs = [subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
            for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr[-2000:]
    print(runs[0].stdout)
    assert runs[0].stdout.strip() not in ("", "[]") and runs[1].stdout == runs[0].stdout


def test_words_after_an_early_end_of_text_are_decoded_from_the_last_word():
    # diarizationExample's utterance at 31.1-40.2 s: tiny.en ends its output after "the south of
    # Spain." at 34.6 s, with 5.4 s of speech left; the rest is decoded again from that word
    from voicekit.vad import Endpointer, make_vad

    ep = Endpointer(make_vad("silero"))
    x = load_audio(EVAL / "pyaudioanalysis" / "diarizationExample.wav")
    utt = next(u for u in [*ep.push(x), *ep.flush()] if u.start <= 33.0 < u.end)
    stt = components().transcriber
    alone = stt.transcribe(utt.samples, utt.start)
    words = stt.transcribe(utt.samples, utt.start, speech=utt.speech, frame_seconds=utt.frame_seconds)
    text = "".join(w.text for w in words)
    print(f"{utt.start:.2f}-{utt.end:.2f}", "".join(w.text for w in alone), "|", text)
    assert words[:len(alone)] == alone and alone[-1].end < utt.end - 4.0
    assert len(words) >= len(alone) + 15 and words[-1].end > utt.end - 1.0
    assert "pension" in text.lower()
    assert all(a.end <= b.start + 1e-3 for a, b in zip(words, words[1:]))
    # a frame mask without its frame length is refused: 30 ms webrtcvad frames read as Silero's
    # 32 ms would put the resume point in the wrong place
    with pytest.raises(ValueError, match="frame_seconds"):
        stt.transcribe(utt.samples, utt.start, speech=utt.speech)


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


@needs_eval
def test_a_multilingual_model_records_each_turns_language(tmp_path):
    """A multilingual trial: faster-whisper's detected language was thrown away, so a meeting that
    switches language could not be told apart turn by turn. faster-whisper's multilingual.mp3
    read in English, then in German (20 s around the switch at 30 s), with Whisper base."""
    import json

    import soundfile as sf

    from voicekit.cli import main

    clip = tmp_path / "switch.wav"
    sf.write(clip, load_audio(EVAL / "faster_whisper" / "multilingual.mp3")[16000 * 18: 16000 * 40], 16000)
    assert main(["replay", str(clip), "--model", "base", "--out", str(tmp_path / "o"), "--quiet"]) == 0
    turns = json.loads((tmp_path / "o" / "switch.json").read_text(encoding="utf-8"))["turns"]
    languages = [t["language"] for t in turns]
    print(list(zip(languages, (t["text"][:40] for t in turns))))
    assert languages[0] == "en" and languages[-1] == "de" and languages == sorted(languages, key=["en", "de"].index)
    assert "Software" in turns[-1]["text"]
    # an English-only model writes no language (it decodes everything as English)
    assert main(["replay", str(clip), "--out", str(tmp_path / "e"), "--quiet"]) == 0
    assert all("language" not in t for t in json.loads((tmp_path / "e" / "switch.json").read_text())["turns"])


def test_a_list_of_languages_picks_the_likeliest_of_them():
    """A multilingual trial: a German "Ja, genau" was detected as English ("y'all", which then
    addressed the room); a meeting known to be in some languages can say so (--language de,fr)."""
    from voicekit.stt import SttOptions, pick_language

    assert SttOptions(model="base", language="de, fr").languages == ("de", "fr")
    assert pick_language([("en", 0.6), ("fr", 0.1), ("de", 0.3)], ("de", "fr")) == "de"
    assert pick_language([("en", 1.0)], ("fr", "de")) == "fr"   # none listed: the first given
    with pytest.raises(ValueError, match=r"language 'german' is not one of Whisper's .*; give 'de',"):
        SttOptions(model="base", language="fr,german")


@needs_eval
def test_a_meeting_restricted_to_languages_is_decoded_in_them_only(tmp_path):
    """faster-whisper's multilingual.mp3, English then German: with --language de,en each turn
    keeps its own language; with --language de,fr the English part cannot be decoded as English."""
    import json

    import soundfile as sf

    from voicekit.cli import main

    clip = tmp_path / "switch.wav"
    sf.write(clip, load_audio(EVAL / "faster_whisper" / "multilingual.mp3")[16000 * 18: 16000 * 40], 16000)
    found = {}
    for codes in ("de,en", "de,fr"):
        assert main(["replay", str(clip), "--model", "base", "--language", codes, "--out", str(tmp_path / codes),
                     "--quiet"]) == 0
        turns = json.loads((tmp_path / codes / "switch.json").read_text(encoding="utf-8"))["turns"]
        found[codes] = [t["language"] for t in turns]
    print(found)
    assert found["de,en"][0] == "en" and found["de,en"][-1] == "de"
    assert set(found["de,fr"]) <= {"de", "fr"} and found["de,fr"][-1] == "de"
