"""Online diarization and refinement on real recordings (not the acceptance file)."""

import numpy as np
import pytest

from _pipeline_support import EVAL, components, eval_file, needs_eval
from voicekit.diarization.online import DiarizerOptions, snap_to_word_gaps
from voicekit.audio import load_audio
from voicekit.evaluation import load_reference, refined_view, score_der, turns_to_annotation
from voicekit.pipeline import Pipeline, PipelineOptions
from voicekit.sources import FileSource
from voicekit.turns import Word, speaker_label

pytestmark = needs_eval


def _run(file_id, **diarizer):
    f = eval_file(file_id)
    pipe = Pipeline(PipelineOptions(diarizer=DiarizerOptions(**diarizer)), components())
    result = pipe.run(FileSource(f.audio), refine=True)
    turns = result.turns
    ref, uem = load_reference(f, FileSource(f.audio).info.duration)
    return f, turns, refined_view([t.replace(turn_id=i) for i, t in enumerate(turns)],
                                  {i: v for i, v in enumerate(result.refined.values())}), ref, uem


def test_labels_in_order_of_first_appearance_without_gaps():
    for file_id in ("test", "diarizationExample"):
        _f, turns, _r, _ref, _uem = _run(file_id)
        order = list(dict.fromkeys(t.speaker for t in turns))
        assert len(order) >= 2, (file_id, order)   # (a mutation audit: it passed on no turn at all)
        assert order == [speaker_label(i) for i in range(len(order))], (file_id, order)
        assert all(w.speaker == t.speaker for t in turns for w in t.words)


def test_clean_three_speaker_recording_refined():
    f, turns, refined, ref, uem = _run("test")
    d_live = score_der(ref, turns_to_annotation(turns, f.file_id), uem, 0.5)
    d_ref = score_der(ref, turns_to_annotation(refined, f.file_id), uem, 0.5)
    print(f"falcon test: live {100 * d_live.der:.1f}% ({len({t.speaker for t in turns})} speakers), "
          f"refined {100 * d_ref.der:.1f}% ({len({t.speaker for t in refined})} speakers)")
    assert len({t.speaker for t in refined}) == 3
    assert d_ref.der < 0.05
    assert len({t.speaker for t in turns}) == 3
    assert d_live.der < 0.05  # 0.0 % measured


def test_max_speakers_is_honoured():
    _f, turns, refined, _ref, _uem = _run("diarizationExample2", max_speakers=2)
    assert {t.speaker for t in turns} <= {"Speaker A", "Speaker B"}
    assert len({t.speaker for t in refined}) <= 2


def test_a_known_count_does_not_open_a_known_voice_as_a_new_speaker():
    """A researcher's trial: given the true count, every stretch of speech opened a new speaker
    until the count was reached (trn00, 3 people: live DER c0.5 57.6 % against 27.8 % with no
    count), and refinement, forced to the count, split the main speaker (52.2 %). Now a stretch
    opens one only when less alike than ``floor_threshold`` to every known speaker, and the count
    caps the refinement's estimate."""
    f, turns, refined, ref, uem = _run("trn00", num_speakers=3)
    d_live = score_der(ref, turns_to_annotation(turns, f.file_id), uem, 0.5)
    d_ref = score_der(ref, turns_to_annotation(refined, f.file_id), uem, 0.5)
    found = len({t.speaker for t in turns}), len({t.speaker for t in refined})
    print(f"trn00 with num_speakers=3: live {100 * d_live.der:.1f}%, refined {100 * d_ref.der:.1f}%, speakers {found}")
    assert d_live.der < 0.30 and d_ref.der < 0.30   # 25.8 / 27.8 % measured (57.6 / 52.2 % before)
    assert max(found) <= 3 and found[0] >= 2


def test_changes_snap_to_the_nearest_word_gap():
    words = [Word(0.0, 0.4, " a", 1), Word(0.6, 1.0, " b", 1), Word(2.0, 2.5, " c", 1)]
    assert snap_to_word_gaps([0.45, 1.9], words) == [0.5, 1.5]
    assert snap_to_word_gaps([0.45, 0.55], words) == [0.5]
    assert snap_to_word_gaps([0.2], words[:1]) == []          # inside the one word: no gap
    # a diarization review: a change past the last word (the other voice, with no word heard)
    # was moved onto the gap before it, and "c" went to that voice; it stays where it was
    assert snap_to_word_gaps([2.9], words) == [2.9]
    assert snap_to_word_gaps([-0.2, 1.9, 2.5], words) == [-0.2, 1.5, 2.5]


# --- issue 3: composed meetings from real speakers --------------------------------------------

def _solo_segments(file_id, speaker, min_seconds=0.8):
    """``[(start, end)]`` of the reference segments where ``speaker`` speaks alone."""
    f = eval_file(file_id)
    ref, uem = load_reference(f, FileSource(f.audio).info.duration)
    others = ref.subset([x for x in ref.labels() if x != speaker]).get_timeline().support()
    alone = ref.label_timeline(speaker).support().extrude(others)
    if uem is not None:
        alone = alone.crop(uem)
    return f, [(s.start, s.end) for s in alone if s.duration >= min_seconds]


def _cut(file_id, speaker, gap=0.3):
    """The solo speech of one reference speaker of one file, the pieces joined by ``gap`` s of
    silence: ``(samples, seconds of speech)``."""
    f, segments = _solo_segments(file_id, speaker)
    audio = load_audio(f.audio)
    silence = np.zeros(int(gap * 16000), dtype=np.float32)
    parts = []
    for a, b in segments:
        parts += [audio[int(a * 16000):int(b * 16000)], silence]
    return np.concatenate(parts), sum(b - a for a, b in segments)


def _reversed_segments(file_id, speaker, gap=0.3):
    """Like :func:`_cut`, the segments taken in reverse order (each played forwards)."""
    f, segments = _solo_segments(file_id, speaker)
    audio = load_audio(f.audio)
    silence = np.zeros(int(gap * 16000), dtype=np.float32)
    return np.concatenate([p for a, b in reversed(segments) for p in (audio[int(a * 16000):int(b * 16000)], silence)])


def _replay(samples, **diarizer):
    """Run samples through the pipeline in 0.1 s blocks; returns the committed turns."""
    pipe = Pipeline(PipelineOptions(diarizer=DiarizerOptions(**diarizer)), components())
    blocks = (samples[i:i + 1600] for i in range(0, len(samples), 1600))
    return pipe.run(blocks).turns


def _majority(turns, lo, hi):
    seconds = {}
    for t in turns:
        overlap = min(t.end, hi) - max(t.start, lo)
        if overlap > 0:
            seconds[t.speaker] = seconds.get(t.speaker, 0.0) + overlap
    return max(seconds, key=seconds.get), seconds


def test_a_speaker_who_comes_back_after_a_long_absence_keeps_her_label():
    # A: MEE009 in dev00; then B: FEE083 alone, from trn06 and trn09 (the files she is in). The
    # ami_debug files hold at most about 40 s of solo speech of any one speaker (FEE083), so B's
    # segments are played a second time, in reverse order, to keep A away for more than 60 s.
    # A comes back from dev01, another recording of her meeting.
    a1, _ = _cut("dev00", "MEE009")
    b6, b9 = _cut("trn06", "FEE083"), _cut("trn09", "FEE083")
    b = np.concatenate([b6[0], b9[0], _reversed_segments("trn09", "FEE083"), _reversed_segments("trn06", "FEE083")])
    a2, _ = _cut("dev01", "MEE009")
    pause = np.zeros(16000, dtype=np.float32)
    samples = np.concatenate([a1, pause, b, pause, a2])
    t_b, t_a2 = (len(a1) + len(pause)) / 16000, (len(a1) + 2 * len(pause) + len(b)) / 16000
    turns = _replay(samples)
    first, s1 = _majority(turns, 0.0, t_b - 1.0)
    middle, s2 = _majority(turns, t_b, t_a2 - 1.0)
    last, s3 = _majority(turns, t_a2, len(samples) / 16000)
    print(f"A {s1}; B ({b6[1] + b9[1]:.1f} s of distinct solo speech, {len(b) / 16000:.1f} s in all) {s2}; A again {s3}")
    assert t_a2 - t_b >= 60.0
    assert middle != first
    assert last == first


def test_a_speaker_change_without_a_pause_splits_the_turn_at_the_right_word():
    # two clean voices of diarizationExample back to back, no silence between them
    f, seg1 = _solo_segments("diarizationExample", "speakerA", min_seconds=3.0)
    _f, seg2 = _solo_segments("diarizationExample", "speakerC", min_seconds=3.0)
    audio = load_audio(f.audio)
    x = audio[int(seg1[0][0] * 16000):int(seg1[0][1] * 16000)]
    y = audio[int(seg2[0][0] * 16000):int(seg2[0][1] * 16000)]
    junction = len(x) / 16000
    turns = _replay(np.concatenate([x, y, np.zeros(16000, dtype=np.float32)]))
    words = [w for t in turns for w in t.words]
    print([(round(w.start, 2), w.text, w.speaker) for w in words], f"junction {junction:.2f} s")
    before = [w for w in words if (w.start + w.end) / 2 < junction]
    after = [w for w in words if (w.start + w.end) / 2 >= junction]
    assert before and after
    assert len({w.speaker for w in before}) == 1 and len({w.speaker for w in after}) == 1
    assert before[0].speaker != after[0].speaker
    assert [t.speaker for t in turns] == [before[0].speaker, after[0].speaker]


def test_labels_already_emitted_never_change():
    f = eval_file("EN2002a_30s")
    seen = {}
    pipe = Pipeline(PipelineOptions(), components(),
                    on_turn=lambda t: seen.setdefault(len(seen), (t.start, t.speaker, [w.speaker for w in t.words])))
    result = pipe.run(FileSource(f.audio), refine=True)
    assert len(seen) == len(result.turns) >= 4
    assert [(t.start, t.speaker, [w.speaker for w in t.words]) for t in result.turns] == [seen[i] for i in range(len(seen))]
    # the refinement is kept beside the live labels, never written over them
    assert [t.speaker for t in result.turns] == [s for _, s, _ in seen.values()]


def test_refinement_of_a_long_meeting_clusters_a_bounded_subset(monkeypatch):
    """Past MAX_CLUSTERED windows the refinement clusters an evenly spread subset (the dense
    affinity matrix would not fit a long meeting) and gives the other windows the nearest
    centroid: on a real recording, with the bound forced low, the result stays that of the
    whole."""
    from voicekit.diarization import refine

    f = eval_file("diarizationExample")
    pipe = Pipeline(PipelineOptions(), components())
    result = pipe.run(FileSource(f.audio), refine=True)
    windows = [w for _, w in pipe.diarizer.history]
    n = sum(len(w) for w in windows)
    turns = [t.replace(turn_id=i) for i, t in enumerate(result.turns)]
    whole = refine.refine_turns(turns, windows)
    monkeypatch.setattr(refine, "MAX_CLUSTERED", n // 2)
    bounded = refine.refine_turns(turns, windows)
    words = [(a, b) for tid in whole for a, b in zip(whole[tid], bounded[tid])]
    agree = sum(a == b for a, b in words) / len(words)
    print(f"{n} windows, {n // 2} clustered: {100 * agree:.1f}% of {len(words)} words keep their refined label")
    assert agree >= 0.95


def _refined_scorer(file_id: str):
    """The default pipeline run on an evaluation file: its turns (numbered), window embeddings,
    and a function that scores word-level refined labels ({} = the live labels) as (speakers in
    the refined view, DER at collar 0.5)."""
    f = eval_file(file_id)
    pipe = Pipeline(PipelineOptions(), components())
    result = pipe.run(FileSource(f.audio), refine=True)
    windows = [w for _, w in pipe.diarizer.history]
    turns = [t.replace(turn_id=i) for i, t in enumerate(result.turns)]
    ref, uem = load_reference(f, FileSource(f.audio).info.duration)

    def score(refined):
        view = refined_view(turns, refined)
        return len({t.speaker for t in view}), round(score_der(ref, turns_to_annotation(view, f.file_id), uem, 0.5).der, 4)

    return turns, windows, score


def test_refinement_keeps_unlike_live_speakers_apart(monkeypatch):
    """diarizationExample (4 speakers, clean turns): plain re-clustering (the eigengap) merges two
    of the live speakers; with the cannot-link guard the refined view keeps the 4 speakers and
    its DER is lower."""
    from voicekit.diarization import refine

    turns, windows, score = _refined_scorer("diarizationExample")
    guarded = score(refine.refine_turns(turns, windows))
    monkeypatch.setattr(refine, "MERGE_SIMILARITY", -2.0)
    plain = score(refine.refine_turns(turns, windows))
    print(f"speakers / DER c0.5: plain {plain}, guarded {guarded}")
    assert plain[0] == 3
    assert guarded[0] == eval_file("diarizationExample").speakers == 4
    assert guarded[1] < plain[1] - 0.05


def test_refinement_opens_no_speaker_on_under_3_s_of_windows(monkeypatch):
    """One voice, too few windows for the eigengap: a 4 s clip of one man (faster-whisper's
    hotwords.mp3) and LibriVox readings were cut into 2-4 refined speakers of about 1 s each
    (reading 0920 still into 2 with a 2 s minimum); a cluster that matches no live speaker now
    needs 3 s of windows to stand as a speaker."""
    from voicekit.diarization import refine

    found = {}
    for name in ("faster_whisper/hotwords.mp3", "librivox/sense_and_sensibility_01_austen_64kb-0880.wav",
                 "librivox/sense_and_sensibility_01_austen_64kb-0920.wav"):
        pipe = Pipeline(PipelineOptions(), components())
        result = pipe.run(FileSource(EVAL / name), refine=True)
        windows = [w for _, w in pipe.diarizer.history]
        turns = [t.replace(turn_id=i) for i, t in enumerate(result.turns)]
        speakers = {label for labels in refine.refine_turns(turns, windows).values() for label in labels}
        monkeypatch.setattr(refine, "MIN_NEW_WINDOWS", 0)
        unguarded = {label for labels in refine.refine_turns(turns, windows).values() for label in labels}
        monkeypatch.undo()
        found[name] = (len({t.speaker for t in turns}), len(unguarded), len(speakers))
    print("live / refined without / with the 3 s minimum:", found)
    assert all(live == 1 and unguarded >= 2 and guarded == 1 for live, unguarded, guarded in found.values())


def test_refinement_opens_no_speaker_on_2_s_of_a_far_field_meeting(monkeypatch):
    """trn04 (AMI far-field, 3 speakers, 2 found live): refinement opened two new speakers on 8
    and 9 windows that took the live speakers' words (refined DER 60.9 % against 25.6 % live);
    with the 3 s minimum it keeps the 2 live speakers and about the live DER."""
    from voicekit.diarization import refine

    turns, windows, score = _refined_scorer("trn04")
    live = score({})
    guarded = score(refine.refine_turns(turns, windows))
    monkeypatch.setattr(refine, "MIN_NEW_WINDOWS", 8)
    two_seconds = score(refine.refine_turns(turns, windows))
    print(f"speakers / DER c0.5: live {live}, 2 s minimum {two_seconds}, 3 s minimum {guarded}")
    assert two_seconds[0] == 4 and guarded[0] == live[0] == 2
    assert guarded[1] < two_seconds[1] - 0.2
    assert guarded[1] < live[1] + 0.05


def test_refined_changes_move_to_the_nearest_clause_end():
    from voicekit.diarization.refine import snap_to_clause_ends
    from voicekit.turns import SpeakerTurn

    texts = [" Oh", " I'm", " from", " Chicago", " also.", " I'm", " in", " Jersey", " now."]
    words = tuple(Word(i * 0.4, i * 0.4 + 0.3, t, 1.0) for i, t in enumerate(texts))
    turn = SpeakerTurn("Speaker A", "".join(texts).strip(), 0.0, 3.6, words)
    # the change two words early ("also." is the clause end): moved forward to after "also."
    assert snap_to_clause_ends(turn, ["A"] * 3 + ["B"] * 6, 2) == ["A"] * 5 + ["B"] * 4
    # one word late: moved back to after "also."
    assert snap_to_clause_ends(turn, ["A"] * 6 + ["B"] * 3, 2) == ["A"] * 5 + ["B"] * 4
    # already at a clause end, or no clause end within reach: unchanged
    assert snap_to_clause_ends(turn, ["A"] * 5 + ["B"] * 4, 2) == ["A"] * 5 + ["B"] * 4
    assert snap_to_clause_ends(turn, ["A"] * 2 + ["B"] * 7, 1) == ["A"] * 2 + ["B"] * 7


# --- a meeting that goes on (mic --append): Pipeline(resume=True) ---------------------------------

def _two_sessions(tmp_path, keep, voices=None, names=None, renamed=None):
    """Session 1: A (MEE009, dev00) then B (FEE083, trn06); session 2, resumed from the store: A
    again (MEE009, dev01) then a voice not heard before (MEE012, dev00). ``voices``: the voice
    library's voices, given to both sessions; ``names``: speaker names stored before session 2;
    ``renamed``: names given after session 1 (``voicekit export --speaker-names``).
    Returns the store, both results, the resumed pipeline and the meeting times where session 2
    and its new voice begin."""
    from voicekit.store import MeetingStore
    from voicekit.voiceprints import VoiceIdentifier

    a1, _ = _cut("dev00", "MEE009")
    b, _ = _cut("trn06", "FEE083")
    a2, _ = _cut("dev01", "MEE009")
    c, _ = _cut("dev00", "MEE012")
    pause = np.zeros(16000, dtype=np.float32)
    s1, s2 = np.concatenate([a1, pause, b]), np.concatenate([a2, pause, c])
    blocks = lambda x: (x[i:i + 1600] for i in range(0, len(x), 1600))  # noqa: E731
    store = MeetingStore(tmp_path / "meeting.sqlite")
    options = PipelineOptions(keep_embeddings=keep)
    ident = (lambda: VoiceIdentifier(voices)) if voices is not None else (lambda: None)  # noqa: E731
    first = Pipeline(options, components(), store=store, voices=ident())
    r1 = first.run(blocks(s1), channel="mic")
    store.set_meta(duration=len(s1) / 16000)
    store.set_speaker_names({**first.speaker_names(), **(names or {})})   # what the CLI stores
    if renamed:
        store.rename_speakers(renamed)
    resumed = Pipeline(options, components(), store=store, resume=True, voices=ident())
    r2 = resumed.run(blocks(s2), channel="mic")
    t2 = len(s1) / 16000
    resumed.first_history = len(first.diarizer.history)
    return store, r1, r2, resumed, t2, t2 + (len(a2) + len(pause)) / 16000, t2 + len(s2) / 16000


def test_a_resumed_meeting_knows_its_speakers_from_their_kept_embeddings(tmp_path):
    store, r1, r2, resumed, t2, t_new, t_end = _two_sessions(tmp_path, keep=True)
    a, _ = _majority(r1.turns, 0.0, t2 / 3)
    b, _ = _majority(r1.turns, t2 * 2 / 3, t2)
    back, s_back = _majority(r2.turns, t2, t_new - 1.0)
    new, s_new = _majority(r2.turns, t_new, t_end)
    print(f"session 1: {a}, {b}; session 2 from {t2:.1f} s: {s_back}, then {s_new}")
    assert resumed.start_time == pytest.approx(t2, abs=1e-3)
    assert [s.label for s in resumed.diarizer.speakers[:2]] == [a, b] == ["Speaker A", "Speaker B"]
    assert back == a                      # the same voice, in another session, keeps her label
    assert new == "Speaker C"             # a voice not heard before is labelled after the stored ones
    # session 2 is in meeting time, after session 1, and its utterances are numbered after its
    assert min(t.start for t in r2.turns) >= resumed.start_time and max(t.end for t in r1.turns) <= t2
    # kept embeddings of both sessions, none replaced: the resumed utterances are numbered after
    kept, n2 = store.embeddings(), len(resumed.diarizer.history)
    assert len(kept) == resumed.first_history + n2 and resumed.diarizer.history[0][0] >= resumed.first_history
    assert all(starts.min() >= resumed.start_time for starts, _, _ in kept[-n2:])
    assert store.resume_point().next_utterance == resumed.diarizer.history[-1][0] + 1
    # what a voice enrolled at the end of session 2 is built from: session 2's speech only
    session = {s.label: s for s in resumed.diarizer.session_speakers}
    assert set(session) == {a, "Speaker C"}      # B was not heard in session 2
    assert sum(s.windows for s in session.values()) == sum(len(e) for _, e in resumed.diarizer.history)
    assert 0 < session[a].windows < resumed.diarizer.speakers[0].windows


def test_a_resumed_meeting_without_kept_embeddings_labels_new_speakers_after_the_stored_ones(tmp_path):
    # "Speaker C" was named before session 2, and nobody had that label yet
    store, r1, r2, resumed, t2, t_new, t_end = _two_sessions(tmp_path, keep=False, names={"Speaker C": "Carol"})
    assert {t.speaker for t in r1.turns} == {"Speaker A", "Speaker B"}
    back, _ = _majority(r2.turns, t2, t_new - 1.0)
    new, _ = _majority(r2.turns, t_new, t_end)
    # no voice is known: the returning one is a new label too, never one of session 1's; the
    # first new label takes the name given to it
    assert (back, new) == ("Speaker C", "Speaker D")
    assert {t.sender_name for t in r2.turns if t.speaker == "Speaker C"} == {"Carol"}
    assert min(t.start for t in r2.turns) >= resumed.start_time
    assert store.embeddings() == [] and store.resume_point().next_utterance == 0


def test_a_live_meeting_keeps_only_the_last_utterances_windows_and_the_same_labels():
    """A diarization review: every utterance's windows stayed in memory for the whole meeting
    (13 MiB after 600 utterances) though a live meeting (mic, livekit) is never refined from them.
    With keep_history=False only the last utterance's stay (what --keep-embeddings stores), and
    the labels are the same. An utterance too short for one window (a VAD set for it) gives its
    words to the speaker heard last; its words were lost."""
    from voicekit.vad import Utterance

    f = eval_file("test")
    whole = Pipeline(PipelineOptions(), components())
    kept = whole.run(FileSource(f.audio))
    live = Pipeline(PipelineOptions(diarizer=DiarizerOptions(keep_history=False)), components())
    result = live.run(FileSource(f.audio))
    assert [(t.speaker, t.text) for t in result.turns] == [(t.speaker, t.text) for t in kept.turns]
    assert len({t.speaker for t in result.turns}) >= 2
    assert len(whole.diarizer.history) >= 3 and len(live.diarizer.history) == 1
    assert live.diarizer.history[0][0] == whole.diarizer.history[-1][0]
    with pytest.raises(ValueError, match="keep_history=False"):
        live.refine()
    last = result.turns[-1]
    short = Utterance(index=99, start=last.end + 1.0, samples=np.zeros(2400, np.float32),
                      speech=np.ones(5, dtype=bool), frame_seconds=0.032, closed_at=last.end + 1.5)
    words, pieces = live.diarizer.process(short, [Word(last.end + 1.02, last.end + 1.12, " Yes.", 0.9)])
    assert [w.speaker for w in words] == [last.speaker] and [p.speaker for p in pieces] == [last.speaker]
    assert len(live.diarizer.history) == 1


class _OneVoicePerUtterance:
    """A stand-in speaker encoder (the real one's window layout: 1.0 s every 0.25 s) whose windows
    all embed as ``voices[utterance index]``."""
    window_frames, hop_frames, window_seconds, hop_seconds = 100, 25, 1.0, 0.25

    def __init__(self, voices):
        self.voices, self.utterance = voices, 0

    def embed_windows(self, samples, offset=0.0):
        from voicekit.diarization.encoder import WindowEmbeddings

        starts = offset + 0.25 * np.arange(int((len(samples) / 16000 - 1.0) / 0.25) + 1)
        vectors = np.repeat(self.voices[self.utterance][None, :], len(starts), axis=0).astype(np.float32)
        return WindowEmbeddings(starts, starts + 1.0, vectors)


@pytest.mark.parametrize(("counts", "speakers"), [({}, ["Speaker A", "Speaker A"]),
                                                  ({"min_speakers": 2}, ["Speaker A", "Speaker B"]),
                                                  ({"num_speakers": 2}, ["Speaker A", "Speaker B"]),
                                                  ({"num_speakers": 1}, ["Speaker A", "Speaker A"])])
def test_below_the_minimum_count_a_less_alike_voice_opens_a_speaker(counts, speakers):
    """A mutation audit: nothing failed with floor_threshold never used. Two utterances of 2.75 s
    whose voices are 0.84 alike (corrected 0.93: above the known-speaker threshold 0.91, below the
    floor threshold 0.95): one speaker with no count given, two while fewer than the minimum."""
    from voicekit.diarization.online import OnlineDiarizer
    from voicekit.vad import Utterance

    a = np.zeros(256)
    a[0] = 1.0
    b = np.zeros(256)
    b[0], b[1] = 0.84, np.sqrt(1 - 0.84 ** 2)
    encoder = _OneVoicePerUtterance([a, b])
    diarizer = OnlineDiarizer(encoder, DiarizerOptions(**counts))
    got = []
    for i in range(2):
        encoder.utterance = i
        utt = Utterance(i, 10.0 * i, np.zeros(44000, np.float32), np.ones(86, dtype=bool), 0.032, 10.0 * i + 3.0)
        words, _ = diarizer.process(utt, [Word(10.0 * i + 0.5, 10.0 * i + 2.5, " words", 0.9)])
        got.append(words[0].speaker)
    assert got == speakers


def test_speaker_index_inverts_speaker_label():
    from voicekit.turns import next_speaker_index, speaker_index

    assert [speaker_label(i) for i in (0, 1, 25, 26, 27, 702)] == \
        ["Speaker A", "Speaker B", "Speaker Z", "Speaker AA", "Speaker AB", "Speaker AAA"]
    assert all(speaker_index(speaker_label(i)) == i for i in range(800))
    assert [speaker_index(x) for x in ("Diane", "Speaker ", "Speaker a", "Speaker A1")] == [None] * 4
    assert next_speaker_index(["Speaker B", "Diane", "Speaker AA"]) == 27 and next_speaker_index(["Diane"]) == 0


def test_labels_given_back_by_a_rolled_back_utterance_are_given_first():
    """A diarizer that rolls an utterance back (Ctrl-C inside it) gives its new labels back to the
    allocator it shares with other lanes: the next speaker of any lane takes the lowest, so no
    letter is skipped and none is given twice."""
    from voicekit.turns import SpeakerLabels

    labels = SpeakerLabels(["Speaker A"])
    assert [labels.take(), labels.take(), labels.take()] == ["Speaker B", "Speaker C", "Speaker D"]
    labels.give_back(["Speaker D", "Speaker C"])
    assert [labels.take(), labels.take(), labels.take()] == ["Speaker C", "Speaker D", "Speaker E"]


@pytest.mark.parametrize("counts", [{"max_speakers": 0}, {"num_speakers": 0}, {"num_speakers": -1},
                                    {"min_speakers": 2.5}, {"max_speakers": True},
                                    {"min_speakers": 3, "max_speakers": 2}, {"num_speakers": 4, "max_speakers": 2}])
def test_speaker_counts_that_mean_nothing_are_refused(counts):
    """A trial: the CLI refused these, but DiarizerOptions took them, and the live diarizer and
    the refinement read them differently (``max_speakers=0``: one speaker live, up to 8 refined;
    ``num_speakers=0``: automatic; ``min_speakers=3, max_speakers=2`` both)."""
    from voicekit.diarization.online import DiarizerOptions

    with pytest.raises(ValueError, match="whole number of speakers, at least 1|contradict each other"):
        DiarizerOptions(**counts)


def test_a_speaker_floor_above_the_windows_asks_k_means_for_no_more_clusters_than_points():
    """A trial: ``--min-speakers 12 --refine`` on a 3 s clip (8 windows) asked k-means for 12
    clusters of 8 points: about 110 scipy warnings ("One of the clusters is empty") per call."""
    import warnings

    import numpy as np

    from voicekit.diarization.online import DiarizerOptions
    from voicekit.diarization.refine import spectral_clusters

    assert DiarizerOptions(num_speakers=np.int64(2)).speaker_cap == 2
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(8, 256)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        labels = spectral_clusters(vectors, None, min_speakers=12, max_speakers=12)
    assert labels.shape == (8,) and len(set(labels.tolist())) <= 8
