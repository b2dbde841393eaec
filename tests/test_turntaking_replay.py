"""The replay entry point used by ``voicekit replay --members … --explain``."""

from __future__ import annotations

import io

from voicekit.attribution import RUNTIME_NOTE, Participant, SpeakerLabel
from voicekit.turns import SpeakerTurn
from voicekit.turntaking import OpenAIChatClient, explain_replay, parse_members, replay_room

ALICE = SpeakerLabel("Alice", None, "mic")
BOB = SpeakerLabel("Bob", None, "mic")
ROOM = {"members": [{"name": "Iris", "instructions": "Designer."}, {"name": "Elena", "instructions": "Engineer."}]}


def turns():
    script = [
        (ALICE, "Iris, can you sketch the new lobby?"),
        (ALICE, "nice!"),
        (BOB, "Elena and Iris, is the budget enough for both wings?"),
        (BOB, "What do you two think about moving the deadline?"),
        (ALICE, "I keep thinking the contractors underestimated the wiring work."),
        (BOB, "Elena, approve it"),
    ]
    for i, (label, text) in enumerate(script):
        yield SpeakerTurn(speaker=f"Speaker {label.name[0]}", text=text, start=i * 5.0, end=i * 5.0 + 3, turn_id=i + 1), label


def test_t8_replay_explains_each_rung():
    out = io.StringIO()
    steps = explain_replay(turns(), parse_members(ROOM), out=out)
    assert [s.decision.decided_by for s in steps] == [
        "mention",
        "continuation",
        "group_address",
        "group_address",
        "fallback",
        "mention",
    ]
    assert steps[1].decision.responders == ("Iris",)
    assert steps[2].decision.responders == ("Elena", "Iris")
    # Iris spoke more recently (step 3 ended with her), so Elena goes first
    assert steps[3].decision.responders == ("Elena", "Iris")
    assert steps[4].decision.responders == ("Elena",)
    assert [s.decision.turn_id for s in steps] == [1, 2, 3, 4, 5, 6]
    text = out.getvalue()
    assert "Alice: Iris, can you sketch the new lobby?" in text
    assert "[continuation] -> Iris" in text
    assert "6 turns decided: continuation=1, fallback=1, group_address=2, mention=2; answered: Iris 4, Elena 4" in text


def test_an_answer_only_name_nobody_had_is_named_in_the_closing_line():
    """A panel trial: `answer_only: [Dianne]` (for Diane) silenced its member on every turn, and
    `--explain` said only "excluded by speak policy: Scribe 6"."""
    room = parse_members({"members": ["Iris", {"name": "Scribe", "answer_only": ["Dianne", "Bob"]}]})
    out = io.StringIO()
    explain_replay(turns(), room, out=out)
    assert out.getvalue().splitlines()[-1] == (
        "6 turns decided: continuation=2, fallback=1, group_address=1, mention=2; answered: Iris 6, Scribe 1; excluded by "
        "speak policy: Scribe 3; answer_only names nobody who spoke: Dianne (Scribe); the speakers: Alice, Bob")


def test_t12_explain_shows_a_person_named_like_a_member_as_a_participant():
    """A person named "Iris" (a --speaker-names name, a known voice) beside the member Iris reads
    "Iris (a participant)" in the explain block, as in the members' views; found by a new-user
    trial, where both read "Brian"."""
    iris = SpeakerLabel("Iris", None, "replay")
    turn = SpeakerTurn(speaker="Speaker B", text="Elena, what do you think?", start=6.59, end=9.0, turn_id=1)
    out = io.StringIO()
    [step] = explain_replay([(turn, iris)], parse_members(ROOM), out=out)
    assert step.shown == "Iris (a participant)" and step.decision.speaker == "Iris"
    assert out.getvalue().splitlines()[0] == "[00:00:06.6 → 00:00:09.0] Iris (a participant): Elena, what do you think?"
    assert out.getvalue().splitlines()[-1].startswith("1 turn decided: mention=1; ")   # one turn, not "1 turns"


def test_t15_replay_binds_the_registered_source_not_a_claimed_id():
    """The participant a turn came from is found as attribution finds it (A5): by an enrolled
    voice's identity on any channel, by a participant id only on that participant's channels."""
    room = {"members": [{"name": "Iris", "answer_only_participants": ["p-bob"]}]}
    bob = Participant("p-bob", "Bob", channels=("room1/1",))
    voice = Participant("voice:Bob", "Bob", identity_id="voice:Bob")
    room_voice = {"members": [{"name": "Iris", "answer_only_participants": ["voice:Bob"]}]}

    def turn(channel: str, **meta) -> SpeakerTurn:
        return SpeakerTurn(speaker="Speaker A", text="Iris?", start=0, end=1, channel=channel, metadata=meta)

    cases = [
        (turn("room1/1", participant_id="p-bob"), ("Iris",)),   # Bob's own lane
        (turn("chat", participant_id="p-bob"), ()),             # his id claimed on another channel
        (turn("room1/1", participant_id="p-eve"), ()),          # someone else
        (turn("room1/1"), ()),                                  # no source at all
    ]
    steps = list(replay_room([(t, BOB) for t, _ in cases], parse_members(room), participants=[bob]))
    assert [s.decision.responders for s in steps] == [want for _, want in cases]
    # without the participant records nothing names a registered source, whatever the metadata says
    steps = list(replay_room([(cases[0][0], BOB)], parse_members(room)))
    assert steps[0].decision.responders == ()
    # an enrolled voice names its speaker on every channel
    steps = list(replay_room([(turn("replay", identity_id="voice:Bob"), BOB)], parse_members(room_voice),
                             participants=[voice]))
    assert steps[0].decision.responders == ("Iris",)


def test_t11_replay_with_local_session_generates_replies(chat_server):
    chat_server.push("Iris: Sketching now.", "Thanks!", "Elena: Budget is tight.", "Iris: Agreed.")
    client = OpenAIChatClient("m", base_url=chat_server.base_url, api_key="x")
    script = list(turns())[:3]
    steps = list(replay_room(script, parse_members(ROOM), client=client))
    assert [r.text for r in steps[0].replies] == ["Sketching now."]
    assert [(r.member, r.text) for r in steps[1].replies] == [("Iris", "Thanks!")]  # continuation
    assert [r.text for r in steps[2].replies] == ["Budget is tight.", "Agreed."]
    last_view = chat_server.requests[-1]["body"]["messages"]
    assert last_view[-1] == {"role": "user", "content": 'Elena: "Budget is tight."' + "\n\n" + RUNTIME_NOTE}
    assert {"role": "assistant", "content": "Sketching now."} in last_view
