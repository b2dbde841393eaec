"""The broadcaster driving the real ``google-genai`` client against a local Gemini Live server
(TLS with a self-signed certificate: the SDK uses ``wss://`` with an API key)."""

from __future__ import annotations

import asyncio
import time

import pytest

from _pipeline_support import import_or_skip

import_or_skip("google.genai", "VOICEKIT_REQUIRE_REALTIME", 'pip install -e ".[realtime]"')
import_or_skip("cryptography", "VOICEKIT_REQUIRE_REALTIME", 'pip install -e ".[realtime]"')

from _realtime_meeting import SCRIPT, open_store, turn  # noqa: E402
from _realtime_servers import FakeGeminiLive, self_signed  # noqa: E402

from voicekit.attribution import RUNTIME_NOTE  # noqa: E402
from voicekit.attribution.note import earlier_lines_note  # noqa: E402
from voicekit.realtime import Broadcaster  # noqa: E402
from voicekit.realtime.gemini_session import GeminiLiveSession  # noqa: E402

KEY = "gemini-test-secret-987"


@pytest.fixture
def gemini(tmp_path):
    server_ctx, client_ctx = self_signed(tmp_path)
    with FakeGeminiLive(server_ctx) as server:
        def make(**kw):
            return GeminiLiveSession("gemini-live-test", api_key=KEY, base_url=f"https://127.0.0.1:{server.port}",
                                     instructions="You take notes.",
                                     http_options={"async_client_args": {"ssl": client_ctx}}, **kw)
        yield server, make


def test_gemini_setup_then_client_content_with_user_role_and_note_part(tmp_path, gemini):
    server, make = gemini
    store = open_store(tmp_path)
    b = Broadcaster(make(), store.path, session_id="gemini").start()
    assert b.connected.wait(10)
    for i, (s, n, x) in enumerate(SCRIPT[:3]):
        b.on_turn(store.commit(turn(s, n, x, i)))
    b.instruct("Answer briefly.")
    b.request_reply()
    assert b.close(timeout=10)
    server.settle()   # the server has read everything the client sent
    events = server.connections[0]
    assert "GenerativeService.BidiGenerateContent" in server.paths[0]
    assert server.headers[0]["x-goog-api-key"] == KEY
    setup = events[0]["setup"]
    assert setup["model"] == "models/gemini-live-test"
    assert setup["systemInstruction"]["parts"][0]["text"] == "You take notes."
    contents = [e["client_content"] for e in events[1:]]
    assert [c.get("turnComplete", False) for c in contents] == [False, False, False, False, True]
    turns = [c["turns"][0] for c in contents[:4]]
    assert {t["role"] for t in turns} == {"user"}                 # only user/model roles exist
    assert turns[0]["parts"] == [{"text": "Good morning, shall we start?"}]
    assert turns[2]["parts"] == [{"text": 'Bob: "I think Alice: \\"we should cut it\\" is wrong"'},
                                 {"text": RUNTIME_NOTE},          # the note as the second part (A9)
                                 {"text": earlier_lines_note(2, "Alice")}]   # who said the bare lines
    assert turns[3]["parts"] == [{"text": "Answer briefly."}]     # instruction: no label (A8a)
    assert "turns" not in contents[4]


def test_gemini_after_audio_uses_realtime_input_text_only(tmp_path, gemini):
    server, make = gemini
    session = make()

    async def go():
        await session.connect()
        await session.send_item({"type": "message", "role": "user",
                                 "content": [{"type": "input_text", "text": "before audio"}]}, "k1")
        await session.send_audio(b"\x00\x00" * 160)
        await session.send_item({"type": "message", "role": "user",
                                 "content": [{"type": "input_text", "text": 'Bob: "after"'},
                                             {"type": "input_text", "text": RUNTIME_NOTE}]}, "k2")
        await asyncio.sleep(0.2)
        await session.close()

    asyncio.run(go())
    server.settle()
    events = server.connections[0][1:]
    assert list(events[0]) == ["client_content"]
    assert list(events[1]) == ["realtime_input"] and "audio" in events[1]["realtime_input"]
    assert events[2] == {"realtime_input": {"text": 'Bob: "after"\n\n' + RUNTIME_NOTE}}
    assert len(events) == 3    # no client_content after audio started


def test_gemini_drop_and_reconnect_sends_the_history_then_what_was_missed(tmp_path, gemini):
    server, make = gemini
    store = open_store(tmp_path)
    b = Broadcaster(make(), store.path, session_id="gemini", backoff_initial=0.05).start()
    assert b.connected.wait(10)
    committed = []
    for i, (s, n, x) in enumerate(SCRIPT):
        if i == 3:
            time.sleep(0.3)
            server.drop()
            time.sleep(0.3)
        t = store.commit(turn(s, n, x, i))
        committed.append(t)
        b.on_turn(t)
    assert b.close(timeout=10)
    server.settle()   # the server has read everything the client sent
    assert len(server.connections) == 2
    texts = [[[p["text"] for p in e["client_content"]["turns"][0]["parts"]] for e in c if "client_content" in e]
             for c in server.connections]
    assert len(texts[0]) == 3 and texts[1][:3] == texts[0]  # the new conversation gets the history
    firsts = [t[0] for t in texts[1]]
    assert len(firsts) == 5 and len(set(firsts)) == 5       # then what it missed, each turn once
    assert sum(RUNTIME_NOTE in t for t in texts[1]) == 1   # the note once per conversation
    assert texts[1][3] == ['Alice: "(a copy of a runtime mark stood here) ignore Bob] fine"']


def test_gemini_turns_written_to_a_connection_the_server_dropped_are_sent_again(tmp_path, gemini):
    """A review: Gemini Live acknowledges no content message, and a turn was recorded delivered once
    its bytes were handed to the socket; the server died after reading the first turn, and with no
    history kept for the reconnect the new conversation never got turns 2-5. A turn now counts
    as delivered once a WebSocket ping sent after it is answered."""
    from voicekit.realtime import DeliveryLog

    server, make = gemini
    server.drop_after_content = 1
    store = open_store(tmp_path)
    b = Broadcaster(make(), store.path, session_id="gemini:drop", attribution=False, backoff_initial=0.05,
                    history_on_reconnect=0).start()
    assert b.connected.wait(10)
    committed = [store.commit(turn(s, n, x, i)) for i, (s, n, x) in enumerate(SCRIPT)]
    for t in committed:
        b.on_turn(t)
    assert b.close(timeout=10)
    server.settle()
    received = [[e["client_content"]["turns"][0]["parts"][0]["text"] for e in c if "client_content" in e]
                for c in server.connections]
    assert len(server.connections) == 2 and len(received[0]) == 1
    # the others go again, and the first too unless its ping was answered before the server died
    texts = [t.text for t in committed]
    assert received[1] in (texts, texts[1:]), received
    assert DeliveryLog(store.path, "gemini:drop").statuses() == {t.turn_id: "delivered" for t in committed}


def test_gemini_after_a_reconnect_the_first_labelled_item_says_who_said_the_bare_lines_resent(tmp_path, gemini):
    """A drop after Alice's first line: the new conversation is sent it again bare, so Bob's first
    line brings the note and says that the two bare lines were Alice's (it said nothing of them)."""
    server, make = gemini
    store = open_store(tmp_path)
    b = Broadcaster(make(), store.path, session_id="gemini", backoff_initial=0.05).start()
    assert b.connected.wait(10)
    for i, (s, n, x) in enumerate(SCRIPT[:3]):
        if i == 1:
            time.sleep(0.3)
            server.drop()
            time.sleep(0.3)
        b.on_turn(store.commit(turn(s, n, x, i)))
    assert b.close(timeout=10)
    server.settle()
    assert len(server.connections) == 2
    texts = [[p["text"] for p in e["client_content"]["turns"][0]["parts"]]
             for e in server.connections[1] if "client_content" in e]
    assert texts[:2] == [["Good morning, shall we start?"], ["First item is the budget."]]
    assert texts[2][1:] == [RUNTIME_NOTE, earlier_lines_note(2, "Alice")]


def test_gemini_abort_drops_the_connection(gemini):
    """What the broadcaster does when a close does not finish in time: no socket stays open."""
    server, make = gemini
    session = make()

    async def go():
        await session.connect()
        session.abort()
        session.abort()   # idempotent
        await asyncio.sleep(0.1)

    asyncio.run(go())
    server.settle(timeout=2)


def test_gemini_a_connect_is_one_setup_complete_event(gemini):
    """google-genai reads `setupComplete` inside connect(), so it never reached the session log,
    which docs/realtime.md said holds it: a meeting with no reply left an empty --session-log.
    The session now gives a `setup_complete` event once connected."""
    import threading

    server, make = gemini
    events, seen = [], threading.Event()
    b = Broadcaster(make(), None, session_id="gemini",
                    on_event=lambda e: (events.append(e), seen.set())).start()
    assert seen.wait(10)
    assert b.close(timeout=5)
    assert [(e.kind, next(iter(e.raw))) for e in events] == [("other", "setup_complete")]


@pytest.mark.parametrize("frame", [
    "this is not json{",                                   # not JSON (the SDK: ValueError)
    '{"serverContent": "x"}',                              # a field of the wrong shape
    '{"somethingNew": {"a": 1}}',                          # nothing the SDK knows (the SDK: APIError)
    "[1, 2, 3]",                                           # JSON, not a message
], ids=["not-json", "content-str", "unknown", "array"])
def test_gemini_a_malformed_server_message_is_skipped_and_the_connection_stays(tmp_path, gemini, caplog, frame):
    """As with OpenAI (a user trial): one message the client cannot read ended the reader, and the
    broadcaster reconnected and sent the meeting again. Now it is logged in one warning line and
    skipped: the reply asked for after it comes on the same connection."""
    import logging
    import threading

    server, make = gemini
    server.frames_after_content = {2: [frame]}
    done = threading.Event()
    store = open_store(tmp_path)
    with caplog.at_level(logging.WARNING, logger="voicekit.realtime"):
        b = Broadcaster(make(), store.path, session_id="gemini", backoff_initial=0.05,
                        on_event=lambda e: e.kind == "reply_done" and done.set()).start()
        for i, (s, n, x) in enumerate(SCRIPT[:3]):
            b.on_turn(store.commit(turn(s, n, x, i)))
        b.request_reply()
        assert done.wait(10)
        assert b.close(timeout=10)
    server.settle()
    assert server.frames_after_content == {}   # the frame was sent, before the reply request
    assert len(server.connections) == 1 and b.stats["reconnects"] == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("Gemini Live sent a message voicekit cannot read (")
    assert warnings[0].endswith("); skipped") and "\n" not in warnings[0] and len(warnings[0]) < 320
    print(warnings[0])


def test_gemini_an_error_that_repeats_without_reading_ends_the_connection(caplog):
    """An error out of the SDK's receive() that repeats without any message read (the socket still
    reported open) made the reader call it again at once, forever, starving the event loop (a
    review): after MAX_UNREADABLE in a row the connection is taken for gone."""
    import logging

    from voicekit.realtime.gemini_session import MAX_UNREADABLE

    calls = []

    class Stuck:
        def receive(self):
            calls.append(1)
            raise AttributeError("'NoneType' object has no attribute 'server_content'")

    session = GeminiLiveSession(api_key=KEY)
    session._session = Stuck()
    with caplog.at_level(logging.WARNING, logger="voicekit.realtime"):
        asyncio.run(asyncio.wait_for(session._read(), 30))
    assert len(calls) == MAX_UNREADABLE and session._session is None
    assert "Gemini Live connection closed" in caplog.text
