"""The replay entry point used by ``voicekit replay --members … --explain``."""

from __future__ import annotations

import io

from voicekit.attribution import RUNTIME_NOTE, SpeakerLabel
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


def test_t15_replay_reads_participant_ids():
    room = {"members": [{"name": "Iris", "answer_only_participants": ["p-bob"]}]}
    turn = SpeakerTurn(speaker="Speaker A", text="Iris?", start=0, end=1, metadata={"participant_id": "p-bob"})
    other = SpeakerTurn(speaker="Speaker B", text="Iris?", start=2, end=3, metadata={"participant_id": "p-eve"})
    steps = list(replay_room([(turn, BOB), (other, BOB)], parse_members(room)))
    assert [s.decision.responders for s in steps] == [("Iris",), ()]


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
