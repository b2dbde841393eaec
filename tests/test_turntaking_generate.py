"""T11 sequential generation with the first reply in the next member's context; T14 applied."""

from __future__ import annotations

import threading
import time

import pytest

from _chat_server import ChatServer, Scripted
from voicekit.attribution import RUNTIME_NOTE, SpeakerLabel
from voicekit.turntaking import (
    Member,
    ModelDirector,
    OpenAIChatClient,
    TranscriptEntry,
    TurnTaker,
    generate_replies,
)

ALICE = SpeakerLabel("Alice", None, "mic")
MEMBERS = [Member("Elena", "You are Elena."), Member("Iris", "You are Iris.")]


def test_t11_second_member_sees_first_reply(chat_server):
    chat_server.push(
        Scripted(content="Elena: Friday is too early.", delay_s=0.3),
        "I disagree with Elena, Friday works.",
    )
    client = OpenAIChatClient("member-model", base_url=chat_server.base_url, api_key="x")
    taker = TurnTaker(MEMBERS)
    transcript = [TranscriptEntry("What do you two think about Friday?", label=ALICE)]
    decision = taker.decide(transcript[0].text, ALICE)
    assert (decision.decided_by, decision.responders) == ("group_address", ("Elena", "Iris"))

    replies = list(
        generate_replies(decision, members=MEMBERS, transcript=transcript, client=client, turn_taker=taker)
    )
    assert [r.member for r in replies] == ["Elena", "Iris"]
    assert replies[0].raw == "Elena: Friday is too early."
    assert replies[0].text == "Friday is too early."  # T14
    assert replies[1].text == "I disagree with Elena, Friday works."
    first, second = (r["body"]["messages"] for r in chat_server.requests)
    # Elena saw only Alice; Iris saw Alice and Elena's finished (stripped) reply, as user.
    assert [m["role"] for m in first] == ["system", "user"]
    assert [m["role"] for m in second] == ["system", "user", "user"]
    # labelled (two speakers seen from Iris) with the A9 note on the last user message only
    assert second[2]["content"] == 'Elena: "Friday is too early."' + "\n\n" + RUNTIME_NOTE
    assert second[1]["content"] == 'Alice: "What do you two think about Friday?"'
    assert [e.member for e in transcript] == [None, "Elena", "Iris"]
    # the ladder knows Iris spoke last: a short follow-up continues with her
    follow = taker.decide("why?", ALICE)
    assert (follow.decided_by, follow.responders) == ("continuation", ("Iris",))


def test_t11_never_in_parallel():
    active = []
    overlap = []
    lock = threading.Lock()

    class SlowClient:
        def complete(self, messages, **kwargs):
            with lock:
                active.append(1)
                overlap.append(len(active))
            time.sleep(0.05)
            with lock:
                active.pop()
            return f"reply {len(messages)}"

    members = MEMBERS + [Member("Mei")]
    decision = TurnTaker(members).decide("everyone, hi", ALICE)
    transcript = [TranscriptEntry("everyone, hi", label=ALICE)]
    replies = list(generate_replies(decision, members=members, transcript=transcript, client=SlowClient()))
    assert overlap == [1, 1, 1]
    # each view is one message longer than the one before: the previous reply is in it
    assert [r.text for r in replies] == ["reply 2", "reply 3", "reply 4"]


@pytest.mark.parametrize("failure", [Scripted(status=500), Scripted(raw_body="<html>502 Bad Gateway</html>")],
                         ids=["http-500", "200-not-json"])
def test_t11_failed_member_does_not_stop_the_next(chat_server, failure):
    """A 200 whose body is not JSON (a proxy's error page) raised the SDK's JSONDecodeError through
    generate_replies (a user trial): it is a ModelClientError, and the next member still answers."""
    chat_server.push(failure, "Iris here.")
    client = OpenAIChatClient("m", base_url=chat_server.base_url, api_key="x")
    taker = TurnTaker(MEMBERS)
    decision = taker.decide("Elena and Iris, status?", ALICE)
    transcript = [TranscriptEntry("Elena and Iris, status?", label=ALICE)]
    replies = list(generate_replies(decision, members=MEMBERS, transcript=transcript, client=client, turn_taker=taker))
    assert replies[0].error is not None and replies[0].text == "" and "ModelClientError" in replies[0].error
    assert replies[1].text == "Iris here." and replies[1].error is None
    assert [e.member for e in transcript] == [None, "Iris"]


def test_t11_a_client_that_raises_anything_does_not_stop_the_next_member():
    """A contract audit: a client of the caller's that raised TimeoutError (not the ModelClientError
    the protocol asks for) ended generate_replies, and the second member was never asked."""
    class Flaky:
        def __init__(self):
            self.calls = 0

        def complete(self, messages, **_):
            self.calls += 1
            if self.calls == 1:
                raise TimeoutError("socket")
            return None if self.calls == 2 else "Iris here."

    taker = TurnTaker(MEMBERS + [Member("Mei")])
    decision = taker.decide("Elena, Mei and Iris, status?", ALICE)
    assert decision.responders == ("Elena", "Mei", "Iris")
    transcript = [TranscriptEntry("Elena, Mei and Iris, status?", label=ALICE)]
    replies = list(generate_replies(decision, members=MEMBERS + [Member("Mei")], transcript=transcript,
                                    client=Flaky(), turn_taker=taker))
    assert [(r.member, r.text, r.error) for r in replies] == [
        ("Elena", "", "TimeoutError: socket"), ("Mei", "", "the client returned NoneType, not str"),
        ("Iris", "Iris here.", None)]
    assert [e.member for e in transcript] == [None, "Iris"]


def test_t11_director_and_members_end_to_end():
    with ChatServer() as director_server, ChatServer() as member_server:
        director_server.push('{"responder": "B", "chime_in": true}')
        member_server.push("Iris: That sounds rough.", "Elena: Want to talk it through?")
        director = ModelDirector(OpenAIChatClient("small", base_url=director_server.base_url, api_key="x"))
        client = OpenAIChatClient("big", base_url=member_server.base_url, api_key="x")
        taker = TurnTaker(MEMBERS, director=director)
        text = "I had the worst day at work today, honestly."
        transcript = [TranscriptEntry(text, label=ALICE)]
        decision = taker.decide(text, ALICE)
        assert (decision.decided_by, decision.responders, decision.chime_in) == (
            "director",
            ("Iris", "Elena"),
            True,
        )
        replies = list(generate_replies(decision, members=MEMBERS, transcript=transcript, client=client))
        assert [r.text for r in replies] == ["That sounds rough.", "Want to talk it through?"]
        elena_view = member_server.requests[1]["body"]["messages"]
        assert elena_view[-1] == {"role": "user", "content": 'Iris: "That sounds rough."' + "\n\n" + RUNTIME_NOTE}
