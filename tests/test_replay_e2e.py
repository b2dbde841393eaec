"""End to end: `voicekit replay` on the pyannote sample (the acceptance file), outputs, export,
and a replay killed mid-meeting."""

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from _pipeline_support import EVAL, SAMPLE, eval_file, needs_eval
from voicekit.cli import main
from voicekit.evaluation import (cpwer, load_reference, reference_segments, reference_text, score_der,
                                 turns_to_annotation, wer)
from voicekit.outputs import FORMATS, format_line
from voicekit.store import MeetingStore
from voicekit.turns import CONTINUOUS_GAP

pytestmark = needs_eval


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    out = tmp_path_factory.mktemp("meeting")
    assert main(["replay", str(SAMPLE), "--out", str(out), "--refine", "--quiet"]) == 0
    return out


@pytest.fixture(scope="module")
def replayed_two(tmp_path_factory):
    """The sample replayed with the speaker count given and the speakers named."""
    out = tmp_path_factory.mktemp("meeting2")
    assert main(["replay", str(SAMPLE), "--out", str(out), "--refine", "--quiet", "--num-speakers", "2",
                 "--speaker-names", "Speaker A=Diane,Speaker B=Sheila"]) == 0
    return out


def _scores(turns):
    f = eval_file("sample")
    ref, uem = load_reference(f, 30.0)
    return score_der(ref, turns_to_annotation(turns, "sample"), uem, 0.5)


def _acceptance(out):
    store = MeetingStore(out / "meeting.sqlite")
    live, refined = store.turns(), store.turns(refined=True)
    d_live, d_ref = _scores(live), _scores(refined)
    w = wer(reference_text(eval_file("sample")), " ".join(t.text for t in live))
    rows = reference_segments(eval_file("sample"))
    print(f"sample: live DER c0.5 {100 * d_live.der:.1f}% ({len({t.speaker for t in live})} speakers), "
          f"refined DER c0.5 {100 * d_ref.der:.1f}% ({len({t.speaker for t in refined})} speakers), "
          f"WER {100 * w:.1f}%, cpWER live / refined {100 * cpwer(rows, live):.1f} / {100 * cpwer(rows, refined):.1f}%")
    return live, refined, d_live, d_ref, w


def test_acceptance_refined_der_and_wer(replayed):
    live, refined, _d_live, d_ref, w = _acceptance(replayed)
    assert len({t.speaker for t in refined}) == 2
    assert d_ref.der <= 0.12
    assert w <= 0.15
    # words and speakers together (no target in the issues; docs/accuracy.md): the refined
    # transcript's two speakers take the live one's (1 speaker) cpWER far down
    rows = reference_segments(eval_file("sample"))
    assert cpwer(rows, refined) < cpwer(rows, live) - 0.2


@pytest.mark.xfail(reason="issue 2 target not reached: live output finds 1 speaker on the pyannote "
                          "sample (DER c0.5 46.6% measured, target <= 20% with 2 speakers); see "
                          "docs/accuracy.md", strict=True)
def test_acceptance_live_der(replayed):
    live, _refined, d_live, _d_ref, _w = _acceptance(replayed)
    assert len({t.speaker for t in live}) == 2
    assert d_live.der <= 0.20


def test_num_speakers_is_honoured_live_and_refined(replayed_two):
    store = MeetingStore(replayed_two / "meeting.sqlite")
    assert {t.speaker for t in store.turns()} == {"Speaker A", "Speaker B"}
    assert {t.speaker for t in store.turns(refined=True)} == {"Speaker A", "Speaker B"}
    d = _scores(store.turns())
    print(f"sample with --num-speakers 2: live DER c0.5 {100 * d.der:.1f}%")
    assert d.der <= 0.20  # 14.0 % measured; issue 2's live bound for two speakers


def test_a_telephone_band_recording_gets_the_speaker_count_hint(tmp_path, capsys):
    """The sample is telephone-band, where the embedded diarizer merges voices: the replay says
    so and how to give the count; with the count given, it does not."""
    assert main(["replay", str(SAMPLE), "--out", str(tmp_path / "a"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "the audio is telephone-band (nothing above 4 kHz)" in err and "--num-speakers N" in err, err
    assert "Whisper was unsure" not in err   # English: mean word probability 0.85
    wrote = [line for line in err.splitlines() if line.startswith("wrote ")]
    assert wrote == [f"wrote meeting.sqlite, sample.json, sample.rttm, sample.srt, sample.vtt, sample.txt "
                     f"to {tmp_path / 'a'}/"], err   # the store first: what `voicekit export` reads
    assert all((tmp_path / "a" / name).is_file() for name in wrote[0].split(" to ")[0][6:].split(", "))
    assert main(["replay", str(SAMPLE), "--out", str(tmp_path / "b"), "--quiet", "--num-speakers", "2"]) == 0
    assert "telephone-band" not in capsys.readouterr().err


def test_a_meeting_not_in_english_heard_by_an_english_only_model_gets_the_language_hint(tmp_path, capsys):
    """A new-user trial: diarizationExample2 is German, and tiny.en turned it into confident-looking
    English ("…I'll see you next time.") without a word. Its words' mean probability (0.44 over 76
    words, against 0.67-0.95 for the English recordings) now brings a hint to use --model base."""
    german = EVAL / "pyaudioanalysis" / "diarizationExample2.wav"
    assert main(["replay", str(german), "--out", str(tmp_path / "de"), "--quiet"]) == 0
    err = capsys.readouterr().err
    print(err)
    assert "Whisper was unsure of most words (mean word probability 0.4" in err
    assert "tiny.en (English only) heard it as English words: use --model base" in err
    assert "if it is, loud noise or a distant microphone may be the cause" in err


def test_a_meeting_that_switches_language_partway_gets_the_hint_for_that_part(tmp_path, capsys):
    """A user trial: faster-whisper's multilingual.mp3 reads an English licence (0-29 s), then
    German (31-60 s), which tiny.en turned into English nonsense ("I'm afraid to speak with the
    Russian people") without a word: the whole meeting's mean word probability (0.70) is an
    English one. A stretch of 40 words under 0.5 now names the part; the English far-field
    recording whose lowest stretch is the lowest measured (dev00, 0.594) gets no hint. The part
    runs from its first to its last unsure word: on one CPU (AMD EPYC, 2026-12-05) the stretch
    opened on the last English word ("software." at 0.95) and the hint said 00:00:28.7."""
    from voicekit.cli.meeting import LANGUAGE_HINT_WORDS, _hints
    from voicekit.pipeline import Pipeline, PipelineOptions
    from voicekit.sources import FileSource
    from _pipeline_support import components

    assert main(["replay", str(EVAL / "faster_whisper" / "multilingual.mp3"), "--out", str(tmp_path / "ml"),
                 "--quiet"]) == 0
    err = capsys.readouterr().err
    print(err)
    m = re.search(r"Whisper was unsure of most words from 00:00:(\d\d\.\d) to 00:00:(\d\d\.\d) \(mean word "
                  r"probability (0\.\d\d) over (\d+) words", err)
    assert m, err
    start, end, mean, n = float(m[1]), float(m[2]), float(m[3]), int(m[4])
    assert 30.0 <= start < 45.0 and end > 55.0 and mean < 0.5 and n >= LANGUAGE_HINT_WORDS, m[0]
    assert "if that part is not in English, tiny.en (English only) heard it as English words: use --model base" in err
    english = Pipeline(PipelineOptions(), components()).run(FileSource(eval_file("dev00").audio))
    assert [h for h in _hints(english, PipelineOptions(), english_only=True) if "unsure" in h] == []


def test_outputs_are_written_in_every_format(replayed):
    for suffix in ("", ".refined"):
        for ext in ("json", "rttm", "srt", "vtt", "txt"):
            assert (replayed / f"sample{suffix}.{ext}").stat().st_size > 0
    doc = json.loads((replayed / "sample.json").read_text())
    assert doc["version"] == 1 and doc["meeting"]["duration"] == 30.0
    turns = doc["turns"]
    assert len(turns) >= 3
    for t in turns:
        assert t["speaker"].startswith("Speaker ") and t["name"] == t["speaker"]
        assert 0.0 <= t["start"] < t["end"] <= 30.0
        assert t["emitted_at"] >= t["end"]
        assert 0 < t["confidence"] <= 1
        assert t["words"] and all(t["start"] <= w["start"] <= w["end"] <= t["end"] for w in t["words"])
    assert [t["start"] for t in turns] == sorted(t["start"] for t in turns)
    rttm = (replayed / "sample.rttm").read_text().splitlines()
    assert len(rttm) == len(turns)
    assert all(line.split()[0] == "SPEAKER" and line.split()[7].startswith("Speaker_") for line in rttm)
    srt = (replayed / "sample.srt").read_text()
    assert srt.startswith("1\n00:00:0") and f"{turns[0]['speaker']}: " in srt
    vtt = (replayed / "sample.vtt").read_text()
    assert vtt.startswith("WEBVTT") and f"<v {turns[0]['speaker']}>" in vtt


def test_export_rebuilds_the_same_outputs(replayed, tmp_path):
    before = {p.name: p.read_bytes() for p in replayed.iterdir() if p.suffix in (".json", ".srt", ".vtt", ".txt", ".rttm")}
    for name in before:
        (replayed / name).unlink()
    assert main(["export", str(replayed)]) == 0
    after = {p.name: p.read_bytes() for p in replayed.iterdir() if p.suffix in (".json", ".srt", ".vtt", ".txt", ".rttm")}
    assert after == before
    # the store file given for its folder (a trial: "OUT/meeting.sqlite/meeting.sqlite not found")
    for name in before:
        (replayed / name).unlink()
    assert main(["export", str(replayed / "meeting.sqlite")]) == 0
    assert {p.name: p.read_bytes() for p in replayed.iterdir() if p.name in before} == before


def test_export_names_speakers_after_the_meeting(replayed, tmp_path, capsys):
    """`voicekit export OUT --speaker-names`: a user who learns after the meeting who spoke (or
    finds a known voice's name wrong) gets every turn of the label named, in the live and the
    refined outputs, without replaying; the JSON keeps the name each turn was emitted with, a
    later plain export keeps the names, and a label the meeting lacks renames nothing."""
    out = tmp_path / "m"
    shutil.copytree(replayed, out)
    live = json.loads((out / "sample.json").read_text())["turns"]
    labels = sorted({t["speaker"] for t in live})
    assert labels == ["Speaker A"]    # live, the sample's two people are one speaker (docs/accuracy.md)
    refined_labels = sorted({t["speaker"] for t in json.loads((out / "sample.refined.json").read_text())["turns"]})
    assert refined_labels == ["Speaker A", "Speaker B"]
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.suffix in (".json", ".txt")}
    assert main(["export", str(out), "--speaker-names", "Speaker C=Carol"]) == 2
    assert "Speaker C is no speaker of this meeting (its speakers, live and refined: Speaker A, Speaker B)" \
        in capsys.readouterr().err
    assert main(["export", str(out), "--speaker-names", "B=Sheila"]) == 2   # (a trial typed the letter only)
    assert capsys.readouterr().err.rstrip().endswith("nothing renamed: did you mean Speaker B?")
    names = tmp_path / "team=names.txt"   # a names file, though its path holds '='
    names.write_text("# after the call\nSpeaker A = Diane\nSpeaker B Sheila\n", encoding="utf-8")
    assert main(["export", str(out), "--speaker-names", str(names)]) == 2
    assert f"--speaker-names {names}: line 3: speaker name entry 'Speaker B Sheila' has no '='" \
        in capsys.readouterr().err
    names.write_text("Speaker A = Diane\nSpeaker B = Sheila\n", encoding="utf-8")
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.name in before} == before
    assert MeetingStore(out / "meeting.sqlite").renamed_speakers() == {}

    assert main(["export", str(out), "--speaker-names", str(names)]) == 0
    said = capsys.readouterr().out
    assert (f"named after the meeting: Speaker A is Diane ({len(live)} live turns), Speaker B is Sheila (refined "
            "only: a later re-clustering may give this label to other speech)") in said
    for _ in range(2):   # a later export without --speaker-names keeps the names
        doc = json.loads((out / "sample.json").read_text())
        assert doc["meeting"]["renamed"] == {"Speaker A": "Diane", "Speaker B": "Sheila"}
        assert [(t["name"], t["emitted_name"]) for t in doc["turns"]] == [("Diane", "Speaker A")] * len(live)
        assert [t["text"] for t in doc["turns"]] == [t["text"] for t in live]
        assert {line.split()[7] for line in (out / "sample.rttm").read_text().splitlines()} == {"Diane"}
        refined = json.loads((out / "sample.refined.json").read_text())
        assert {(t["speaker"], t["name"]) for t in refined["turns"]} == {("Speaker A", "Diane"), ("Speaker B", "Sheila")}
        assert all(line.split("] ", 1)[1].startswith(("Diane: ", "Sheila: "))
                   for line in (out / "sample.refined.txt").read_text().splitlines())
        assert main(["export", str(out)]) == 0
    store = MeetingStore(out / "meeting.sqlite")
    assert {t.sender_name for t in store.turns()} == {"Speaker A"}   # the store keeps what was emitted
    store.close()
    # renaming by the name shown (a trial): the label it names is suggested
    assert main(["export", str(out), "--speaker-names", "Diane=Di"]) == 2
    assert capsys.readouterr().err.rstrip().endswith("did you mean Speaker A (named Diane)?")


def test_speaker_names_rename_live_and_follow_the_speaker_in_refined_outputs(replayed_two):
    doc = json.loads((replayed_two / "sample.json").read_text())
    assert {t["name"] for t in doc["turns"]} == {"Diane", "Sheila"}
    refined = json.loads((replayed_two / "sample.refined.json").read_text())
    names = {"Speaker A": "Diane", "Speaker B": "Sheila"}
    assert all(t["name"] == names[t["speaker"]] for t in refined["turns"])
    rttm = (replayed_two / "sample.rttm").read_text()
    assert {line.split()[7] for line in rttm.splitlines()} == {"Diane", "Sheila"}


def test_bad_input_gives_one_line_and_exit_2(tmp_path, capsys):
    assert main(["replay", str(tmp_path / "missing.wav"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such file" in err[0]
    assert main(["replay", str(SAMPLE), "--out", str(tmp_path), "--model", str(tmp_path / "nomodel")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "meeting.sqlite").exists()


def test_a_second_replay_never_overwrites_a_meeting_silently(replayed, capsys):
    before = (replayed / "meeting.sqlite").read_bytes()
    assert main(["replay", str(SAMPLE), "--out", str(replayed), "--quiet"]) == 2
    assert "already holds a meeting" in capsys.readouterr().err
    assert (replayed / "meeting.sqlite").read_bytes() == before


def test_a_killed_replay_keeps_every_committed_turn(tmp_path, capsys):
    out = tmp_path / "m"
    proc = subprocess.Popen([sys.executable, "-m", "voicekit.cli", "replay", str(SAMPLE), "--out", str(out),
                             "--realtime", "--quiet"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    db = out / "meeting.sqlite"
    committed = 0
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and committed < 2:
        time.sleep(0.5)
        if db.exists():
            try:
                committed = sqlite3.connect(db).execute("SELECT COUNT(*) FROM turns").fetchone()[0]
            except sqlite3.Error:
                pass
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert committed >= 2, proc.stderr.read().decode()
    store = MeetingStore(db)
    turns = store.turns()
    assert len(turns) >= committed and all(t.text for t in turns)
    store.close()
    assert main(["export", str(out)]) == 0
    doc = json.loads((out / "sample.json").read_text())
    assert len(doc["turns"]) == len(turns)
    # the outputs do not claim the whole 30 s recording was heard, and export says why
    assert doc["meeting"]["duration"] == round(max(t.end for t in turns), 3) < 30.0
    printed = capsys.readouterr().out
    assert f"the meeting in {out} did not end: the command recording it ({SAMPLE}) was stopped before" in printed


def test_a_reader_that_leaves_after_the_first_line_ends_the_replay_with_its_outputs(tmp_path):
    """`voicekit replay sample.wav | head -1` ended with exit code 1, no word and no outputs (rich
    exits when stdout's reader has gone): now the replay stops as after a first Ctrl-C, commits
    what it heard, writes every output and exits 141, a shell's code for a writer its reader left."""
    out = tmp_path / "m"
    proc = subprocess.Popen([sys.executable, "-m", "voicekit.cli", "replay", str(SAMPLE), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = proc.stdout.readline()
    proc.stdout.close()   # what `head -1` does after its line
    rc = proc.wait(120)
    err = proc.stderr.read()
    assert rc == 141, err
    assert "the reader of the live lines went away (stdout closed): ending the meeting" in err
    assert re.search(r"every utterance heard so far was committed; the last \S+ of the recording's 00:00:30.0 "
                     r"were not heard \(a replay is not resumed: run it again with --overwrite to hear it all\); "
                     r"writing outputs", err), err
    assert "Traceback" not in err and "internal error" not in err, err
    doc = json.loads((out / "sample.json").read_text())
    turns = doc["turns"]
    store = MeetingStore(out / "meeting.sqlite")
    assert first.rstrip("\n") == format_line(store.turns()[0])
    store.close()
    assert len(turns) >= 2   # the turn whose line found no reader is committed too
    assert all((out / f"sample.{ext}").is_file() for ext in ("rttm", "srt", "vtt", "txt"))
    assert turns[-1]["end"] <= doc["meeting"]["duration"] < 30.0   # what was heard, not the whole recording


@pytest.mark.parametrize("stdout, rc, said", [
    ("closed", 0, None),   # `>&-`: Python starts with sys.stdout None; there are no live lines to show
    ("/dev/full", 2, "voicekit: error: the live lines cannot be written to stdout (No space left on device): "
                     "ending the meeting; its outputs are written to its folder"),
])
def test_a_stdout_that_cannot_be_written_costs_no_output_and_no_traceback(tmp_path, stdout, rc, said):
    """A scripting trial (2026-12-06): `replay … >&-` and `replay … > /dev/full` logged "a turn
    sink failed" with a traceback for every turn and exited 0. Closed: the replay runs as with
    --quiet. Full: one error line, the meeting ends as after Ctrl-C with its outputs, exit 2."""
    out = tmp_path / "m"
    with open(os.devnull if stdout == "closed" else stdout, "w") as sink:
        proc = subprocess.run([sys.executable, "-m", "voicekit.cli", "replay", str(SAMPLE), "--out", str(out)],
                              stdout=sink, stderr=subprocess.PIPE, text=True, timeout=300,
                              preexec_fn=(lambda: os.close(1)) if stdout == "closed" else None)
    assert proc.returncode == rc, proc.stderr
    assert "Traceback" not in proc.stderr and "sink failed" not in proc.stderr, proc.stderr
    if said:
        assert proc.stderr.count(said) == 1, proc.stderr
    doc = json.loads((out / "sample.json").read_text())
    assert doc["turns"] and all((out / f"sample.{ext}").is_file() for ext in ("rttm", "srt", "vtt", "txt"))


@needs_eval
def test_a_reader_of_stdout_and_stderr_that_goes_away_costs_no_output(tmp_path):
    """A screen-reader trial: `voicekit mic 2>&1 | tee log` ended with Ctrl-C (which kills tee
    too) exited 1 without its outputs: rich ends the program with status 1 when the console it
    prints to has a broken pipe, and stderr's did at "stopping: …". A stderr that cannot be
    written is now silenced, as stdout is: the meeting ends as its reader left (at the first live
    line, as `| head -1` ends it), what it had heard written."""
    out = tmp_path / "m"
    proc = subprocess.Popen([sys.executable, "-m", "voicekit", "replay", str(EVAL / "picovoice_falcon" / "test.wav"),
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout.readline().startswith(b"loading models")
    proc.stdout.close()   # the reader of both goes away before the first live line
    assert proc.wait(300) == 141
    doc = json.loads((out / "test.json").read_text())
    assert doc["turns"][0]["text"] == "And so it begins."
    assert all((out / f"test.{ext}").is_file() for ext in ("rttm", "srt", "vtt", "txt"))


def test_a_failed_start_leaves_nothing_that_blocks_the_retry(tmp_path, capsys):
    stereo = EVAL / "faster_whisper" / "stereo_diarization.wav"
    assert main(["replay", str(stereo), "--out", str(tmp_path), "--channel", "2"]) == 2
    assert "has 2 channels (0..1)" in capsys.readouterr().err
    assert not (tmp_path / "meeting.sqlite").exists()
    (tmp_path / "meeting.sqlite").write_bytes(b"")  # an empty store from a crashed start
    assert main(["replay", str(stereo), "--out", str(tmp_path), "--channel", "1", "--quiet"]) == 0
    doc = json.loads((tmp_path / "stereo_diarization.json").read_text())
    assert "horizon" in " ".join(t["text"] for t in doc["turns"]).lower()


def test_export_refines_later_from_kept_embeddings(tmp_path, capsys):
    """A meeting run with --keep-embeddings is refined afterwards by `voicekit export --refine`,
    with the same result as `replay --refine`; the live labels are never changed; the embeddings
    can be deleted."""
    audio = str(SAMPLE)
    now, later = tmp_path / "now", tmp_path / "later"
    assert main(["replay", audio, "--out", str(now), "--refine", "--quiet"]) == 0
    assert main(["replay", audio, "--out", str(later), "--quiet", "--keep-embeddings"]) == 0
    store = MeetingStore(later / "meeting.sqlite")
    live = store.turns()
    kept = store.embeddings()
    assert not store.has_refined() and len(kept) >= 3 and kept[0][2].shape[1] == 256
    store.close()
    assert main(["export", str(later), "--refine"]) == 0
    assert "moved to another speaker by most of their words" in capsys.readouterr().out
    a, b = MeetingStore(now / "meeting.sqlite"), MeetingStore(later / "meeting.sqlite")
    assert [(t.speaker, t.text) for t in b.turns()] == [(t.speaker, t.text) for t in live]
    assert [(t.speaker, t.start, t.end) for t in b.turns(refined=True)] == \
        [(t.speaker, t.start, t.end) for t in a.turns(refined=True)]
    assert b.changed_turns() == a.changed_turns()
    assert (later / "sample.refined.rttm").read_text() == (now / "sample.refined.rttm").read_text()
    a.close()
    b.close()
    # a count forced once can be given back to the estimate (a trial: a plain --refine kept the
    # forced one, and nothing said how to go back)
    estimated = (later / "sample.refined.rttm").read_text()
    assert main(["export", str(later), "--refine", "--num-speakers", "1"]) == 0
    assert {line.split()[7] for line in (later / "sample.refined.rttm").read_text().splitlines()} == {"Speaker_A"}
    capsys.readouterr()
    assert main(["export", str(later), "--refine"]) == 0
    assert "pass --num-speakers N, or auto, to re-cluster" in capsys.readouterr().out
    assert main(["export", str(later), "--refine", "--num-speakers", "auto"]) == 0
    assert (later / "sample.refined.rttm").read_text() == estimated
    capsys.readouterr()
    # a name given to a label only the refinement has (a trial: after another re-clustering the
    # name read on someone else's lines, without a word)
    assert main(["export", str(later), "--speaker-names", "Speaker B=Sheila"]) == 0
    assert "Speaker B is Sheila (refined only: a later re-clustering may give this label to other speech)" \
        in capsys.readouterr().out
    assert main(["export", str(later), "--refine", "--num-speakers", "2"]) == 0
    assert ("warning: Speaker B (Sheila) was named after an earlier refinement and no live turn carries the label: "
            "this re-clustering may have given it to other speech") in capsys.readouterr().out
    assert main(["export", str(later), "--drop-embeddings"]) == 0
    assert "deleted the speaker embeddings of " in capsys.readouterr().out
    store = MeetingStore(later / "meeting.sqlite")
    assert store.embeddings() == [] and store.has_refined()
    assert main(["export", str(later), "--drop-embeddings"]) == 0   # (a trial: "of 0 utterances")
    assert "this meeting keeps no speaker embeddings: nothing to delete" in capsys.readouterr().out
    store.close()


def test_export_refine_without_embeddings_says_how(tmp_path, capsys):
    out = tmp_path / "m"
    assert main(["replay", str(eval_file("test").audio), "--out", str(out), "--quiet"]) == 0
    assert main(["export", str(out), "--refine"]) == 2
    assert "replay the recording again with --refine, or with --keep-embeddings" in capsys.readouterr().err
    # with a count, the replay it points to asks for that count (a new-user check: it said --refine only)
    assert main(["export", str(out), "--refine", "--num-speakers", "2"]) == 2
    assert "replay the recording again with --refine --num-speakers 2, or with" in capsys.readouterr().err
    assert main(["export", str(out), "--num-speakers", "2"]) == 2
    assert "add --refine" in capsys.readouterr().err
    # a live meeting cannot be "replayed again": the hint follows where the meeting came from
    for source, hint in (("mic:pulse", "ran with `voicekit mic --keep-embeddings`; this one cannot be refined"),
                         ("livekit:ws://localhost:7880", "`voicekit livekit` keeps no speaker embeddings")):
        store = MeetingStore(out / "meeting.sqlite")
        store.set_meta(source=source)
        store.close()
        assert main(["export", str(out), "--refine"]) == 2
        err = capsys.readouterr().err
        assert hint in err and "replay" not in err, err
    # refined at replay, embeddings not kept: the stored refinement is exported; a count needs a replay
    refined = tmp_path / "r"
    assert main(["replay", str(eval_file("test").audio), "--out", str(refined), "--refine", "--quiet"]) == 0
    assert main(["export", str(refined), "--refine"]) == 0
    capsys.readouterr()
    assert main(["export", str(refined), "--refine", "--num-speakers", "2"]) == 2
    assert ("replayed again with --overwrite --refine --num-speakers N (add --keep-embeddings"
            in capsys.readouterr().err)
    # the same store as a mic meeting whose embeddings were dropped: no recording to replay (a trial)
    store = MeetingStore(refined / "meeting.sqlite")
    store.set_meta(source="mic:pulse")
    store.close()
    assert main(["export", str(refined), "--refine", "--num-speakers", "2"]) == 2
    err = capsys.readouterr().err
    assert "a live meeting's embeddings, once dropped, are gone" in err and "replay" not in err, err


def test_a_speaker_name_that_matches_no_speaker_is_reported(tmp_path, capsys):
    out = tmp_path / "m"
    assert main(["replay", str(eval_file("test").audio), "--out", str(out), "--quiet",
                 "--speaker-names", "Speaker A=Ana,Speaker Z=Zed"]) == 0
    err = capsys.readouterr().err
    assert "Speaker Z matched no speaker of this meeting" in err and "Speaker A matched" not in err
    # no embeddings kept: the way to find that speaker later is another run, not an export that would fail
    assert ("replay again with --overwrite --num-speakers N and the same --speaker-names, or add "
            "--keep-embeddings") in err, err
    assert json.loads((out / "test.json").read_text())["turns"][0]["name"] == "Ana"


@pytest.fixture(scope="module")
def named_refined(tmp_path_factory):
    """The sample refined, two labels named: "Speaker B" only refinement finds (live: one speaker)."""
    out = tmp_path_factory.mktemp("named")
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["replay", str(SAMPLE), "--out", str(out), "--refine", "--quiet",
                     "--speaker-names", "Speaker B=Sheila,Speaker Z=Zed"]) == 0
    return out, err.getvalue()


def test_the_refined_view_keeps_every_word_and_joins_one_speakers_touching_pieces(named_refined):
    """The refined turns hold the live words in order, and no two neighbours of continuous speech
    (under CONTINUOUS_GAP apart) carry the same speaker and name: those are one turn."""
    out, _ = named_refined
    store = MeetingStore(out / "meeting.sqlite")
    live, refined = store.turns(), store.turns(refined=True)
    store.close()
    assert [(w.start, w.text) for t in refined for w in t.words] == [(w.start, w.text) for t in live for w in t.words]
    touching = [(a.end, a.speaker) for a, b in zip(refined, refined[1:])
                if b.start - a.end < CONTINUOUS_GAP and (a.speaker, a.sender_name) == (b.speaker, b.sender_name)]
    assert touching == []


def test_a_name_for_a_label_only_refinement_found_is_not_reported_unmatched(named_refined):
    out, err = named_refined
    store = MeetingStore(out / "meeting.sqlite")
    live, refined = {t.speaker for t in store.turns()}, {t.speaker for t in store.turns(refined=True)}
    store.close()
    print(f"live {sorted(live)}, refined {sorted(refined)}; {err}")
    assert "Speaker B" in refined
    assert "--speaker-names: Speaker Z matched no speaker of this meeting (its speakers, live and refined: " in err
    assert "Speaker B matched" not in err and "Speaker B, Speaker Z matched" not in err
    doc = json.loads((out / "sample.refined.json").read_text())
    assert {t["name"] for t in doc["turns"] if t["speaker"] == "Speaker B"} == {"Sheila"}
    # the refinement summary names a named speaker as the outputs do, and a moved turn by its
    # start as the transcript shows it (it said "#2 Speaker A → …": a store id the user never sees)
    moved = re.findall(r"the turn at (\d\d:\d\d:\d\d\.\d) Speaker A → Speaker B \(Sheila\)", err)
    live_lines = (out / "sample.txt").read_text(encoding="utf-8")
    assert moved and all(f"[{m} → " in live_lines for m in moved), (moved, err)


def test_overwrite_removes_the_replaced_meetings_outputs_and_nothing_else(named_refined, tmp_path):
    out = tmp_path / "m"
    shutil.copytree(named_refined[0], out)
    mine = {"notes.txt": "my notes", "sample.notes.md": "mine too", "other.json": "{}"}
    for name, text in mine.items():
        (out / name).write_text(text)
    assert (out / "sample.refined.json").is_file()
    # the replaced meeting's local session log (--session local) goes too: a new meeting's log
    # must not start with the old meeting's events
    (out / "session.jsonl").write_text('{"type": "session.started"}\n')
    assert main(["replay", str(SAMPLE), "--out", str(out), "--quiet", "--overwrite"]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted([*mine, "meeting.sqlite", *(f"sample.{ext}" for ext in FORMATS)]), names
    assert all((out / name).read_text() == text for name, text in mine.items())
    store = MeetingStore(out / "meeting.sqlite")
    assert not store.has_refined() and store.speaker_names() == {}
    store.close()


def test_a_new_meeting_never_writes_over_a_users_file_of_its_output_names(tmp_path, capsys):
    """A trial: `replay dev00.wav --out mynotes --stem standup` replaced the user's own
    mynotes/standup.txt with the transcript, without a word (a foreign meeting.sqlite was
    protected, the files beside it were not). Refused unless --overwrite; a meeting of no turns
    may write its own outputs again."""
    falcon = eval_file("test").audio
    out = tmp_path / "mynotes"
    out.mkdir()
    (out / "standup.txt").write_text("Minutes I typed by hand\n", encoding="utf-8")
    assert main(["replay", str(falcon), "--out", str(out), "--stem", "standup", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{out} holds standup.txt, which this meeting would write over and no meeting there wrote: pass " \
           "--overwrite to replace it, or choose another --out or --stem" in err
    assert sorted(p.name for p in out.iterdir()) == ["standup.txt"]
    assert (out / "standup.txt").read_text(encoding="utf-8") == "Minutes I typed by hand\n"
    assert main(["replay", str(falcon), "--out", str(out), "--stem", "minutes", "--quiet"]) == 0
    assert (out / "standup.txt").read_text(encoding="utf-8") == "Minutes I typed by hand\n"
    # a meeting that committed no turns wrote its outputs, and may write them again
    silent = tmp_path / "silence.wav"
    import numpy as np
    import soundfile as sf
    sf.write(silent, np.zeros(16000 * 3, dtype=np.float32), 16000)
    quiet = tmp_path / "quiet"
    assert main(["replay", str(silent), "--out", str(quiet), "--quiet"]) == 0
    assert main(["replay", str(silent), "--out", str(quiet), "--quiet"]) == 0
    assert main(["replay", str(falcon), "--out", str(quiet), "--stem", "silence", "--quiet",
                 "--overwrite"]) == 0


def test_replay_never_appends_to_a_meeting(named_refined, capsys):
    # a replay is never resumed: another recording's times would restart at 0 s and its speakers at
    # Speaker A, the same recording's turns would be stored twice
    out = named_refined[0]
    before = (out / "meeting.sqlite").read_bytes()
    with pytest.raises(SystemExit) as exit_:
        main(["replay", str(eval_file("test").audio), "--out", str(out), "--append"])
    assert exit_.value.code == 2 and "unrecognized arguments: --append (--append goes on with a live meeting: " \
        "voicekit mic|livekit --append; a replay always starts a meeting of its own" in capsys.readouterr().err
    assert (out / "meeting.sqlite").read_bytes() == before
    # a long-recordings trial: two recordings read as an unknown option
    with pytest.raises(SystemExit) as exit_:
        main(["replay", str(eval_file("test").audio), "second take.wav", "--out", str(out)])
    assert exit_.value.code == 2 and "unrecognized arguments: second take.wav (a replay hears one recording: run " \
        "voicekit replay once per file, each into its own --out;" in capsys.readouterr().err
    assert (out / "meeting.sqlite").read_bytes() == before


def test_subtitle_cues_of_overlapping_channels_never_go_back_in_time(tmp_path):
    """faster-whisper's stereo_diarization.wav, one person per channel, talking at once: the left
    channel's first turn is cut into two cues and the right channel's turn starts between them.
    The cues used to be written turn by turn (0.1 s, 2.8 s, then 0.2 s): SRT and WebVTT players
    expect start times that never go backwards."""
    stereo = EVAL / "faster_whisper" / "stereo_diarization.wav"
    assert main(["replay", str(stereo), "--out", str(tmp_path), "--per-channel", "--quiet"]) == 0

    def starts(path):
        return [int(h) * 3600 + int(m) * 60 + int(sec) + int(ms) / 1000
                for h, m, sec, ms in re.findall(r"^(\d\d):(\d\d):(\d\d)[,.](\d\d\d) -->", path.read_text(), re.M)]

    srt = starts(tmp_path / "stereo_diarization.srt")
    vtt = starts(tmp_path / "stereo_diarization.vtt")
    doc = json.loads((tmp_path / "stereo_diarization.json").read_text())
    print(srt, vtt, [(t["speaker"], t["start"], t["end"]) for t in doc["turns"]])
    assert len({t["speaker"] for t in doc["turns"]}) == 2 and len(srt) == len(vtt) >= 3
    assert srt == sorted(srt) and vtt == sorted(vtt)
    assert srt == pytest.approx(vtt, abs=1e-3)


def test_a_redacting_hook_is_honoured_in_the_refined_files_too(tmp_path):
    """A hook that edits the text (here, redacts a place) must not be undone by refinement, which
    labels Whisper's words: the edited turns stay whole in the refined files."""
    hook = tmp_path / "redact.py"
    hook.write_text("def on_transcription(turn):\n"
                    "    return turn.replace(text=turn.text.replace('Jersey', '[place]'))\n", encoding="utf-8")
    out = tmp_path / "m"
    assert main(["replay", str(SAMPLE), "--out", str(out), "--refine", "--quiet", "--hook", str(hook)]) == 0
    live, refined = (out / "sample.txt").read_text(), (out / "sample.refined.txt").read_text()
    print(refined)
    assert live.count("[place]") == refined.count("[place]") >= 2
    assert "Jersey" not in live + refined + (out / "sample.refined.srt").read_text()


def test_a_dumb_terminal_gets_plain_lines_and_progress_lines_not_a_bar(tmp_path):
    """A screen-reader trial: on a terminal `replay --quiet` redrew its bar ten times a second
    (carriage returns, cursor and colour codes, box-drawing characters), and with TERM=dumb, a
    screen reader's plain mode, it printed no progress at all. On a TERM=dumb terminal the lines
    are plain text and the progress is the log's line every 300 s of audio; warnings say so."""
    import pty
    import select

    import numpy as np
    import soundfile as sf

    silence = tmp_path / "eleven minutes.wav"
    sf.write(silence, np.zeros(660 * 16000, np.float32), 16000)
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "voicekit", "replay", str(silence), "--out", str(tmp_path / "out"),
                             "--quiet", "--speaker-names", "Speaker Z=Zoe"], stdout=subprocess.DEVNULL,
                            stderr=slave, env={**os.environ, "TERM": "dumb", "COLUMNS": "80"})
    os.close(slave)
    got = b""
    while True:
        ready, _, _ = select.select([master], [], [], 120)
        assert ready, "no output in 120 s"
        try:
            chunk = os.read(master, 4096)
        except OSError:   # the child closed its side (EIO on Linux)
            break
        if not chunk:
            break
        got += chunk
    os.close(master)
    assert proc.wait(60) == 0, got
    assert b"\x1b" not in got and b"\r\r" not in got, got   # the pty writes "\r\n" for each line
    lines = got.decode().splitlines()
    assert any(re.fullmatch(r"heard 0:05:00 of 0:11:00 \(45%\) in 0:00:\d\d, about 0:00:\d\d left", line)
               for line in lines), lines
    assert any(line.startswith("warning: --speaker-names: Speaker Z matched no speaker of this meeting")
               for line in lines), lines


def test_a_quiet_replay_into_a_log_says_how_far_it_is_every_five_minutes_of_audio(tmp_path, capsys):
    """A long-recordings trial: `replay --quiet` with stderr in a file (nohup, cron) printed nothing
    until its end, 6 minutes for a 74-minute recording. Off a terminal, a line every 300 s of
    audio says what was heard and about how long is left."""
    import numpy as np
    import soundfile as sf

    silence = tmp_path / "eleven minutes.wav"
    sf.write(silence, np.zeros(660 * 16000, np.float32), 16000)
    assert main(["replay", str(silence), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    lines = capsys.readouterr().err.splitlines()
    heard = [line for line in lines if line.startswith("heard ")]
    assert len(heard) == 2, lines
    assert re.fullmatch(r"heard 0:05:00 of 0:11:00 \(45%\) in 0:00:\d\d, about 0:00:\d\d left", heard[0]), heard
    assert re.fullmatch(r"heard 0:10:00 of 0:11:00 \(91%\) in 0:00:\d\d, about 0:00:\d\d left", heard[1]), heard
