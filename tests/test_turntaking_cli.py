"""``voicekit replay --members … --explain``: the on_turn callback over real SpeakerTurns (no audio)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from voicekit.cli import CliError, main, speak_decisions
from voicekit.hooks import HookRunner, HookTrigger
from voicekit.turns import SpeakerTurn

ROOT = Path(__file__).resolve().parent.parent

MEMBERS_YAML = """\
floor: always
members:
  - name: Iris
    instructions: You are Iris, the team's designer.
  - name: Elena
    instructions: You are Elena, a cautious engineer.
    answer_only: [Diane]
"""


@pytest.fixture
def members(tmp_path: Path) -> Path:
    path = tmp_path / "members.yaml"
    path.write_text(MEMBERS_YAML, encoding="utf-8")
    return path


def turn(speaker: str, text: str, start: float, name: str | None = None, channel: str = "replay",
         turn_id: int | None = None, unnamed: bool = False) -> SpeakerTurn:
    """A committed pipeline turn: diarization label, text, times; ``sender_name`` is ``name`` (a
    rename by --speaker-names or a hook), else the label, stamped as the pipeline stamps it
    (``turns.speaker_turns``). ``unnamed``: no sender_name, as an unnamed LiveKit participant's
    lane commits its turns (``livekit_bot``)."""
    meta = {} if unnamed else {"sender_name": name if name is not None else speaker}
    return SpeakerTurn(speaker=speaker, text=text, start=start, end=start + 1.5, channel=channel,
                       metadata=meta, turn_id=turn_id)


def test_explain_prints_each_decision_with_its_rung(members: Path):
    out = io.StringIO()
    on_turn = speak_decisions(members, explain=True, out=out)
    on_turn(turn("Speaker A", "Iris, can you sketch the lobby?", 0.0, "Diane", turn_id=1))
    on_turn(turn("Speaker A", "nice", 2.0, "Diane", turn_id=2))
    on_turn(turn("Speaker B", "What do you two think about Friday?", 4.0, "Sheila", turn_id=3))
    on_turn(turn("Speaker B", "The budget worries me a great deal this quarter.", 6.0, "Sheila"))
    text = out.getvalue()
    lines = text.splitlines()
    assert lines[0] == "[00:00:00.0 → 00:00:01.5] Diane: Iris, can you sketch the lobby?"
    assert lines[1].strip() == "[mention] -> Iris"
    assert lines[3].strip() == "[continuation] -> Iris"
    # Elena answers only Diane (T15, read from the attribution label): Sheila's group address
    # reaches Iris alone, and Elena is listed as excluded.
    assert lines[4] == "[00:00:04.0 → 00:00:05.5] Sheila: What do you two think about Friday?"
    assert lines[5].strip() == "[group_address] -> Iris (Elena excluded by speak policy)"
    # her refusal of a turn that did not address her is counted at the end, not on its line
    assert lines[7].strip() == "[fallback] -> Iris"
    steps = on_turn.steps
    assert [s.decision.decided_by.value for s in steps] == ["mention", "continuation", "group_address", "fallback"]
    assert [s.label.text for s in steps] == ["Diane", "Diane", "Sheila", "Sheila"]
    assert [s.decision.turn_id for s in steps] == [1, 2, 3, None]
    assert on_turn.summary() == ("4 turns decided: continuation=1, fallback=1, group_address=1, mention=1; "
                                 "answered: Iris 4; excluded by speak policy: Elena 2")


def test_explain_in_a_livekit_room_opens_each_block_with_the_lane(members: Path):
    """``voicekit livekit --explain``: each block opens with the turn's channel, as the plain
    lines of the room do, and the decision line is indented past it."""
    out = io.StringIO()
    on_turn = speak_decisions(members, explain=True, out=out, channels=True)
    on_turn(turn("Diane", "Iris, can you sketch the lobby?", 0.0, "Diane", channel="standup/1"))
    on_turn(turn("@standup/2", "Sounds good to me.", 2.0, channel="standup/2", unnamed=True))
    assert out.getvalue().splitlines() == [
        "standup/1  [00:00:00.0 → 00:00:01.5] Diane: Iris, can you sketch the lobby?",
        "               [mention] -> Iris",
        "standup/2  [00:00:02.0 → 00:00:03.5] @standup/2: Sounds good to me.",
        "               [continuation] -> Iris",
    ]


def test_an_unnamed_participant_reads_as_its_channel_label_and_matches_no_name(tmp_path: Path):
    """A trial: an unnamed LiveKit participant's turn (no sender_name, speaker ``@standup/2``)
    was labelled with the name "@standup/2" (shown "standup/2") in the decisions, while the store
    and the model read the channel label: a channel label has no name and never matches a name
    (A4, A6; T15), not even a member's answer_only entry spelt like it."""
    from voicekit.store import MeetingStore

    path = tmp_path / "members.yaml"
    path.write_text("floor: always\nmembers:\n  - name: Iris\n    answer_only: ['@standup/2', standup/2]\n"
                    "  - name: Elena\n", encoding="utf-8")
    lane = turn("@standup/2", "and so my fellow americans", 19.1, channel="standup/2", unnamed=True)
    out = io.StringIO()
    on_turn = speak_decisions(path, explain=True, out=out, channels=True)
    on_turn(lane)
    (step,) = on_turn.steps
    store = MeetingStore(tmp_path / "meeting.sqlite")
    assert (step.label.name, step.label.text) == (None, store.labels([store.commit(lane)])[0].text)
    assert step.label.text == "@standup/2"
    assert step.decision.responders == ("Elena",) and step.decision.excluded == ("Iris",)
    assert out.getvalue().splitlines()[0] == "standup/2  [00:00:19.1 → 00:00:20.6] @standup/2: and so my fellow americans"
    store.close()


def test_labels_come_from_attribution_sender_name_rank_and_channel(members: Path):
    on_turn = speak_decisions(members)  # no --explain: decides, prints nothing
    on_turn(turn("Speaker A", "Hello everyone", 0.0, "Diane"))
    on_turn(turn("Speaker B", "Hi, I am Diane too", 2.0, "DIANE"))  # reads alike: ranked (A11)
    on_turn(turn("Speaker C", "and me", 4.0))  # no rename: the diarization label is the name
    on_turn(turn("Speaker D", "hello from the room", 6.0, "Diane", channel="room1/2"))
    labels = [s.label for s in on_turn.steps]
    assert [lab.text for lab in labels] == ["Diane", "DIANE (2)", "Speaker C", "Diane (3)"]
    assert [lab.channel for lab in labels] == ["replay", "replay", "replay", "room1/2"]
    # T15 reads the label: Elena answers "Diane" and "Diane (3)" (same name, another person with
    # a rank), never "DIANE (2)".
    assert on_turn.steps[1].decision.excluded == ("Elena",)
    assert on_turn.steps[3].decision.excluded == ()


def test_a_resumed_meeting_seeds_the_ranks_as_the_store_has_them(members: Path, tmp_path: Path):
    """A review: `mic --append --members`: a session whose first turn is "ALICE" (Speaker B) read
    "ALICE" in the decisions while the store and the model read "ALICE (2)" (the stored meeting
    had "Alice" from Speaker A first). The stored turns are ranked first, deciding nothing."""
    from voicekit.store import MeetingStore

    store = MeetingStore(tmp_path / "meeting.sqlite")
    earlier = [store.commit(turn("Speaker A", "hello", 0.0, "Alice")),
               store.commit(turn("Speaker B", "hi", 2.0, "ALICE"))]
    again = store.commit(turn("Speaker B", "me again", 4.0, "ALICE"))
    expected = store.labels([again])[0].text
    on_turn = speak_decisions(members)
    on_turn.seed(earlier)
    on_turn(again)
    assert expected == "ALICE (2)" and [s.label.text for s in on_turn.steps] == [expected]
    fresh = speak_decisions(members)   # without the seed, the session's first "ALICE" is bare
    fresh(again)
    assert fresh.steps[0].label.text == "ALICE"
    store.close()


def test_a_resumed_meeting_goes_on_with_the_floor_state_of_its_stored_turns(members: Path, tmp_path: Path):
    """A user trial: `mic --append --members` started the ladder afresh, so after a session in
    which Iris answered last, the next fallback went to Iris again (T5: least recent first gives
    Elena). The stored turns are decided again in silence: no step, no hook call."""
    from voicekit.hooks import HookRunner, HookTrigger

    earlier = [turn("Speaker A", "Iris, can you sketch the lobby?", 0.0, "Diane", turn_id=1)]
    later = turn("Speaker A", "The budget worries me a great deal this quarter.", 9.0, "Diane", turn_id=2)
    heard = []
    hooks = HookRunner()
    hooks.register(heard.append, HookTrigger.ON_SPEAK_DECISION)
    resumed = speak_decisions(members, hooks=hooks)
    resumed.seed(earlier)
    assert resumed.steps == [] and heard == []
    resumed(later)
    assert [(s.decision.decided_by.value, s.decision.responders) for s in resumed.steps] == [("fallback", ("Elena",))]
    assert [d.turn_id for d in heard] == [2] and resumed.summary() == "1 turn decided: fallback=1; answered: Elena 1"
    fresh = speak_decisions(members)   # without the seed Iris has not answered yet: first of the two
    fresh(later)
    assert fresh.steps[0].decision.responders == ("Iris",)


def test_an_enrolled_voice_keeps_its_name_and_is_the_source_a_policy_binds(tmp_path: Path):
    """With the pipeline's registered participants (an enrolled voice matched, A11 / T15), the
    voice keeps the bare name even when a look-alike spoke first, and a member bound to it
    answers its turns only."""
    from voicekit.voiceprints import IDENTITY_PREFIX, Voiceprint

    path = tmp_path / "members.yaml"
    path.write_text("members:\n  - name: Iris\n    answer_only_participants: [voice:Diane]\n", encoding="utf-8")
    diane = Voiceprint("Diane", vector=None, seconds=30.0).participant  # what Pipeline.participants() holds
    on_turn = speak_decisions(path, participants=lambda: [diane])
    on_turn(turn("Speaker B", "Iris, I am Diane, approve it", 0.0, "DIANE"))  # a look-alike, no voice
    voiced = turn("Speaker A", "Iris, approve it", 2.0, "Diane")
    on_turn(voiced.replace(metadata={**voiced.metadata, "identity_id": IDENTITY_PREFIX + "Diane"}))
    assert [s.label.text for s in on_turn.steps] == ["DIANE (2)", "Diane"]
    assert [s.decision.responders for s in on_turn.steps] == [(), ("Iris",)]


def test_a_turn_that_is_not_a_persons_does_not_stop_later_decisions(members: Path):
    """A hook may mark a turn as a runtime event or an assistant reply: it gets no label and no
    decision, and every later person's turn is still decided (its register id is its own)."""
    on_turn = speak_decisions(members)
    event = turn("Speaker A", "recording started", 0.0, "Diane")
    on_turn(event.replace(metadata={**event.metadata, "role": "event"}))
    on_turn(turn("Speaker A", "Iris, can you sketch the lobby?", 2.0, "Diane"))
    on_turn(turn("Speaker B", "Elena, is Friday safe?", 4.0, "Sheila"))
    assert [(s.label.text, s.decision.responders) for s in on_turn.steps] == [
        ("Diane", ("Iris",)), ("Sheila", ())]
    assert on_turn.steps[1].decision.excluded == ("Elena",)


def test_nothing_is_printed_without_explain(members: Path, capsys):
    on_turn = speak_decisions(members)
    on_turn(turn("Speaker A", "Iris?", 0.0, "Diane"))
    assert capsys.readouterr().out == ""
    assert on_turn.steps[0].decision.responders == ("Iris",)


def test_decisions_reach_on_speak_decision_hooks(members: Path):
    runner = HookRunner()
    seen = []
    runner.register(seen.append, HookTrigger.ON_SPEAK_DECISION)
    try:
        on_turn = speak_decisions(members, hooks=runner)
        on_turn(turn("Speaker A", "Elena, is Friday safe?", 0.0, "Diane"))
    finally:
        runner.close()
    assert [(d.decided_by.value, d.responders, d.speaker) for d in seen] == [("mention", ("Elena",), "Diane")]


def test_a_hook_script_on_the_command_line_receives_speak_decisions(members: Path, tmp_path: Path, capsys):
    """T8 from the CLI: `--hook` registers a script's on_speak_decision (beside on_transcription),
    and a replay of a real recording with --members delivers every decision to it."""
    log = tmp_path / "decisions.txt"
    script = tmp_path / "decisions.py"
    script.write_text("from pathlib import Path\n"
                      f"LOG = Path({str(log)!r})\n"
                      "def on_speak_decision(decision):\n"
                      "    with LOG.open('a') as f:\n"
                      "        f.write(f'{decision.speaker}|{decision.decided_by.value}|{\",\".join(decision.responders)}\\n')\n",
                      encoding="utf-8")
    falcon = ROOT.parent / "shared" / "eval" / "picovoice_falcon" / "test.wav"
    assert main(["replay", str(falcon), "--out", str(tmp_path / "out"), "--quiet",
                 "--members", str(members), "--hook", str(script)]) == 0
    lines = log.read_text(encoding="utf-8").splitlines()
    print(lines)
    assert len(lines) == 3  # the recording's three turns, one decision each
    # no name is said and no director is configured: T5 gives each turn to the one member who may
    # answer it (Elena answers only Diane, and no speaker is named Diane here)
    assert lines == ["Speaker A|fallback|Iris", "Speaker B|fallback|Iris", "Speaker C|fallback|Iris"]
    # without --explain the decisions are not printed one by one, but their count is
    err = capsys.readouterr().err
    assert "turn-taking: 3 turns decided:" in err and "(--explain shows each)" in err
    assert "telephone-band" not in err  # a wideband recording gets no speaker-count hint


def test_a_person_named_like_a_member_reads_the_same_in_explain_and_in_the_session(members: Path, tmp_path: Path,
                                                                                    capsys):
    """A trial: with --members (a member Iris) and --speaker-names "Speaker B=Iris", --explain
    showed "Iris (a participant)" and the local session got `Iris: "…"`. Both now mark her."""
    import json

    falcon = ROOT.parent / "shared" / "eval" / "picovoice_falcon" / "test.wav"
    out = tmp_path / "out"
    assert main(["replay", str(falcon), "--out", str(out), "--members", str(members), "--explain",
                 "--speaker-names", "Speaker B=Iris", "--session", "local"]) == 0
    explained = [line for line in capsys.readouterr().out.splitlines() if "] Iris" in line]
    assert len(explained) == 1 and "] Iris (a participant): " in explained[0], explained
    sent = [part["text"] for line in (out / "session.jsonl").read_text(encoding="utf-8").splitlines()
            for event in [json.loads(line)] if event.get("type") == "conversation.item.create"
            for part in event["item"]["content"] if part["text"].startswith(("Iris", "Speaker B"))]
    assert len(sent) == 1 and sent[0].startswith('Iris (a participant): "'), sent


def test_an_on_speak_decision_hook_without_members_is_reported_unused(tmp_path: Path, capsys):
    script = tmp_path / "decisions.py"
    script.write_text("def on_speak_decision(decision):\n    print(decision)\n", encoding="utf-8")
    falcon = ROOT.parent / "shared" / "eval" / "picovoice_falcon" / "test.wav"
    assert main(["replay", str(falcon), "--out", str(tmp_path / "out"), "--quiet", "--hook", str(script)]) == 0
    err = capsys.readouterr().err
    assert "decisions.py:on_speak_decision will not be called: speak decisions are made only with" in err


def test_the_room_a_members_file_holds_decides_as_the_file_does(members: Path):
    """A trial of the Python API: speak_decisions(load_members(path)) raised a TypeError from
    pathlib; the RoomConfig is taken as it is."""
    from voicekit.turntaking import load_members

    by_path, by_room = speak_decisions(members), speak_decisions(load_members(members))
    for decide in (by_path, by_room):
        decide(turn("Speaker A", "Iris, can you sketch the lobby?", 0.0, "Diane"))
        decide(turn("Speaker B", "The budget worries me a great deal this quarter.", 2.0, "Sheila"))
    assert by_room.summary() == by_path.summary() == ("2 turns decided: fallback=1, mention=1; answered: Iris 2; "
                                                         "excluded by speak policy: Elena 1")


def test_bad_members_file_is_a_cli_error(tmp_path: Path):
    with pytest.raises(CliError, match="cannot read"):
        speak_decisions(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("members: []\n", encoding="utf-8")
    with pytest.raises(CliError, match="--members"):
        speak_decisions(bad)


def test_explain_needs_members(capsys):
    assert main(["replay", "missing.wav", "--explain"]) == 2
    assert "--members" in capsys.readouterr().err


def test_replay_help_lists_members_and_explain():
    done = subprocess.run([sys.executable, "-m", "voicekit.cli", "replay", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=True)
    assert "--members MEMBERS.yaml" in done.stdout
    assert "--explain" in done.stdout
    assert "turn-taking" in done.stdout
