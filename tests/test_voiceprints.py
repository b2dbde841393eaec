"""Known voices (voiceprints): enrolment, identification, the library, and the pipeline wiring.

Real audio: the AMI debug files dev00 and dev01 share two speakers (MEE009, MEE012; AMI
participant ids in debug.development.rttm); trn06 (FEE083) and trn03 (MÉO069) give other voices
for the library. Speech of one speaker is cut with the reference RTTM.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np
import pytest

from _pipeline_support import EVAL, components, eval_file, needs_eval
from voicekit.audio import SAMPLE_RATE, load_audio
from voicekit.diarization.online import SpeakerState
from voicekit.voiceprints import (
    MATCH_THRESHOLD,
    MIN_ENROL_SECONDS,
    MIN_EVIDENCE_SECONDS,
    VoiceIdentifier,
    VoiceLibrary,
    VoiceprintError,
    best_match,
    embed_speech,
    enrol_named_speakers,
)

pytestmark = needs_eval


def reference_segments(file_id: str, speaker: str) -> list[tuple[float, float]]:
    f = eval_file(file_id)
    out = []
    for line in f.rttm.read_text(encoding="utf-8").splitlines():
        p = line.split()
        if len(p) >= 8 and p[1] == file_id and p[7] == speaker:
            out.append((float(p[3]), float(p[3]) + float(p[4])))
    return out


@functools.lru_cache(maxsize=None)
def speech_of(file_id: str, speaker: str) -> tuple[np.ndarray, float]:
    """The voiceprint vector and seconds of one reference speaker's speech in one file."""
    audio = load_audio(eval_file(file_id).audio)
    parts = [audio[int(s * SAMPLE_RATE):int(e * SAMPLE_RATE)] for s, e in reference_segments(file_id, speaker)]
    return embed_speech(np.concatenate(parts), components().encoder)


@pytest.fixture
def library(tmp_path):
    lib = VoiceLibrary(tmp_path / "voices.sqlite")
    for name, (fid, spk) in {"Marcus": ("dev00", "MEE009"), "Fiona": ("trn06", "FEE083"),
                             "Olivier": ("trn03", "MÉO069")}.items():
        lib.enrol(name, *speech_of(fid, spk))
    yield lib
    lib.close()


def test_enrol_then_identify_in_another_file(library):
    # MEE009 enrolled from dev00 is named in dev01; MEE012 (never enrolled) is named nobody
    vector, seconds = speech_of("dev01", "MEE009")
    voice, sim = best_match(vector, library.voices())
    print(f"MEE009 dev00 -> dev01: similarity {sim:.3f} over {seconds:.1f} s")
    assert voice is not None and voice.name == "Marcus"
    assert sim == pytest.approx(0.961, abs=0.01)
    impostor, _ = speech_of("dev01", "MEE012")
    voice, sim = best_match(impostor, library.voices())
    print(f"MEE012 (not enrolled) in dev01: best similarity {sim:.3f}")
    assert voice is None
    assert sim == pytest.approx(0.862, abs=0.01)
    assert sim < MATCH_THRESHOLD


def test_too_short_enrolment_is_refused(tmp_path):
    # MEE012 speaks only 6 s (VAD windows) in dev00: below the 8 s a voiceprint needs
    vector, seconds = speech_of("dev00", "MEE012")
    assert seconds == pytest.approx(6.0, abs=0.5)
    with VoiceLibrary(tmp_path / "v.sqlite") as lib:
        with pytest.raises(VoiceprintError, match=rf"at least {MIN_ENROL_SECONDS:g} s"):
            lib.enrol("Mel", vector, seconds)
        assert lib.voices() == []
        # the same refusal when a meeting's named speaker has too little speech
        short = SpeakerState("Speaker B", vector.astype(np.float64) * seconds, seconds)
        [outcome] = enrol_named_speakers(lib, [short], {"Speaker B": "Mel"})
        assert outcome.enrolled is None and "too little" in outcome.reason
        assert lib.voices() == []


def test_labels_named_alike_in_case_are_pooled_as_the_library_counts_names(tmp_path):
    """A trial: "Speaker B=Fiona,Speaker C=fiona" enrolled Fiona from B alone and refused "fiona"
    for too little speech, though the library takes the two names for one voice."""
    vector, seconds = speech_of("dev00", "MEE012")   # 6 s: too little alone, enough twice
    halves = [SpeakerState(label, vector.astype(np.float64) * seconds, seconds) for label in ("Speaker B", "Speaker C")]
    with VoiceLibrary(tmp_path / "v.sqlite") as lib:
        [outcome] = enrol_named_speakers(lib, halves, {"Speaker B": "Fiona", "Speaker C": "fiona"})
        assert (outcome.name, outcome.labels, outcome.reason) == ("Fiona", ("Speaker B", "Speaker C"), "")
        assert outcome.seconds == pytest.approx(2 * seconds, abs=0.01)
        assert [v.name for v in lib.voices()] == ["Fiona"]


def test_cli_enrol_refusals_name_the_problem_and_make_no_library(tmp_path, capsys):
    from voicekit.cli import main

    jfk = EVAL / "faster_whisper" / "jfk.flac"
    path = tmp_path / "voices.sqlite"
    assert main(["voices", "enrol", "Jack", str(jfk), "--start", "5", "--end", "2", "--library", str(path)]) == 2
    assert "--end 2 is not after --start 5" in capsys.readouterr().err
    # 11 s of JFK holds about 7 s of speech windows: too little, and no (empty) library file is left
    assert main(["voices", "enrol", "Jack", str(jfk), "--library", str(path)]) == 2
    assert f"at least {MIN_ENROL_SECONDS:g} s of their speech is needed" in capsys.readouterr().err
    # an --end past the recording (11.0 s) means its end: the same refusal, for too little speech
    assert main(["voices", "enrol", "Jack", str(jfk), "--start", "0", "--end", "12", "--library", str(path)]) == 2
    assert f"at least {MIN_ENROL_SECONDS:g} s of their speech is needed" in capsys.readouterr().err
    assert main(["voices", "enrol", "Jack", str(jfk), "--start", "12", "--library", str(path)]) == 2
    assert "--start must lie inside the recording (0 to 11.000 s), got 12" in capsys.readouterr().err
    assert main(["voices", "enrol", " ", str(jfk), "--library", str(path)]) == 2
    assert "a voice needs a name" in capsys.readouterr().err
    assert not path.exists()


def test_cli_enrol_says_what_was_kept_and_how_to_remove_it(tmp_path, capsys):
    """A trial: the enrol output named neither consent nor how to delete the voice (only --help did)."""
    from voicekit.cli import main
    path = tmp_path / "voices.sqlite"
    assert main(["voices", "enrol", "Fiona", str(EVAL / "ami_debug" / "trn06.wav"), "--library", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("enrolled the voice of Fiona (") and out[0].endswith(f"s in all) in {path}")
    # another trial: the commands it named left --library out, so they looked at the default library
    assert out[1] == ("a voiceprint is biometric data, kept with the person's consent only: `voicekit voices list "
                      f"--library {path}` shows the library, `voicekit voices delete NAME --library {path}` removes "
                      "a voice for good")
    assert main(["voices", "delete", "Nobody", "--library", str(path)]) == 2
    assert capsys.readouterr().err.strip().endswith(f"see voicekit voices list --library {path}")


def test_cli_enrol_from_a_truncated_recording_says_so(tmp_path, capsys):
    """A recording cut off mid-file (its WAV header declares 18.6 s, 9.3 s are there) was enrolled
    from silently; a --start/--end past the cut then looked like the user's mistake."""
    from voicekit.cli import main

    data = (EVAL / "picovoice_falcon" / "test.wav").read_bytes()
    cut = tmp_path / "cut.wav"
    cut.write_bytes(data[: len(data) // 2])
    path = tmp_path / "voices.sqlite"
    assert main(["voices", "enrol", "Jack", str(cut), "--library", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"warning: {cut} is truncated: only its first 9.3 s of 18.6 s can be used" in err
    assert "too little for a voiceprint" in err and not path.exists()


def test_list_and_delete_really_remove(library, tmp_path):
    names = [v.name for v in library.voices()]
    assert names == ["Fiona", "Marcus", "Olivier"]
    marcus = library.get("Marcus").vector.astype("<f4").tobytes()
    assert marcus in (tmp_path / "voices.sqlite").read_bytes()
    assert library.delete("Marcus") == "Marcus"
    assert library.delete("Marcus") is None
    assert [v.name for v in library.voices()] == ["Fiona", "Olivier"]
    # the bytes of the deleted voiceprint are gone from the file, not just unlinked
    assert marcus not in (tmp_path / "voices.sqlite").read_bytes()
    assert library.delete_all() == 2
    assert library.voices() == []
    assert library.conn.execute("SELECT COUNT(*) FROM voiceprint").fetchone()[0] == 0


def test_cli_list_and_delete(library, tmp_path, capsys):
    from voicekit.cli import main

    path = str(tmp_path / "voices.sqlite")
    library.close()
    assert main(["voices", "list", "--library", path]) == 0
    out = capsys.readouterr().out
    assert "3 voices" in out and "Marcus" in out
    assert main(["voices", "delete", "marcus", "--library", path]) == 0
    out = capsys.readouterr().out
    assert f"deleted the voice of Marcus from {path}" in out  # as enrolled, not as typed
    # a privacy trial: what the delete leaves, in the meetings, is said where it is done
    assert "keep the name" in out and "voicekit export OUT --drop-embeddings" in out
    assert main(["voices", "delete", "Marcus", "--library", path]) == 2
    assert "no voice named 'Marcus'" in capsys.readouterr().err
    assert main(["voices", "delete", "--all", "--library", path]) == 0
    assert "deleted 2 voices" in capsys.readouterr().out
    with VoiceLibrary(path) as lib:
        assert lib.voices() == []
    # a new-user trial: `replay --voices` with the emptied library said nothing of it
    assert main(["replay", str(EVAL / "faster_whisper" / "jfk.flac"), "--out", str(tmp_path / "out"), "--quiet",
                 "--voices", path]) == 0
    assert f"warning: --voices: the voice library {path} holds no voice" in capsys.readouterr().err
    # deleting every voice where there is no library is done, not an error (a privacy script run
    # on every machine); a name there is an error: a misspelt name never passes for deleted
    missing = str(tmp_path / "none.sqlite")
    assert main(["voices", "delete", "--all", "--library", missing]) == 0
    assert f"no voice library at {missing}: nothing to delete" in capsys.readouterr().out
    assert main(["voices", "delete", "Marcus", "--library", missing]) == 2
    assert "so no voice named 'Marcus'" in capsys.readouterr().err


def test_the_us_spelling_of_enrol_is_taken():
    """A new-user trial: `voices enroll` and `--enroll-voices` were refused as unknown."""
    from voicekit.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["voices", "enroll", "Ben", "ben.wav"]).action == "enrol"
    assert parser.parse_args(["replay", "m.wav", "--enroll-voices"]).enrol_voices is True


def test_identifier_waits_for_evidence_and_keeps_a_name(library):
    vector, _ = speech_of("dev01", "MEE009")
    other, _ = speech_of("dev01", "MEE012")
    ident = VoiceIdentifier(library.voices())
    a = SpeakerState("Speaker A", vector.astype(np.float64), MIN_EVIDENCE_SECONDS - 0.5)
    b = SpeakerState("Speaker B", other.astype(np.float64), 10.0)
    assert ident.update([a, b]) == []          # A has too little speech yet; B matches nobody
    a.seconds = MIN_EVIDENCE_SECONDS
    [m] = ident.update([a, b])
    assert (m.label, m.voice.name) == ("Speaker A", "Marcus")
    # a name once given stays, and a voice names one label only: a second label with Marcus's
    # voice is not named
    a.total = other.astype(np.float64)
    c = SpeakerState("Speaker C", vector.astype(np.float64), 10.0)
    assert ident.update([a, b, c]) == []
    assert ident.matches["Speaker A"].voice.name == "Marcus" and "Speaker C" not in ident.matches
    assert [p.id for p in ident.participants] == ["voice:Marcus"]


def test_of_two_speakers_alike_one_voice_the_closer_is_named(library):
    """A voiceprint review: in one update the first speaker listed took the voice, however much
    closer the second was (an impostor at 0.88 named Diane; Diane at 0.99 never named after)."""
    from voicekit.voiceprints import similarities

    marcus = next(v for v in library.voices() if v.name == "Marcus")
    own, _ = speech_of("dev01", "MEE009")               # Marcus in another recording
    rng = np.random.default_rng(0)
    near = marcus.vector + 0.45 * rng.standard_normal(marcus.vector.shape) / np.sqrt(marcus.vector.size)
    near /= np.linalg.norm(near)                        # a voice less alike him, still past the threshold
    s_own, s_near = similarities(own, [marcus])[0], similarities(near, [marcus])[0]
    assert MATCH_THRESHOLD <= s_near < s_own, (s_near, s_own)
    ident = VoiceIdentifier(library.voices())
    a = SpeakerState("Speaker A", near.astype(np.float64), 10.0)
    b = SpeakerState("Speaker B", own.astype(np.float64), 10.0)
    [m] = ident.update([a, b])
    assert (m.label, m.voice.name) == ("Speaker B", "Marcus")


def _enrol_at_once(path, name, seed, barrier):
    lib = VoiceLibrary(path)
    barrier.wait()
    lib.enrol(name, np.random.default_rng(seed).standard_normal(256) * 0.01 + np.ones(256), 20.0)
    lib.close()


def test_two_meetings_enrolling_one_voice_at_once_merge_it(tmp_path):
    """A voiceprint review: the enrolment read the voice and wrote it back in two steps; two
    processes enrolling "Carla" and "carla" at once left both rows (24 of 30 trials), so that
    deleting one left a voice that still named speakers. Now one transaction: one voice, both
    meetings' speech."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    for trial in range(3):
        path = tmp_path / f"v{trial}.sqlite"
        VoiceLibrary(path).close()
        barrier = ctx.Barrier(2)
        procs = [ctx.Process(target=_enrol_at_once, args=(path, name, seed, barrier))
                 for seed, name in enumerate(("Carla", "carla"))]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        assert [p.exitcode for p in procs] == [0, 0]
        lib = VoiceLibrary(path)
        [voice] = lib.voices()
        assert voice.seconds == 40.0 and voice.meetings == 2, voice
        lib.close()


def test_a_name_that_reads_like_an_enrolled_one_is_refused_and_wal_is_not_kept(tmp_path):
    """A voiceprint review: "Anna" and a Cyrillic "Аnna" were two voices; `voices delete Anna`
    deleted one and `voices list` still showed "Anna". And a library another tool had set to WAL
    kept a deleted voiceprint's bytes in its log."""
    import sqlite3

    path = tmp_path / "v.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
    lib = VoiceLibrary(path)
    assert lib.conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    rng = np.random.default_rng(0)
    lib.enrol("Anna", rng.standard_normal(256), 20.0)
    with pytest.raises(VoiceprintError, match="'\u0410nna' reads like the enrolled 'Anna' \\(look-alike letters\\)"):
        lib.enrol("\u0410nna", rng.standard_normal(256), 20.0)
    lib.enrol("Ian", rng.standard_normal(256), 20.0)
    lib.enrol("Lan", rng.standard_normal(256), 20.0)     # two names that only look alike in some fonts
    assert sorted(v.name for v in lib.voices()) == ["Anna", "Ian", "Lan"]
    lib.close()


def test_a_voice_whose_name_the_user_gave_another_label_names_no_one(library, caplog):
    """A trial: `replay trn09.wav --voices --speaker-names "Speaker A=Fay"` with Fay enrolled: the
    library named Speaker B "Fay" too, and every output showed two people as one Fay. A voice of
    a name given to another label (NFC, case-folded, as voice names compare) names no one, the
    speaker is not named by a lesser match, and a warning says so, once."""
    vector, _ = speech_of("dev01", "MEE009")   # Marcus's voice
    ident = VoiceIdentifier(library.voices())
    b = SpeakerState("Speaker B", vector.astype(np.float64), 10.0)
    for _ in range(2):
        assert ident.update([b], named={"Speaker A": "MARCUS"}) == []
    assert ident.matches == {}
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1 and warned[0].startswith("Speaker B sounds like Marcus of the voice library (similarity 0.9")
    assert warned[0].endswith("a name given to Speaker A: Speaker B is not named Marcus (check which label is Marcus)")
    # the user's own label is never named, and another name leaves the voice free
    assert ident.update([SpeakerState("Speaker A", vector.astype(np.float64), 10.0)], named={"Speaker A": "Diane"}) == []
    [m] = ident.update([b], named={"Speaker A": "Diane"})
    assert (m.label, m.voice.name) == ("Speaker B", "Marcus")


def _overlap(turn, segments) -> float:
    return sum(max(0.0, min(turn.end, e) - max(turn.start, s)) for s, e in segments)


def test_pipeline_names_a_known_voice_as_a_registered_participant(library, tmp_path):
    from voicekit.pipeline import Pipeline
    from voicekit.sources import FileSource
    from voicekit.store import MeetingStore

    store = MeetingStore(tmp_path / "meeting.sqlite")
    pipe = Pipeline(components=components(), store=store, voices=VoiceIdentifier(library.voices()))
    result = pipe.run(FileSource(eval_file("dev01").audio))
    matches = pipe.voices.matches
    print({k: (m.voice.name, m.similarity, m.seconds) for k, m in matches.items()})
    assert [m.voice.name for m in matches.values()] == ["Marcus"]
    [(label, match)] = matches.items()
    assert match.similarity >= MATCH_THRESHOLD and match.seconds >= MIN_EVIDENCE_SECONDS
    named = [t for t in result.turns if t.sender_name == "Marcus"]
    assert named and all(t.speaker == label for t in named)
    assert all(t.metadata["identity_id"] == "voice:Marcus" for t in named)
    # the label the library named is MEE009 in the reference
    ref = {spk: reference_segments("dev01", spk) for spk in ("MEE009", "MEE012")}
    own = sum(_overlap(t, ref["MEE009"]) for t in named)
    other = sum(_overlap(t, ref["MEE012"]) for t in named)
    print(f"turns named Marcus: {own:.1f} s on MEE009, {other:.1f} s on MEE012")
    assert own > 2 * other
    # stored with the name, attributed to the voice's registered participant (A4, A11)
    stored = [t for t in store.turns() if t.sender_name == "Marcus"]
    assert len(stored) == len(named)
    labels = store.labels(stored, pipe.voices.participants)
    assert {(lab.name, lab.rank) for lab in labels} == {("Marcus", None)}
    registered = store.conn.execute("SELECT DISTINCT registered FROM author_register r JOIN turn_attribution t "
                                    "ON t.source_digest = r.source_digest WHERE t.name = 'Marcus'").fetchall()
    assert registered == [(1,)]
    assert pipe.speaker_names()[label] == "Marcus"
    # the label's first turns went out before the evidence named it; the JSON speakers list gives
    # the name it was given, not the first one
    from voicekit.outputs import to_json

    first = next(t for t in store.turns() if t.speaker == label)
    assert first.sender_name == label
    assert {s["label"]: s["name"] for s in to_json(store.turns())["speakers"]}[label] == "Marcus"
    store.close()


def test_user_name_wins_then_enrolment_names_the_voice_next_meeting(library, tmp_path):
    from voicekit.hooks import HookRunner
    from voicekit.pipeline import Pipeline
    from voicekit.sources import FileSource

    # the user names Speaker A (whom the library would call Marcus): the user's name wins
    hooks = HookRunner()
    hooks.set_names({"Speaker A": "Diane"})
    pipe = Pipeline(components=components(), hooks=hooks, voices=VoiceIdentifier(library.voices()))
    result = pipe.run(FileSource(eval_file("dev01").audio))
    assert pipe.voices.matches == {}
    a_turns = [t for t in result.turns if t.speaker == "Speaker A"]
    assert a_turns and all(t.sender_name == "Diane" and "identity_id" not in t.metadata for t in a_turns)
    # --enrol-voices at the end: Diane's voice is stored from Speaker A's centroid and seconds
    speaker_a = pipe.diarizer.speakers[0]
    with VoiceLibrary(tmp_path / "new.sqlite") as lib:
        outcomes = enrol_named_speakers(lib, pipe.diarizer.speakers, hooks.names, skip=pipe.voices.matches)
        print([(o.name, o.labels, o.seconds, o.reason) for o in outcomes])
        assert [(o.name, o.labels) for o in outcomes] == [("Diane", ("Speaker A",))]
        assert outcomes[0].seconds == pytest.approx(speaker_a.seconds, abs=0.01)
        assert outcomes[0].seconds >= MIN_ENROL_SECONDS and outcomes[0].enrolled is not None
        assert not outcomes[0].repeated
        # the same meeting enrolled again (a replay run again): recognised, nothing added
        [again] = enrol_named_speakers(lib, pipe.diarizer.speakers, hooks.names, skip=pipe.voices.matches)
        assert again.repeated and (again.enrolled.meetings, again.enrolled.seconds) == (1, outcomes[0].enrolled.seconds)
        # next meeting (dev00): MEE009's speech is named Diane
        voice, sim = best_match(speech_of("dev00", "MEE009")[0], lib.voices())
        print(f"Diane enrolled from dev01 Speaker A -> dev00 MEE009: similarity {sim:.3f}")
        assert voice is not None and voice.name == "Diane"
        assert sim == pytest.approx(0.954, abs=0.015)
    hooks.close()


def test_cli_replay_says_which_speakers_the_library_named(library, tmp_path, capsys):
    """A trial: `replay --voices` named a speaker from the library, and only --debug showed it
    or the similarity the docs ask the user to check; the end of the replay says it in one line."""
    from voicekit.cli import main

    out = tmp_path / "out"
    assert main(["replay", str(eval_file("dev01").audio), "--voices", str(library.path), "--out",
                 str(out), "--quiet"]) == 0
    line = next((x for x in capsys.readouterr().err.splitlines() if x.startswith("known voices: ")), None)
    print(line)
    match = re.fullmatch(r"known voices: Speaker A is Marcus \(similarity (0\.\d{3})\) \(a match needs 0\.875\); "
                         rf"read their lines: `voicekit export {re.escape(str(out))} --speaker-names "
                         r'"Speaker A=…"` corrects a wrong name', line or "")
    assert match and float(match.group(1)) >= MATCH_THRESHOLD, line


def test_cli_a_known_voice_a_hook_renames_is_said_so_and_enrolled_under_the_hooks_name(library, tmp_path, capsys):
    """A trial: `replay dev01 --voices --hook (renames to "Mark") --enrol-voices`: every line said
    Mark, but the end said "Speaker A is Marcus" and "no speaker was named; nothing enrolled"
    (exit 1): the library's match was skipped as the library's own naming. The hook named the
    speaker: the end line says so, and Mark is enrolled (with the library's warning that the voice
    matches Marcus's: one person under two names)."""
    from voicekit.cli import main

    hook = tmp_path / "mark.py"
    hook.write_text("from voicekit.hooks import HookResult\n\n"
                    "def on_transcription(turn):\n"
                    "    return HookResult.rename('Mark') if turn.sender_name == 'Marcus' else None\n")
    out = tmp_path / "out"
    rc = main(["replay", str(eval_file("dev01").audio), "--voices", str(library.path), "--out", str(out), "--quiet",
               "--hook", str(hook), "--enrol-voices"])
    err = capsys.readouterr().err
    print(err)
    assert re.search(r"known voices: Speaker A is Marcus \(similarity 0\.\d{3}\), then named Mark by a hook", err), err
    assert "no speaker was named" not in err
    assert re.search(r"enrolled the voice of Mark \(Speaker A, \d+\.\d s of speech\)", err), err
    assert rc == 0
    with VoiceLibrary(library.path) as lib:
        assert sorted(v.name for v in lib.voices()) == ["Fiona", "Marcus", "Mark", "Olivier"]


def test_cli_an_enrolment_that_did_not_happen_exits_1_with_the_outputs_written(tmp_path, capsys):
    """A trial: `replay --speaker-names "Speaker A=Jack" --enrol-voices` on jfk.flac (2.5 s of
    Speaker A's speech) said "not enrolled" and exited 0, so a script could not tell."""
    from voicekit.cli import main
    from voicekit.cli.voices import ENROL_FAILED

    out, lib = tmp_path / "out", tmp_path / "voices.sqlite"
    assert main(["replay", str(EVAL / "faster_whisper" / "jfk.flac"), "--out", str(out), "--quiet",
                 "--speaker-names", "Speaker A=Jack", "--enrol-voices", "--voices", str(lib)]) == 1
    err = capsys.readouterr().err
    assert re.search(r"not enrolled: Jack: \d\.\d s of speech is too little", err), err
    assert err.rstrip().endswith(ENROL_FAILED), err
    assert (out / "jfk.json").is_file()
    with VoiceLibrary(lib) as library:
        assert library.voices() == []


def test_a_resumed_meeting_names_a_known_voice_again_with_its_identity(library, tmp_path):
    """`mic --append --voices`: a label the library named in session 1 is named again in session 2
    by the library (with its identity: a registered participant, A11), not by copying the stored
    name as a plain rename (which made the same person a look-alike "Marcus 2" and freed his
    voice for another label)."""
    from test_diarization import _two_sessions

    store, r1, r2, resumed, t2, t_new, t_end = _two_sessions(tmp_path, keep=True, voices=library.voices())
    a = next(t.speaker for t in r1.turns if t.sender_name == "Marcus")
    assert "Marcus" not in resumed.hooks.names.values()
    assert resumed.voices.matches[a].voice.name == "Marcus"
    again = [t for t in r2.turns if t.speaker == a]
    assert again and all(t.sender_name == "Marcus" and t.metadata["identity_id"] == "voice:Marcus" for t in again)
    labels = store.labels([t for t in store.turns() if t.sender_name == "Marcus"], resumed.participants())
    assert {(lab.name, lab.rank) for lab in labels} == {("Marcus", None)}
    assert [m.voice.name for m in resumed.voices.matches.values()].count("Marcus") == 1


def test_a_known_voice_renamed_after_the_meeting_keeps_that_name_when_it_goes_on(library, tmp_path):
    """The library named Speaker A "Marcus" in session 1; the user knew better and ran `voicekit
    export OUT --speaker-names "Speaker A=Mark"`. In session 2 (`mic --append --voices`) the
    label keeps the user's name: the library does not name it "Marcus" again, and the turns do
    not claim Marcus's identity."""
    from test_diarization import _two_sessions

    store, r1, r2, resumed, *_ = _two_sessions(tmp_path, keep=True, voices=library.voices(),
                                               renamed={"Speaker A": "Mark"})
    assert {t.sender_name for t in r1.turns if t.speaker == "Speaker A"} >= {"Marcus"}
    again = [t for t in r2.turns if t.speaker == "Speaker A"]
    assert again and all(t.sender_name == "Mark" and "identity_id" not in t.metadata for t in again)
    assert "Speaker A" not in resumed.voices.matches and resumed.hooks.names["Speaker A"] == "Mark"
    assert {t.sender_name for t in store.turns(renamed=True) if t.speaker == "Speaker A"} == {"Mark"}


def test_a_name_is_one_voice_whatever_its_unicode_form_or_case(tmp_path):
    """"Zoë" typed precomposed (NFC) or decomposed (NFD), or in another case, is one voice: it
    used to be two rows, and `voices delete Zoë` removed one of them only."""
    lib = VoiceLibrary(tmp_path / "voices.sqlite")
    try:
        lib.enrol("Zo\u00eb", *speech_of("dev00", "MEE009"))
        lib.enrol("zoe\u0308", *speech_of("dev01", "MEE009"))  # NFD, lower case: the same name
        assert [(v.name, v.meetings) for v in lib.voices()] == [("Zo\u00eb", 2)]
        assert lib.delete("ZOE\u0308") == "Zo\u00eb" and lib.voices() == []
    finally:
        lib.close()


def test_the_same_speech_enrolled_twice_is_counted_once(tmp_path):
    """A user trial: a replay run again with --overwrite --enrol-voices merged the same speech into
    the voiceprint a second time ("27.0 s of speech, 2 enrolments" for 13.5 s). The voiceprint
    keeps a fingerprint of each enrolment; the same speech adds nothing, other speech merges, and a
    library written before the fingerprints were kept gains them at its next enrolment."""
    import sqlite3

    path = tmp_path / "voices.sqlite"
    first, second = speech_of("dev00", "MEE009"), speech_of("dev01", "MEE009")
    conn = sqlite3.connect(path)   # a library as voicekit wrote it before the sources column
    conn.execute("CREATE TABLE voiceprint (name TEXT PRIMARY KEY, vector BLOB NOT NULL, seconds REAL NOT NULL, "
                 "meetings INTEGER NOT NULL, created REAL NOT NULL, updated REAL NOT NULL)")
    conn.commit()
    conn.close()
    lib = VoiceLibrary(path)
    try:
        assert not lib.holds("Marcus", *first)
        lib.enrol("Marcus", *first)
        assert lib.holds("marcus", *first) and not lib.holds("Marcus", *second)
        again = lib.enrol("Marcus", *first)
        assert (again.meetings, again.seconds) == (1, pytest.approx(first[1]))
        both = lib.enrol("Marcus", *second)
        assert (both.meetings, both.seconds) == (2, pytest.approx(first[1] + second[1]))
        assert lib.enrol("Marcus", *first).meetings == 2 and lib.holds("Marcus", *second)
    finally:
        lib.close()


def test_enrolling_a_different_voice_under_a_known_name_is_refused(library):
    """Two people called Marcus (or the wrong speaker named Marcus) are not merged into one print
    that would match neither: the second enrolment is refused and names the way out."""
    before = library.get("Marcus")
    other, seconds = speech_of("tst00", "MEE071")  # another man, another meeting (cosine 0.82)
    with pytest.raises(VoiceprintError, match=r"does not match the voice enrolled as 'Marcus' \(similarity 0\.\d+"):
        library.enrol("Marcus", other, seconds)
    after = library.get("Marcus")
    assert after.meetings == before.meetings and np.array_equal(after.vector, before.vector)
    # the same person in another meeting (cosine 0.96) is merged
    library.enrol("Marcus", *speech_of("dev01", "MEE009"))
    assert library.get("Marcus").meetings == before.meetings + 1


def test_a_file_that_is_not_a_voice_library_is_refused_and_left_untouched(tmp_path):
    import sqlite3

    from voicekit.store import MeetingStore

    MeetingStore(tmp_path / "meeting.sqlite").close()
    tables = lambda: {r[0] for r in sqlite3.connect(tmp_path / "meeting.sqlite").execute(  # noqa: E731
        "SELECT name FROM sqlite_master WHERE type = 'table'")}
    before = tables()
    with pytest.raises(VoiceprintError, match="is another SQLite database .* not a voice library"):
        VoiceLibrary(tmp_path / "meeting.sqlite")
    assert tables() == before  # no voiceprint table written into a meeting store
    (tmp_path / "junk.sqlite").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(VoiceprintError, match="is not a voice library"):
        VoiceLibrary(tmp_path / "junk.sqlite")


RAW_ROW = ("INSERT INTO voiceprint (name, vector, seconds, meetings, created, updated) "
           "VALUES ('Diane', ?, 10, 1, 0, 0)")


def test_a_damaged_voiceprint_is_a_clear_error_and_can_be_deleted(tmp_path):
    lib = VoiceLibrary(tmp_path / "voices.sqlite")
    # 100 bytes (25 numbers, not 256), and 2 bytes, which is not a whole number of float32s (that
    # one was an internal error: "buffer size must be a multiple of element size")
    for blob in (b"\x00" * 100, b"\x00\x00"):
        lib.conn.execute(RAW_ROW, (blob,))
        with pytest.raises(VoiceprintError, match="damaged voiceprint for 'Diane'.*voicekit voices delete"):
            lib.voices()
        assert lib.delete("Diane") and lib.voices() == []
    # another name's damaged row does not stop a new enrolment (only its look-alike warning is skipped)
    lib.conn.execute(RAW_ROW, (b"abc",))
    assert lib.enrol("Carla", *speech_of("dev00", "MEE009")).name == "Carla"
    lib.close()


def test_a_damaged_or_read_only_library_is_a_clear_error_not_an_internal_one(tmp_path):
    """Found in a user trial: `voices delete` on a read-only library and `voices list` on a
    damaged file were "internal error: OperationalError…" / "DatabaseError…"."""
    import sqlite3

    vector, seconds = speech_of("dev00", "MEE009")
    path = tmp_path / "voices.sqlite"
    with VoiceLibrary(path) as lib:
        lib.enrol("Marcus", vector, seconds)
    lib = VoiceLibrary(path)
    lib.conn.close()
    lib.conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)   # read-only (root ignores chmod)
    with pytest.raises(VoiceprintError, match="cannot write the voice library .* it is read-only"):
        lib.delete("Marcus")
    with pytest.raises(VoiceprintError, match="read-only"):
        lib.enrol("Ann", -vector, seconds)
    lib.close()
    with VoiceLibrary(path) as lib:
        assert [v.name for v in lib.voices()] == ["Marcus"]   # nothing lost
    data = bytearray(path.read_bytes())
    data[4196:7196] = b"\xff" * 3000   # the pages after the header
    path.write_bytes(bytes(data))
    with pytest.raises(VoiceprintError, match="is damaged .* move it aside and enrol the voices again"):
        VoiceLibrary(path).voices()
    with pytest.raises(VoiceprintError, match="is a folder: give the library's file"):
        VoiceLibrary(tmp_path)


def test_voice_names_are_one_line_and_never_a_diarization_label(tmp_path, caplog):
    """A name with terminal escapes was stored and echoed raw, "Speaker B" merged two people in
    the outputs, a 5000-character name was accepted (a user trial); and the same voice enrolled
    under a second name is worth a warning (which of the two names a meeting gets is chance)."""
    import logging

    vector, seconds = speech_of("dev00", "MEE009")
    with VoiceLibrary(tmp_path / "voices.sqlite") as lib:
        assert lib.enrol("Bell\a\x1b[31mRED\u200b", vector, seconds).name == "Bell [31mRED"
        for bad, said in (("Speaker B", "reads as a diarization label"), ("Sp\u0435aker B", "diarization label"),
                          ("A" * 101, "at most 100 characters"), (" \u200b ", "needs a name")):
            with pytest.raises(VoiceprintError, match=said):
                lib.enrol(bad, vector, seconds)
        with caplog.at_level(logging.WARNING, logger="voicekit.voiceprints"):
            lib.enrol("Marcus", vector, seconds)
        assert "matches the voice already enrolled as 'Bell [31mRED' (similarity 1.000" in caplog.text
        assert [v.name for v in lib.voices()] == ["Bell [31mRED", "Marcus"]


@pytest.mark.parametrize("vector, seconds, said", [
    (np.ones((16, 16), np.float32), 10.0, r"a voiceprint is a \(256,\) vector; got shape \(16, 16\)"),
    (np.full(256, np.nan, np.float32), 10.0, "a voiceprint is a finite vector; this one holds 256 NaN or infinite"),
    (np.ones(256, np.float32), float("inf"), "Diane: the seconds of speech must be a finite number, got inf"),
])
def test_enrol_refuses_what_is_no_voiceprint_and_writes_nothing(tmp_path, vector, seconds, said):
    """An API trial: a (16, 16) array was taken for a (256,) voiceprint, an infinite speech
    length was stored (a later merge failed with a misleading message), and an all-NaN vector
    was refused for its "shape (256,)"."""
    library = VoiceLibrary(tmp_path / "voices.sqlite")
    with pytest.raises(VoiceprintError, match=said):
        library.enrol("Diane", vector, seconds)
    assert library.voices() == []
    library.close()


def test_a_voiceprint_table_of_another_layout_is_refused_and_left_untouched(tmp_path):
    """A trial: a `voiceprint(name, vector, seconds)` table (another tool's, or an older layout)
    gave "error reading the voice library ... (no such column: meetings); check the file and its
    folder (permissions, free space)"."""
    import sqlite3

    path = tmp_path / "lib_old.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE voiceprint (name TEXT, vector BLOB, seconds REAL)")
    before = path.read_bytes()
    with pytest.raises(VoiceprintError, match=r"holds a voiceprint table that is not voicekit's \(columns: name, "
                                              r"seconds, vector; voicekit's: created, meetings, name, seconds, "
                                              r"updated, vector\): it is left as it is"):
        VoiceLibrary(path)
    assert path.read_bytes() == before


def test_cli_delete_with_a_name_and_all_says_not_both(tmp_path, capsys):
    """A trial: `voices delete Meo --all` said "give a NAME or --all", which it had."""
    from voicekit.cli import main

    path = tmp_path / "v.sqlite"
    VoiceLibrary(path).close()
    assert main(["voices", "delete", "Meo", "--all", "--library", str(path)]) == 2
    assert capsys.readouterr().err.strip() == "voicekit: error: voices delete: give a NAME or --all, not both"
    assert main(["voices", "delete", "--library", str(path)]) == 2
    assert capsys.readouterr().err.strip() == "voicekit: error: voices delete: give a NAME or --all"


def test_reading_an_empty_file_as_a_library_leaves_it_empty(tmp_path):
    """A trial: `voices list --library empty.sqlite` on a 0-byte file turned it into a 12 KiB
    database, readable by everyone (mode 644, where a library is 600)."""
    path = tmp_path / "empty.sqlite"
    path.write_bytes(b"")
    with pytest.raises(VoiceprintError, match="is an empty file, not a voice library: enrol a voice into it"):
        VoiceLibrary(path, create=False)
    assert path.stat().st_size == 0


def test_the_enrol_voices_library_check_creates_and_changes_nothing(tmp_path, monkeypatch):
    """A review: the ``--enrol-voices`` check opened the library to see that it could: a missing
    ``a/b/voices.sqlite`` left the folders ``a/b`` behind, a 0-byte file became a 12 KiB
    database before the meeting, and a read-only library passed (``CREATE TABLE IF NOT EXISTS``
    writes nothing), to fail when the meeting ended, its voiceprints lost."""
    import os

    from voicekit.voiceprints import check_library_writable

    check_library_writable(tmp_path / "a" / "b" / "voices.sqlite")
    assert list(tmp_path.iterdir()) == []
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    check_library_writable(empty)
    assert empty.stat().st_size == 0
    with pytest.raises(VoiceprintError, match=r"voices.sqlite \(.*blocker is a file, not a folder\); choose a writable"):
        check_library_writable(_touched(tmp_path / "blocker") / "voices.sqlite")
    with pytest.raises(VoiceprintError, match="is a folder: give the library's file"):
        check_library_writable(tmp_path)
    library = tmp_path / "voices.sqlite"
    VoiceLibrary(library).close()
    before = library.read_bytes()
    check_library_writable(library)
    # read-only as a read-only mount makes it (root passes every permission bit, so the test
    # cannot chmod its way there)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == library else real_access(p, mode))
    with pytest.raises(VoiceprintError, match="cannot write the voice library .*the file is read-only"):
        check_library_writable(library)
    assert library.read_bytes() == before


def _touched(path):
    path.touch()
    return path


def test_a_turn_a_hook_blocked_is_in_no_kept_embedding_and_no_voiceprint(tmp_path):
    """A privacy trial: a turn a hook blocked ("not committed, not written, not sent") still went
    into the kept speaker embeddings and into the voiceprint --enrol-voices stored, byte for byte
    the one of a meeting with nothing blocked. Its windows now stay out of both (and out of the
    refinement); the live labels are those of the meeting with nothing blocked."""
    from voicekit.hooks import HookResult, HookRunner
    from voicekit.pipeline import Pipeline, PipelineOptions
    from voicekit.sources import FileSource
    from voicekit.store import MeetingStore

    def meeting(name, block):
        hooks = HookRunner()
        hooks.set_names({"Speaker A": "Diane"})
        seen = []

        def hook(turn):
            seen.append(turn)
            mine = [t for t in seen if t.speaker == "Speaker A"]
            return HookResult.blocked() if block and turn.speaker == "Speaker A" and len(mine) == 2 else None

        hooks.register(hook)
        store = MeetingStore(tmp_path / f"{name}.sqlite")
        pipe = Pipeline(PipelineOptions(keep_embeddings=True), components(), hooks=hooks, store=store)
        result = pipe.run(FileSource(eval_file("dev01").audio))
        with VoiceLibrary(tmp_path / f"{name}-voices.sqlite") as lib:
            [outcome] = enrol_named_speakers(lib, pipe.diarizer.session_speakers, hooks.names)
        return seen, result, store.embeddings(), pipe, outcome

    seen, whole, kept_whole, _, enrolled_whole = meeting("whole", block=False)
    _, blocked, kept, pipe, enrolled = meeting("blocked", block=True)
    gone = [t for t in seen if t.speaker == "Speaker A"][1]
    overlaps = lambda e: int(((e[0] < gone.end) & (e[1] > gone.start)).sum())  # noqa: E731
    print(f"blocked {gone.start:.1f}-{gone.end:.1f} s; Diane enrolled from {enrolled.seconds} s "
          f"against {enrolled_whole.seconds} s; kept windows {sum(len(e[0]) for e in kept)} "
          f"against {sum(len(e[0]) for e in kept_whole)}")
    assert blocked.blocked == 1
    # the live labels are as without the block
    assert [(t.speaker, t.start) for t in blocked.turns] == [(t.speaker, t.start) for t in whole.turns
                                                            if t.start != gone.start]
    # no kept window holds audio of the blocked turn; the meeting with nothing blocked kept some
    assert sum(map(overlaps, kept_whole)) > 0 and sum(map(overlaps, kept)) == 0
    assert sum(len(e[0]) for e in kept) == sum(len(e) for _, e in pipe.diarizer.history) \
        == sum(s.windows for s in pipe.diarizer.session_speakers)
    # the voiceprint is built from the committed speech only
    assert 0 < enrolled.seconds <= enrolled_whole.seconds - 1.0
    assert enrolled.seconds == pytest.approx(pipe.diarizer.session_speakers[0].seconds, abs=0.01)
