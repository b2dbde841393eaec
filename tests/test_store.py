"""The SQLite meeting store: durable commits, attribution records at commit time (A12),
refined labels beside the live ones."""

import json
import sqlite3
import pytest

from voicekit.store import MeetingStore, StoreError
from voicekit.turns import SpeakerTurn, Word


def turn(speaker, text, start, name=None):
    words = tuple(Word(start + i * 0.3, start + i * 0.3 + 0.25, " " + w, 0.9, speaker)
                  for i, w in enumerate(text.split()))
    meta = {"sender_name": name or speaker}
    return SpeakerTurn(speaker=speaker, text=text, start=start, end=words[-1].end, words=words, metadata=meta)


def test_a12_ranks_are_fixed_at_commit_and_survive_reopening(tmp_path):
    path = tmp_path / "meeting.sqlite"
    store = MeetingStore(path)
    committed = [store.commit(turn("Speaker A", "hello there", 0.0, "Alice")),
                 store.commit(turn("Speaker B", "hi Alice", 1.0, "ALICE")),
                 store.commit(turn("Speaker C", "and me", 2.0, "\u0410lice"))]  # Cyrillic А
    assert [t.turn_id for t in committed] == [1, 2, 3]
    labels = [label.text for label in store.labels(committed)]
    assert labels == ["Alice", "ALICE (2)", "\u0410lice (3)"]
    store.close()
    reopened = MeetingStore(path)
    again = reopened.turns()
    assert [t.sender_name for t in again] == ["Alice", "ALICE", "\u0410lice"]
    assert [label.text for label in reopened.labels(again)] == labels
    raw = sqlite3.connect(path).execute("SELECT * FROM author_register").fetchall()
    assert raw and not any("lice" in str(cell) for row in raw for cell in row)  # digests only


def test_refined_labels_split_a_turn_and_keep_the_live_one(tmp_path):
    store = MeetingStore(tmp_path / "m.sqlite")
    t = store.commit(turn("Speaker A", "one two three four", 0.0))
    store.set_speaker_names({"Speaker B": "Sheila"})
    store.set_refined({t.turn_id: ["Speaker A", "Speaker A", "Speaker B", "Speaker B"]})
    assert [x.speaker for x in store.turns()] == ["Speaker A"]
    pieces = store.turns(refined=True)
    assert [(p.speaker, p.text, p.sender_name) for p in pieces] == [
        ("Speaker A", "one two", "Speaker A"), ("Speaker B", "three four", "Sheila")]
    assert pieces[0].start == t.start and pieces[1].end == t.end
    assert pieces[0].end == pieces[1].start == round((0.55 + 0.6) / 2, 3)
    assert pieces[1].metadata["moved_from"] == "Speaker A"
    assert store.changed_turns() == [] and store.has_refined()
    assert store.relabelled_turns() == 1   # moved in part: its last two words


def test_turns_of_one_utterance_that_refinement_gives_one_speaker_are_one_refined_turn(tmp_path):
    """The case a new-user trial saw on EN2002a_30s: live cut one utterance into "C: … It" | "D: opens
    a menu." | "E: I thought …"; refinement gave "It", "opens a menu." and E's turn to E, and the
    refined transcript showed three E lines. Touching pieces of one speaker are one turn; a turn of
    the same speaker after a pause (another utterance) stays apart; one cut at the maximum utterance
    length (0.02 s apart, no pause) is joined."""
    store = MeetingStore(tmp_path / "m.sqlite")
    c = turn("Speaker C", "it opens a menu it", 0.0)
    d = turn("Speaker D", "opens a menu", c.end)
    e = turn("Speaker E", "I thought so", d.end + 0.02)
    later = turn("Speaker E", "yeah", e.end + 0.6)
    ids = [store.commit(t.replace(emitted_at=t.end + 1.0)).turn_id for t in (c, d, e, later)]
    store.set_refined({ids[0]: ["Speaker C"] * 4 + ["Speaker E"], ids[1]: ["Speaker E"] * 3,
                       ids[2]: ["Speaker E"] * 3, ids[3]: ["Speaker E"]})
    refined = store.turns(refined=True)
    assert [(t.speaker, t.text, t.turn_id, t.metadata.get("moved_from"), t.metadata.get("live_ids"))
            for t in refined] == [
        ("Speaker C", "it opens a menu", ids[0], None, None),
        ("Speaker E", "it opens a menu I thought so", ids[0], "Speaker C, Speaker D", ids[:3]),
        ("Speaker E", "yeah", ids[3], None, None)]
    assert (refined[1].start, refined[1].end, refined[1].emitted_at) == (refined[0].end, e.end, e.end + 1.0)
    assert [w.text for t in refined for w in t.words] == [w.text for t in (c, d, e, later) for w in t.words]
    assert len(store.turns()) == 4   # the live view is as emitted


def test_touching_turns_stay_apart_across_channels_and_names():
    """Turns of two LiveKit lanes under one label (two participants with one display name, or a
    meeting stored before room microphones shared their labels), and a hook's name on one turn
    of a label: such neighbours are different people (or a different name) and are not joined."""
    from voicekit.turns import join_touching

    a = turn("Speaker A", "one two", 0.0).replace(channel="room/p-alice")
    b = turn("Speaker A", "three four", a.end).replace(channel="room/p-bob")
    assert [t.text for t in join_touching([a, b])] == ["one two", "three four"]
    c = turn("Speaker A", "five six", b.end, "Chair").replace(channel="room/p-bob")
    assert [t.text for t in join_touching([b, c])] == ["three four", "five six"]
    d = turn("Speaker A", "seven", c.end, "Chair").replace(channel="room/p-bob")
    assert [t.text for t in join_touching([b, c, d])] == ["three four", "five six seven"]


def test_a_joined_turn_went_out_when_its_last_emitted_turn_did():
    """A review: the final flush of a replay is stamped before live turns that went out later;
    a refined turn joining them took the last one's 44.611 s against 48.567 s."""
    from voicekit.turns import join_touching

    a = turn("Speaker A", "one two", 0.0).replace(emitted_at=48.567)
    b = turn("Speaker A", "three four", a.end).replace(emitted_at=44.611)
    c = turn("Speaker A", "five", b.end).replace(emitted_at=None)
    assert join_touching([a, b, c])[0].emitted_at == 48.567
    assert join_touching([c, c.replace(start=c.end, end=c.end + 1)])[0].emitted_at is None


def test_a_turn_without_words_is_no_turn_committed_since_the_refinement(tmp_path):
    """A review: a turn whose words a hook removed (``words=()``) kept a NULL refined label, so
    every export said a turn was committed since the refinement, and re-clustered."""
    store = MeetingStore(tmp_path / "m.sqlite")
    a = store.commit(turn("Speaker A", "hello there", 0.0))
    store.commit(turn("Speaker B", "my number is", 2.0).replace(text="[redacted]", words=()))
    assert store.unrefined_turns() == 1   # before any refinement: the turn with words
    store.set_refined({a.turn_id: ["Speaker A", "Speaker A"]})
    assert store.has_refined() and store.unrefined_turns() == 0
    c = store.commit(turn("Speaker A", "one more", 4.0))   # committed since: counted
    assert store.unrefined_turns() == 1 and c.turn_id


def test_an_edited_turn_kept_whole_is_not_counted_as_moved_in_part(tmp_path):
    """A review: the refine summary said "1 more in part" for a turn whose text a hook edited,
    which the refined view keeps whole under its live speaker."""
    store = MeetingStore(tmp_path / "m.sqlite")
    t = store.commit(turn("Speaker A", "we met in Spain last year", 0.0).replace(text="we met in [place] last year"))
    plain = store.commit(turn("Speaker A", "and then we left", 3.0))
    store.set_refined({t.turn_id: ["Speaker A"] * 4 + ["Speaker B"] * 2, plain.turn_id: ["Speaker A"] * 3 + ["Speaker B"]})
    assert [x.speaker for x in store.turns(refined=True)][:1] == ["Speaker A"]
    assert store.relabelled_turns() == 1   # the plain turn, in part; the edited one stays whole
    store.set_refined({t.turn_id: ["Speaker B"] * 4 + ["Speaker A"] * 2, plain.turn_id: ["Speaker A"] * 4})
    assert store.relabelled_turns() == 1 and store.changed_turns() == [(t.turn_id, "Speaker A", "Speaker B")]


def test_a_hooks_text_edit_survives_refinement(tmp_path):
    """A turn whose text a hook edited (a redaction) is not cut at its words' times, which would
    bring Whisper's words back: it stays whole under the label of most of its words."""
    store = MeetingStore(tmp_path / "m.sqlite")
    t = turn("Speaker A", "this is Diane in New Jersey", 0.0)
    t = store.commit(t.replace(text="this is Diane in New [place]"))
    store.set_refined({t.turn_id: ["Speaker A"] * 2 + ["Speaker B"] * 4})
    [refined] = store.turns(refined=True)
    assert (refined.speaker, refined.text, refined.metadata["moved_from"]) == \
        ("Speaker B", "this is Diane in New [place]", "Speaker A")
    assert store.changed_turns() == [(t.turn_id, "Speaker A", "Speaker B")]


def test_one_speaker_keeps_one_name_in_the_refined_view_and_the_rttm(tmp_path):
    """A speaker named from a later turn on (a hook's rename): in the refined view and in both
    RTTMs its earlier, bare-labelled turns carry the name too; a turn named on its own keeps it."""
    from voicekit.outputs import to_rttm

    store = MeetingStore(tmp_path / "m.sqlite")
    early = store.commit(turn("Speaker A", "hello there", 0.0))               # before the rename
    store.commit(turn("Speaker A", "this is Sheila", 2.0, "Sheila"))
    store.commit(turn("Speaker B", "hi", 4.0, "Chair"))                       # a name of its own
    store.commit(turn("Speaker B", "and the budget", 6.0))
    store.set_speaker_names({"Speaker A": "Sheila"})
    store.set_refined({early.turn_id: ["Speaker A", "Speaker A"]})
    live = store.turns()
    assert [t.sender_name for t in live] == ["Speaker A", "Sheila", "Chair", "Speaker B"]   # as emitted
    assert [t.sender_name for t in store.turns(refined=True)] == ["Sheila", "Sheila", "Chair", "Speaker B"]
    names = [line.split()[7] for line in to_rttm(live, "m").splitlines()]
    assert names == ["Sheila", "Sheila", "Chair", "Speaker_B"]


def test_a_one_turn_name_on_a_labels_last_turn_does_not_name_the_speaker(tmp_path):
    """A review: a hook's ``HookResult(name="Chair")`` ("this turn only") on Speaker B's last turn
    named every earlier bare Speaker B turn "Chair" in the RTTM and in ``speakers[]``; one more
    bare turn flipped them back. The outputs take the speaker's name from the store's
    persistent names."""
    from voicekit.cli.meeting import _write_outputs

    store = MeetingStore(tmp_path / "m.sqlite")
    store.commit(turn("Speaker A", "hello there", 0.0))
    store.commit(turn("Speaker A", "this is Sheila", 2.0, "Sheila"))
    store.commit(turn("Speaker B", "we move to the vote", 4.0))
    store.commit(turn("Speaker B", "the motion reads", 6.0, "Chair"))   # a name of its own, the last turn
    store.set_speaker_names({"Speaker A": "Sheila"})
    _write_outputs(store.turns(renamed=True), tmp_path, "m", {}, store=store)
    rttm = [line.split()[7] for line in (tmp_path / "m.rttm").read_text(encoding="utf-8").splitlines()]
    assert rttm == ["Sheila", "Sheila", "Speaker_B", "Chair"]
    doc = json.loads((tmp_path / "m.json").read_text(encoding="utf-8"))
    assert doc["speakers"] == [{"label": "Speaker A", "name": "Sheila"}, {"label": "Speaker B", "name": "Speaker B"}]


def test_names_given_after_the_meeting_name_every_turn_of_the_label_and_keep_the_emitted_one(tmp_path):
    """`voicekit export --speaker-names`: every turn of a renamed label carries the new name in
    the renamed view, whatever it was emitted with (the bare label, a known voice's name, a
    one-turn rename); the committed turns stay as emitted; names given later are merged; the
    names survive reopening and become persistent names (an --append session goes on with them)."""
    store = MeetingStore(tmp_path / "m.sqlite")
    a = store.commit(turn("Speaker A", "good morning all", 0.0))
    store.commit(turn("Speaker A", "so the budget", 2.0, "Ben"))              # named by the voice library
    store.commit(turn("Speaker B", "hi there", 4.0, "Guest"))                # a hook's one-turn rename
    store.commit(turn("Speaker C", "and more", 6.0))
    store.set_refined({a.turn_id: ["Speaker A", "Speaker C", "Speaker C"]})
    store.rename_speakers({"Speaker A": "Andrew"})
    store.rename_speakers({"Speaker C": "Carol"})
    store.close()
    store = MeetingStore(tmp_path / "m.sqlite")
    assert store.renamed_speakers() == {"Speaker A": "Andrew", "Speaker C": "Carol"}
    assert store.meta()["renamed"] == {"Speaker A": "Andrew", "Speaker C": "Carol"}
    assert store.speaker_names() == {"Speaker A": "Andrew", "Speaker C": "Carol"}
    assert [t.sender_name for t in store.turns()] == ["Speaker A", "Ben", "Guest", "Speaker C"]   # as emitted
    renamed = store.turns(renamed=True)
    assert [t.sender_name for t in renamed] == ["Andrew", "Andrew", "Guest", "Carol"]
    assert [t.metadata.get("emitted_name") for t in renamed] == ["Speaker A", "Ben", None, "Speaker C"]
    refined = store.turns(refined=True, renamed=True)
    assert [(t.speaker, t.sender_name, t.text) for t in refined] == [
        ("Speaker A", "Andrew", "good"), ("Speaker C", "Carol", "morning all"),
        ("Speaker A", "Andrew", "so the budget"), ("Speaker B", "Guest", "hi there"), ("Speaker C", "Carol", "and more")]
    assert not any("emitted_name" in t.metadata for t in refined)
    store.close()


def test_a_named_speaker_that_refinement_moves_whole_into_an_unnamed_one_keeps_the_name(tmp_path):
    """`--speaker-names "Speaker A=Diane"`, and refinement found Speaker A's turns to be the
    voice of Speaker B (unnamed): the refined view showed Diane nowhere. The person was named,
    so Speaker B's turns, the moved ones and its own, now read Diane; a label that keeps a piece
    of its own, or an heir with a name of its own, passes nothing on."""
    store = MeetingStore(tmp_path / "m.sqlite")
    a = store.commit(turn("Speaker A", "good morning all", 0.0))
    store.commit(turn("Speaker B", "yes and the budget", 2.0))
    c = store.commit(turn("Speaker C", "hi", 4.0))
    store.set_speaker_names({"Speaker A": "Diane"})
    store.set_refined({a.turn_id: ["Speaker B"] * 3})
    refined = store.turns(refined=True)
    assert [(t.speaker, t.sender_name) for t in refined] == [
        ("Speaker B", "Diane"), ("Speaker B", "Diane"), ("Speaker C", "Speaker C")]
    assert store.speaker_names(refined=True) == {"Speaker A": "Diane", "Speaker B": "Diane"}
    assert store.speaker_names() == {"Speaker A": "Diane"}
    assert [t.sender_name for t in store.turns()] == ["Speaker A", "Speaker B", "Speaker C"]   # live: as emitted
    # the heir has a name of its own: it keeps it
    store.set_speaker_names({"Speaker B": "Sheila"})
    assert [t.sender_name for t in store.turns(refined=True)][:2] == ["Sheila", "Sheila"]
    # two emptied names bound for one label: neither is passed on
    store.set_speaker_names({"Speaker C": "Chair"})
    store.conn.execute("DELETE FROM speaker_names WHERE speaker = 'Speaker B'")
    store.conn.commit()
    store.set_refined({a.turn_id: ["Speaker B"] * 3, c.turn_id: ["Speaker B"]})
    assert store.speaker_names(refined=True) == {"Speaker A": "Diane", "Speaker C": "Chair"}
    # Speaker A keeps one word of its own: it is still in the view, under its own name
    store.set_refined({a.turn_id: ["Speaker A", "Speaker B", "Speaker B"], c.turn_id: ["Speaker C"]})
    assert [(t.speaker, t.sender_name) for t in store.turns(refined=True)][:2] == [
        ("Speaker A", "Diane"), ("Speaker B", "Speaker B")]


def test_turns_of_one_utterance_share_the_gap_and_never_overlap():
    from voicekit.turns import extend_to_speech

    a, b = turn("Speaker A", "one two", 1.0), turn("Speaker B", "three", 2.0)  # a ends 1.55
    out = extend_to_speech([a, b], lambda lo, hi: (max(lo, 0.5), min(hi, 3.0)))
    assert out[0].start == 0.5 and out[1].end == 3.0
    assert out[0].end == out[1].start == round((1.55 + 2.0) / 2, 3)


def test_a_turn_is_only_ever_widened_to_its_speech():
    """Speech the VAD marks from after a turn's first word (or until before its last) never moves
    the turn's start later (or its end earlier) than its words."""
    from voicekit.turns import extend_to_speech

    a = turn("Speaker A", "one two three", 1.0)   # 1.0 - 1.85
    [out] = extend_to_speech([a], lambda lo, hi: (1.2, 1.5))
    assert (out.start, out.end) == (1.0, 1.85)
    [out] = extend_to_speech([a], lambda lo, hi: (0.8, 2.4))
    assert (out.start, out.end) == (0.8, 2.4)


def test_a_store_written_before_refined_words_existed_is_read_and_exported(tmp_path):
    """A meeting store of voicekit's first version (its `turns` table has no refined_words
    column) used to fail `voicekit export` with "no such column: refined_words"."""
    from voicekit.cli import main

    out = tmp_path / "old"
    out.mkdir()
    conn = sqlite3.connect(out / "meeting.sqlite")
    conn.executescript("""
        CREATE TABLE meeting (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE turns (id INTEGER PRIMARY KEY AUTOINCREMENT, channel TEXT NOT NULL,
            speaker TEXT NOT NULL, sender_name TEXT NOT NULL, text TEXT NOT NULL, start REAL NOT NULL,
            "end" REAL NOT NULL, words TEXT NOT NULL, metadata TEXT NOT NULL, emitted_at REAL,
            committed_at REAL NOT NULL, refined_speaker TEXT, sent INTEGER NOT NULL DEFAULT 0);
        CREATE TABLE speaker_names (speaker TEXT PRIMARY KEY, name TEXT NOT NULL);
        INSERT INTO meeting VALUES ('stem', '"meeting"');
        INSERT INTO turns (channel, speaker, sender_name, text, start, "end", words, metadata, committed_at)
            VALUES ('replay', 'Speaker A', 'Speaker A', 'hello there', 1.0, 2.0,
                    '[[1.0, 1.5, " hello", 0.9, "Speaker A"], [1.5, 2.0, " there", 0.9, "Speaker A"]]', '{}', 0);
    """)
    conn.close()
    assert main(["export", str(out)]) == 0
    assert (out / "meeting.txt").read_text(encoding="utf-8").strip().endswith("Speaker A: hello there")
    store = MeetingStore(out / "meeting.sqlite")
    assert [(t.speaker, t.text) for t in store.turns(refined=True)] == [("Speaker A", "hello there")]
    store.close()
    # that layout kept a refinement as one label per turn (refined_speaker, no refined_words): a
    # store review found the refined view dropping it
    with sqlite3.connect(out / "meeting.sqlite") as conn:
        conn.execute("UPDATE turns SET refined_speaker = 'Speaker B'")
    store = MeetingStore(out / "meeting.sqlite")
    assert [(t.speaker, t.text) for t in store.turns(refined=True)] == [("Speaker B", "hello there")]
    store.close()


def test_export_keeps_an_output_edited_by_hand_before_it_rewrites_it(tmp_path, capsys):
    """A journalist's trial corrected a misheard line in the .txt and .srt, then ran `voicekit
    export --speaker-names` to name a speaker: both corrections were overwritten, silently."""
    import json

    from voicekit.cli import main

    out = tmp_path / "interview"
    out.mkdir()
    store = MeetingStore(out / "meeting.sqlite")
    store.set_meta(stem="interview")
    store.commit(turn("Speaker A", "I need the design", 1.0))
    store.commit(turn("Speaker B", "me too", 3.0))
    store.close()
    assert main(["export", str(out)]) == 0
    txt, srt = out / "interview.txt", out / "interview.srt"
    assert not list(out.glob("*.edited*"))
    txt.write_text(txt.read_text(encoding="utf-8").replace("I need the design", "Neither did I"), encoding="utf-8")
    capsys.readouterr()
    assert main(["export", str(out), "--speaker-names", "Speaker A=Diane"]) == 0
    err = capsys.readouterr().err
    assert err == "warning: interview.txt was edited since voicekit wrote it: your version is kept as interview.edited.txt\n"
    assert "Diane: Neither did I" not in txt.read_text(encoding="utf-8")
    assert "Diane: I need the design" in txt.read_text(encoding="utf-8")
    assert "Speaker A: Neither did I" in (out / "interview.edited.txt").read_text(encoding="utf-8")
    assert "Diane" in srt.read_text(encoding="utf-8") and not (out / "interview.edited.srt").exists()
    # the record of the files is the store's, not the meeting's: not in the JSON
    assert "output_digests" not in json.loads((out / "interview.json").read_text(encoding="utf-8"))["meeting"]
    # an unedited output is rewritten as before; a second edit is kept beside the first
    assert main(["export", str(out)]) == 0
    assert capsys.readouterr().err == "" and len(list(out.glob("*.edited*"))) == 1
    txt.write_text("my notes", encoding="utf-8")
    assert main(["export", str(out)]) == 0
    assert (out / "interview.edited-2.txt").read_text(encoding="utf-8") == "my notes"
    # killed after writing the files and before recording them (a store review): the record is
    # the old files', the files are what the next export writes: no edit
    store = MeetingStore(out / "meeting.sqlite")
    store.set_meta(output_digests={name: "0" * 64 for name in store.meta()["output_digests"]})
    store.close()
    capsys.readouterr()
    assert main(["export", str(out)]) == 0
    assert capsys.readouterr().err == "" and len(list(out.glob("*.edited*"))) == 2


def test_a_damaged_metadata_value_is_left_out_and_the_turns_export(tmp_path, caplog):
    """A store review: one metadata value that is not JSON (the model's name, torn) made
    `voicekit export` an internal error (JSONDecodeError), keeping every committed turn out."""
    from voicekit.cli import main

    store = MeetingStore(tmp_path / "meeting.sqlite")
    store.set_meta(stem="m", model="tiny.en")
    store.commit(turn("Speaker A", "still here", 1.0))
    store.conn.execute("UPDATE meeting SET value = '{\"trunc' WHERE key = 'model'")
    assert store.meta() == {"stem": "m"}
    assert "the meeting's 'model' is damaged" in caplog.text
    store.close()
    assert main(["export", str(tmp_path)]) == 0
    assert (tmp_path / "m.txt").read_text(encoding="utf-8").strip().endswith("Speaker A: still here")


def test_a_nan_metadata_value_is_refused_and_one_stored_before_is_left_out(tmp_path, caplog):
    """A review: ``set_meta(gain=float("nan"))`` was stored, Python's reader took the NaN back,
    and `voicekit export` then failed on the JSON output with no file written."""
    from voicekit.cli import main

    store = MeetingStore(tmp_path / "meeting.sqlite")
    store.set_meta(stem="m")
    with pytest.raises(ValueError, match="Out of range float"):
        store.set_meta(gain=float("nan"), note="kept?")
    assert store.meta() == {"stem": "m"}   # nothing of the refused call
    store.commit(turn("Speaker A", "still here", 1.0))
    store.conn.execute("INSERT INTO meeting(key, value) VALUES ('gain', 'NaN'), ('peak', '[1, Infinity]')")
    store.conn.commit()
    assert store.meta() == {"stem": "m"}
    assert "the meeting's 'gain' is damaged" in caplog.text
    store.close()
    assert main(["export", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "m.json").read_text(encoding="utf-8"))["turns"][0]["text"] == "still here"


def test_a_replacement_a_killed_command_left_half_done_is_settled_by_the_next_command(tmp_path, capsys):
    """A store review: `replay --overwrite` killed (SIGKILL) before its first turn left the old
    meeting in OUT/.voicekit-replaced/ and an empty store in OUT; the next command's own set-aside
    moved the empty store over it, then deleted both: the meeting was gone. The next command now
    puts it back when the new meeting never committed a turn, and finishes the replacement when
    it did."""
    from voicekit.cli import main

    def meeting(folder, texts):
        store = MeetingStore(folder / "meeting.sqlite")
        store.set_meta(stem="m")
        for i, text in enumerate(texts):
            store.commit(turn("Speaker A", text, float(i)))
        store.close()

    out = tmp_path / "o"
    aside = out / ".voicekit-replaced"
    aside.mkdir(parents=True)
    meeting(aside, ["one", "two", "three"])   # the meeting --overwrite was replacing
    meeting(out, [])                          # the new one, killed before its first turn
    assert main(["export", str(out)]) == 0
    assert capsys.readouterr().err == (f"warning: a command that was replacing the meeting in {out} (--overwrite) was "
                                       "stopped before its first turn: that meeting is put back\n")
    assert not aside.exists()
    assert [t.text for t in MeetingStore(out / "meeting.sqlite").turns()] == ["one", "two", "three"]
    assert (out / "m.txt").read_text(encoding="utf-8").count("Speaker A:") == 3
    # killed after its first turn: the replacement stands, the old meeting goes
    aside.mkdir()
    meeting(aside, ["old"])
    assert main(["export", str(out)]) == 0
    assert "was stopped after its first turn: the meeting it replaced is deleted" in capsys.readouterr().err
    assert not aside.exists() and len(MeetingStore(out / "meeting.sqlite").turns()) == 3


def test_resume_point_is_after_the_audio_the_turns_and_the_kept_windows(tmp_path):
    """Where a session going on with the meeting (mic --append) starts: after the recorded
    duration, else (a crash wrote none) after the last turn, or after the last kept window when
    the last utterance's turns were not all committed; its utterances are numbered after the
    kept ones. Every label used, live, refined or named, is reported."""
    import numpy as np

    store = MeetingStore(tmp_path / "meeting.sqlite")
    assert (store.resume_point().start_time, store.resume_point().next_utterance) == (0.0, 0)
    a = store.commit(turn("Speaker A", "hello there", 0.0))
    b = store.commit(turn("Speaker B", "hi", 2.0))
    assert store.resume_point().start_time == b.end == 2.25
    vectors = np.ones((2, 256), np.float32) / 16
    store.add_embeddings(0, np.array([0.0, 0.25]), np.array([1.0, 1.25]), vectors)
    store.add_embeddings(4, np.array([2.0, 3.0]), np.array([3.0, 4.0]), vectors)   # a turn lost at 3-4 s
    assert (store.resume_point().start_time, store.resume_point().next_utterance) == (4.0, 5)
    store.set_meta(duration=30.0)
    assert store.resume_point().start_time == 30.0
    store.set_refined({a.turn_id: ["Speaker A", "Speaker C"], b.turn_id: ["Speaker B"]})
    store.set_speaker_names({"Speaker E": "Eve"})   # named, not carried by any turn: not used
    assert store.speaker_labels() == {"Speaker A", "Speaker B", "Speaker C"}
    assert store.unrefined_turns() == 0
    store.commit(turn("Speaker A", "again", 31.0))
    assert store.unrefined_turns() == 1
    store.close()


def test_a_store_is_a_context_manager(tmp_path):
    from voicekit.store import StoreError

    with MeetingStore(tmp_path / "m.sqlite") as store:
        store.set_meta(stem="m")
    with pytest.raises(StoreError):
        store.set_meta(stem="again")   # closed when the block ended
    with MeetingStore(tmp_path / "m.sqlite") as again:
        assert again.meta() == {"stem": "m"}


@pytest.mark.parametrize("start,end", [(float("nan"), 1.0), (0.0, float("inf"))])
def test_a_turn_with_impossible_times_is_refused_and_nothing_is_written(tmp_path, start, end):
    with MeetingStore(tmp_path / "m.sqlite") as store:
        with pytest.raises(ValueError, match="must be finite seconds"):
            store.commit(SpeakerTurn(speaker="Speaker A", text="hi", start=start, end=end))
        assert store.turns() == []


def test_access_problem_tells_permissions_from_damage_and_a_full_disk(tmp_path):
    """Only access is told as access: a damaged file and a full disk are not (the CLI names them
    apart); a read-only file system and a file SQLite may not write are named with their fix."""
    import errno

    from voicekit.store import StoreAccess, access_problem

    path = tmp_path / "meeting.sqlite"
    path.write_bytes(b"garbage garbage! " * 100)
    with pytest.raises(sqlite3.DatabaseError) as damaged:
        sqlite3.connect(path).execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    assert damaged.value.sqlite_errorname == "SQLITE_NOTADB"
    assert access_problem(path, damaged.value) is None
    assert access_problem(path, sqlite3.OperationalError("database or disk is full")) is None
    assert access_problem(path, OSError(errno.ENOSPC, "No space left on device")) is None
    assert access_problem(path, OSError(errno.EROFS, "Read-only file system")) == StoreAccess(
        f"cannot write {path} (read-only file system)", f"mount the file system of {tmp_path} read-write")
    # SQLite's own error for a store it opened read-only (mode=ro stands in for a file it may not write)
    path.unlink()
    MeetingStore(path).close()
    with pytest.raises(sqlite3.OperationalError) as readonly:
        sqlite3.connect(f"file:{path}?mode=ro", uri=True).execute("CREATE TABLE t (x)")
    assert readonly.value.sqlite_errorname.startswith("SQLITE_READONLY")
    access = access_problem(path, readonly.value)
    assert access is not None and access.problem == f"cannot write {path} (read-only)"


@pytest.mark.parametrize("folder", ["q?x", "h#1", "p%41"])
def test_a_store_in_a_folder_named_with_uri_characters_is_the_one_checked(tmp_path, monkeypatch, folder):
    """The CLI's store checks open the store by SQLite URI: unquoted, `out?x/meeting.sqlite`
    opened (and, its ?mode= lost, created) the file `out` beside it and checked nothing."""
    from voicekit.cli.meeting import _check_store_access, _unreadable_store

    monkeypatch.chdir(tmp_path)
    path = tmp_path / folder / "meeting.sqlite"
    path.parent.mkdir()
    with MeetingStore(path) as store:
        store.set_meta(a=1)
    _check_store_access(path, "x", write=True)
    assert _unreadable_store(path) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder]       # no stray file beside it
    path.write_bytes(b"not a database" * 100)
    assert _unreadable_store(path) is not None                          # the damage is seen


def test_another_programs_database_is_never_written_into(tmp_path):
    """A trial of the Python API: MeetingStore(path) on another application's SQLite file added
    voicekit's tables beside its own and switched it to WAL; the docstring promised a StoreError.
    It is refused and left byte for byte as it was (an empty database is a new store)."""
    from voicekit.store import StoreError

    path = tmp_path / "app.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users(id, name)")
    conn.execute("INSERT INTO users VALUES (1, 'Diane')")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match=r"app.sqlite is another SQLite database \(tables: users\), not a "
                                         r"voicekit meeting store: voicekit leaves it as it is; give a new path"):
        MeetingStore(path)
    assert path.read_bytes() == before and not (tmp_path / "app.sqlite-wal").exists()
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).close()
    with MeetingStore(empty) as store:
        assert store.turns() == []


def test_dropped_embeddings_leave_no_bytes_in_the_file(tmp_path, monkeypatch):
    """A review of the privacy trial: `export --drop-embeddings` left no window bytes only because
    this machine's SQLite is built with SECURE_DELETE; the store turns secure_delete on itself
    (here on connections that start with it off, as other builds do)."""
    import numpy as np

    real = sqlite3.connect

    def another_build(*args, **kwargs):  # noqa: ANN002, ANN003
        conn = real(*args, **kwargs)
        conn.execute("PRAGMA secure_delete=OFF")
        return conn

    monkeypatch.setattr(sqlite3, "connect", another_build)
    path = tmp_path / "meeting.sqlite"
    store = MeetingStore(path)
    assert store.conn.execute("PRAGMA secure_delete").fetchone()[0] == 1
    vectors = np.random.default_rng(7).standard_normal((40, 256)).astype(np.float32)
    store.add_embeddings(0, np.arange(40) * 0.25, np.arange(40) * 0.25 + 1.0, vectors)
    store.commit(turn("Speaker A", "hello there", 0.0))
    assert store.drop_embeddings() == 1
    store.close()
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("meeting.sqlite"))
    assert not any(vectors[i].tobytes()[:64] in data for i in range(40))


def test_the_store_records_its_layout_and_refuses_a_newer_one(tmp_path):
    """An ops trial: nothing recorded a store's layout, so a store written by a later voicekit
    would be read (and written) as if this one knew its tables. The layout is in SQLite's
    user_version; an older store (0) is read and marked; a newer one is refused as it is."""
    import sqlite3

    from voicekit.store.sqlite import SCHEMA_VERSION

    path = tmp_path / "meeting.sqlite"
    store = MeetingStore(path)
    store.commit(SpeakerTurn("Speaker A", "hello there", 0.0, 1.0))
    store.close()

    def version() -> int:
        with sqlite3.connect(path) as conn:
            return conn.execute("PRAGMA user_version").fetchone()[0]

    assert version() == SCHEMA_VERSION == 1
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 0")   # as every store before the layout was recorded
    store = MeetingStore(path)
    assert [t.text for t in store.turns()] == ["hello there"] and version() == 1
    store.close()
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    before = path.read_bytes()
    with pytest.raises(StoreError, match=r"was written by a newer voicekit \(meeting store layout 2; this voicekit "
                                         r"reads up to 1\): voicekit leaves it as it is; read it with the voicekit"):
        MeetingStore(path)
    assert path.read_bytes() == before
