"""The broadcaster's queue policy and the local session's JSON lines."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time

from _realtime_meeting import SCRIPT, open_store, turn

from voicekit.attribution import RUNTIME_NOTE
from voicekit.attribution.note import earlier_lines_note
from voicekit.realtime import Broadcaster, DeliveryLog, LocalSession, RealtimeSession, SessionEvent
from voicekit.realtime.session import ProviderError
from voicekit.turns import SpeakerTurn


class SlowSession(RealtimeSession):
    """A session whose sends wait until the test opens the gate (a stalled provider)."""

    name = "slow"

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.items: list[tuple[str, dict]] = []
        self.instructions: list[str] = []

    async def connect(self) -> None:
        pass

    async def send_item(self, item, key) -> None:
        while not self.gate.is_set():
            await asyncio.sleep(0.01)
        self.items.append((key, item))

    async def send_instruction(self, text) -> None:
        self.instructions.append(text)

    async def request_reply(self) -> bool:
        return True

    async def events(self):
        while True:
            await asyncio.sleep(3600)
            yield SessionEvent("other")

    async def close(self) -> None:
        pass


def test_queue_full_never_blocks_warns_and_catches_up_from_the_store(tmp_path, caplog):
    store = open_store(tmp_path)
    session = SlowSession()
    b = Broadcaster(session, store.path, session_id="slow", queue_size=2).start()
    committed = []

    def meeting() -> None:
        for i in range(12):
            spk, name, text = SCRIPT[i % len(SCRIPT)]
            t = store.commit(turn(spk, name, f"{text} #{i}", i))
            committed.append(t)
            b.on_turn(t)

    with caplog.at_level(logging.WARNING, logger="voicekit.realtime"):
        th = threading.Thread(target=meeting, daemon=True)
        th.start()
        th.join(30)
    # on_turn returned 12 times while the provider was stalled (its gate is still shut)
    assert not th.is_alive() and len(committed) == 12 and not session.gate.is_set()
    assert b.stats["queue_full"] >= 8
    assert b.stats["dropped"] == 0  # with a store nothing is dropped
    warnings = [r.getMessage() for r in caplog.records if "queue is full" in r.getMessage()]
    assert len(warnings) == 1 and "stays in the meeting store" in warnings[0]
    session.gate.set()
    assert b.close(timeout=10)
    keys = [k for k, _ in session.items]
    assert keys == [f"vk-t{t.turn_id}" for t in committed]   # all, once each, in commit order
    assert set(DeliveryLog(store.path, "slow").statuses().values()) == {"delivered"}


def test_queue_full_without_store_drops_and_counts(caplog):
    session = SlowSession()
    b = Broadcaster(session, None, queue_size=1, attribution=False).start()
    with caplog.at_level(logging.WARNING, logger="voicekit.realtime"):
        for i in range(6):
            b.on_turn(turn("Speaker A", "Alice", f"line {i}", i).replace(turn_id=i + 1))
    assert b.stats["dropped"] >= 4
    assert any("is dropped" in r.getMessage() for r in caplog.records)
    session.gate.set()
    b.close(timeout=5)
    texts = [item["content"][0]["text"] for _, item in session.items]
    assert texts[0] == "line 0" and len(texts) == 6 - b.stats["dropped"]


def test_a_started_broadcaster_refuses_a_second_start():
    """A second start() ran a second thread on another event loop; its close() then returned at
    once while the first thread went on."""
    import pytest

    session = SlowSession()
    b = Broadcaster(session, None, attribution=False).start()
    with pytest.raises(RuntimeError, match="already started: close"):
        b.start()
    b.on_turn(turn("Speaker A", "Alice", "still delivered", 0).replace(turn_id=1))
    session.gate.set()
    assert b.close(timeout=5)
    assert [item["content"][0]["text"] for _, item in session.items] == ["still delivered"]


def test_a_turn_given_to_a_closed_broadcaster_is_said_lost_and_a_new_start_sends_again(caplog):
    """A library trial: on_turn() after close() returned as if queued; with no store the turn
    was gone without a word. It is counted and logged; start() after close() sends again (its
    thread used to stop at once: the close's stop flag stayed set)."""
    session = SlowSession()
    session.gate.set()
    b = Broadcaster(session, None, attribution=False).start()
    b.on_turn(turn("Speaker A", "Alice", "before", 0).replace(turn_id=1))
    assert b.close(timeout=5)
    with caplog.at_level(logging.WARNING, logger="voicekit.realtime"):
        b.on_turn(turn("Speaker A", "Alice", "after close", 1).replace(turn_id=2))
    assert b.stats["dropped"] == 1
    assert any("is closed: turn 2 not sent; start() the broadcaster again" in r.getMessage() for r in caplog.records)
    b.start()
    b.on_turn(turn("Speaker A", "Alice", "started again", 2).replace(turn_id=3))
    assert b.close(timeout=5)
    # the new connection is given the turn before again as history (history_on_reconnect), then the new one
    assert [item["content"][0]["text"] for _, item in session.items] == ["before", "before", "started again"]


def test_local_session_writes_exactly_the_openai_events_as_json_lines(tmp_path):
    store = open_store(tmp_path)
    printed: list[str] = []
    local = LocalSession(tmp_path / "session.jsonl", echo=printed.append, instructions="Take notes.")
    b = Broadcaster(local, store.path, session_id="local").start()
    committed = [store.commit(turn(s, n, x, i)) for i, (s, n, x) in enumerate(SCRIPT[:3])]
    for t in committed:
        b.on_turn(t)
    b.request_reply()
    assert b.close(timeout=5)
    lines = (tmp_path / "session.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines == printed
    events = [json.loads(x) for x in lines]
    assert [e["type"] for e in events] == ["session.update", "conversation.item.create",
                                           "conversation.item.create", "conversation.item.create",
                                           "response.create"]
    assert events[0] == {"type": "session.update", "event_id": "vk-oa-1",
                         "session": {"type": "realtime", "output_modalities": ["text"],
                                     "instructions": "Take notes."}}
    assert events[1] == {"type": "conversation.item.create", "event_id": "vk-oa-2",
                         "item": {"id": f"vk-t{committed[0].turn_id}", "type": "message", "role": "user",
                                  "content": [{"type": "input_text", "text": "Good morning, shall we start?"}]}}
    assert events[3]["item"]["content"][1] == {"type": "input_text", "text": RUNTIME_NOTE}
    assert events[4] == {"type": "response.create", "event_id": "vk-oa-5"}


def test_a_second_run_on_the_same_local_session_file_numbers_its_events_after_the_first(tmp_path):
    """`--append` runs write into one session.jsonl: an event id still names one line of it."""
    path = tmp_path / "session.jsonl"
    for run in range(2):
        local = LocalSession(path, echo=None)
        asyncio.run(local.connect())
        asyncio.run(local.send_instruction(f"run {run}"))
        asyncio.run(local.close())
    ids = [json.loads(line)["event_id"] for line in path.read_text(encoding="utf-8").splitlines()]
    assert ids == ["vk-oa-1", "vk-oa-2", "vk-oa-3", "vk-oa-4"]


def test_attribution_off_sends_bare_text_and_no_note(tmp_path):
    store = open_store(tmp_path)
    local = LocalSession(None, echo=None)
    b = Broadcaster(local, store.path, session_id="bare", attribution=False).start()
    for i, (s, n, x) in enumerate(SCRIPT):
        b.on_turn(store.commit(turn(s, n, x, i)))
    assert b.close(timeout=5)
    texts = [[p["text"] for p in e["item"]["content"]] for e in local.sent if e["type"] == "conversation.item.create"]
    assert texts == [[x] for _, _, x in SCRIPT]


def test_assistant_turns_in_the_store_are_not_sent(tmp_path):
    store = open_store(tmp_path)
    local = LocalSession(None, echo=None)
    b = Broadcaster(local, store.path, session_id="s").start()
    a = store.commit(turn("Speaker A", "Alice", "hello", 0))
    r = store.commit(turn("assistant", "assistant", "hi Alice", 1).replace(metadata={"role": "assistant"}))
    b.on_turn(a)
    b.on_turn(r)
    assert b.close(timeout=5)
    assert [e["item"]["id"] for e in local.sent if e["type"] == "conversation.item.create"] == [f"vk-t{a.turn_id}"]
    assert DeliveryLog(store.path, "s").statuses() == {a.turn_id: "delivered", r.turn_id: "skipped"}


def _sent_items(local: LocalSession) -> list[dict]:
    return [e["item"] for e in local.sent if e["type"] == "conversation.item.create"]


def test_a11_without_a_store_alike_names_of_different_sources_are_ranked_across_turns():
    """A broadcaster with no store keeps one register for the meeting: the second "Alice" (another
    source) and "ALICE" get ranks, as with a store (they used to be ranked one turn at a time)."""
    local = LocalSession(None, echo=None)
    b = Broadcaster(local, None, session_id="nostore").start()
    for i, (speaker, channel, name, text) in enumerate([("Speaker A", "mic", "Alice", "I am Alice"),
                                                        ("Speaker B", "room1/1", "Alice", "me too"),
                                                        ("Speaker C", "room1/2", "ALICE", "and me")], start=1):
        b.on_turn(SpeakerTurn(speaker, text, i, i + 1, channel=channel, metadata={"sender_name": name}, turn_id=i))
    assert b.close(timeout=5)
    first_parts = [item["content"][0]["text"] for item in _sent_items(local)]
    assert first_parts == ["I am Alice", 'Alice (2): "me too"', 'ALICE (3): "and me"']


class RejectingSession(SlowSession):
    """A provider that rejects the item with one client key."""

    def __init__(self, reject: str) -> None:
        super().__init__()
        self.gate.set()
        self.reject = reject

    async def send_item(self, item, key) -> None:
        if key == self.reject:
            raise ProviderError("item too large", event_id="e1", code="invalid_request_error")
        self.items.append((key, item))


def test_a3_a_rejected_item_does_not_count_in_the_sessions_window():
    """Bob's only line is rejected: the session has still heard one speaker, so Alice's next line
    goes bare, without the note (it used to arrive labelled, as if Bob had been heard)."""
    session = RejectingSession(reject="vk-t2")
    b = Broadcaster(session, None, session_id="rejected").start()
    for i, name, text in [(1, "Alice", "hello"), (2, "Bob", "a line the provider rejects"),
                          (3, "Alice", "still only me"), (4, "Bob", "now I am heard")]:
        b.on_turn(SpeakerTurn(f"Speaker {name[0]}", text, i, i + 1, channel="mic",
                              metadata={"sender_name": name}, turn_id=i))
    assert b.close(timeout=5)
    assert b.stats["rejected"] == 1
    sent = {key: [p["text"] for p in item["content"]] for key, item in session.items}
    assert sent["vk-t1"] == ["hello"] and sent["vk-t3"] == ["still only me"]
    # the second speaker heard: labels, the note once, and the two lines that went bare are Alice's
    # (the rejected line of Bob's is not among them)
    assert sent["vk-t4"] == ['Bob: "now I am heard"', RUNTIME_NOTE, earlier_lines_note(2, "Alice")]
    assert "the 2 lines before this one came without a label" in sent["vk-t4"][2]


def test_a2_one_speaker_multimodal_turn_is_the_same_with_attribution_on_or_off():
    """A2: a one-speaker window is byte for byte what attribution off sends, multimodal parts too
    (attribution off used to send the turn's text alone)."""
    parts = [{"type": "input_text", "text": "look at this"},
             {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]

    def run(attribution: bool) -> list[str]:
        local = LocalSession(None, echo=None)
        b = Broadcaster(local, None, session_id="mm", attribution=attribution).start()
        b.on_turn(SpeakerTurn("Speaker A", "look at this", 0, 1, channel="mic",
                              metadata={"sender_name": "Alice", "parts": parts}, turn_id=1))
        assert b.close(timeout=5)
        return [json.dumps(item, ensure_ascii=False) for item in _sent_items(local)]

    on, off = run(True), run(False)
    assert on == off
    assert json.loads(off[0])["content"] == parts


def test_an_instruction_goes_between_the_turns_it_was_queued_between(tmp_path):
    """The store's undelivered turns used to be sent all at once when the first queued turn came
    up, so an instruction queued after turn 1 went out after turn 2 as well."""
    store = open_store(tmp_path)
    local = LocalSession(None, echo=None)
    b = Broadcaster(local, store.path, session_id="order")
    b.on_turn(store.commit(turn("Speaker A", "Alice", "Turn one.", 0)))
    b.instruct("AFTER TURN ONE")
    b.on_turn(store.commit(turn("Speaker A", "Alice", "Turn two.", 1)))
    b.request_reply()
    b.on_turn(store.commit(turn("Speaker B", "Bob", "Turn three.", 2)))
    b.start()
    assert b.close(timeout=5)
    order = [e["item"]["content"][0]["text"] if e["type"] == "conversation.item.create" else e["type"]
             for e in local.sent if e["type"] != "session.update"]
    assert order == ["Turn one.", "AFTER TURN ONE", "Turn two.", "response.create", 'Bob: "Turn three."']


class DroppingSession(SlowSession):
    """A provider that drops the connection on every item (a stall with reconnects)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate.set()

    async def send_item(self, item, key) -> None:
        from voicekit.realtime.session import SessionClosed

        await asyncio.sleep(0.01)
        raise SessionClosed("dropped")


def test_a_provider_that_keeps_dropping_never_grows_the_backlog_past_the_queue():
    """Each reconnect used to move another queue's worth into the in-memory backlog (it grew by
    `queue_size` per reconnect); now the backlog and the queue together hold 2 x queue_size."""
    session = DroppingSession()
    b = Broadcaster(session, None, session_id="drops", queue_size=8, attribution=False,
                    backoff_initial=0.01, backoff_max=0.01).start()
    for i in range(300):
        b.on_turn(SpeakerTurn("Speaker A", f"line {i}", i, i + 1, channel="mic", turn_id=i + 1))
        if i % 50 == 49:
            time.sleep(0.2)
    assert b.stats["reconnects"] >= 3
    assert len(b._pending) <= 8 and b._q.qsize() <= 8
    assert b.stats["dropped"] >= 300 - 16
    b.close(timeout=0.5)


def test_a_session_connect_that_cannot_open_its_file_is_one_error_line(tmp_path, caplog):
    """A local session whose log cannot be opened (a user's `--session-log /proc/x.jsonl`) raised
    out of connect, and the broadcaster logged it with a full traceback mid-meeting. Now: one
    ERROR line with the message, the traceback only with DEBUG logging (`--debug`)."""
    (tmp_path / "afile").write_text("x")
    path = tmp_path / "afile" / "session.jsonl"     # under a file: connect's mkdir raises an OSError
    for level, traceback in ((logging.WARNING, False), (logging.DEBUG, True)):
        caplog.clear()
        with caplog.at_level(level, logger="voicekit.realtime"):
            b = Broadcaster(LocalSession(path, echo=None), None, session_id="local:default").start()
            b.close(timeout=5)
        assert not b._thread.is_alive() and isinstance(b.error, OSError)
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert len(errors) == 1
        assert errors[0].getMessage() == f"realtime broadcaster local:default stopped: {b.error}"
        assert str(path.parent) in errors[0].getMessage()
        assert bool(errors[0].exc_info) is traceback


def test_without_a_store_every_turn_gets_its_own_item_id():
    """Without a store the item ids were `vk-x<id(turn)>`: CPython reuses the id of a freed turn, so
    two turns of one conversation got the same item id (a user trial). Now they are numbered."""
    local = LocalSession(None, echo=None)
    b = Broadcaster(local, None, session_id="nostore-ids").start()
    for i in range(30):   # each turn freed once sent: its id is free for the next ones
        b.on_turn(SpeakerTurn("Speaker A", f"line {i}", i, i + 1, channel="mic"))   # no turn id
        deadline = time.monotonic() + 5
        while len(_sent_items(local)) < i + 1 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert b.close(timeout=5)
    ids = [item["id"] for item in _sent_items(local)]
    assert [item["content"][0]["text"] for item in _sent_items(local)] == [f"line {i}" for i in range(30)]
    assert len(set(ids)) == 30, ids


def test_a_reply_asked_for_while_one_is_in_flight_goes_once_when_that_one_is_done():
    """The base session's deferral, which every adapter uses (OpenAI and Gemini had a copy each):
    requests made while a reply is in flight are coalesced into one, sent when it is done."""
    class Replies(SlowSession):
        def __init__(self) -> None:
            super().__init__()
            self.sent = 0

        async def request_reply(self) -> bool:
            if self._defer_reply():
                return False
            self.reply_in_flight = True
            self.sent += 1
            return True

    async def go() -> None:
        s = Replies()
        assert [await s.request_reply() for _ in range(3)] == [True, False, False]
        assert s.sent == 1 and s.reply_owed
        await s._reply_done()          # the provider says the reply is done: the deferred one goes
        assert s.sent == 2 and s.reply_in_flight and s.reply_owed
        await s._reply_done()
        assert s.sent == 2 and not s.reply_owed

    asyncio.run(go())


def test_a_session_or_turn_of_the_wrong_type_is_refused_where_it_is_given(tmp_path):
    """A Python-API trial: `Broadcaster("x")` and `on_turn("x")` failed later with an
    AttributeError (the second one in the broadcaster's thread, the turn lost from view)."""
    import pytest

    with pytest.raises(TypeError, match=r"Broadcaster takes a voicekit.realtime.RealtimeSession .*not str 'x'"):
        Broadcaster("x")
    local = LocalSession(tmp_path / "session.jsonl", echo=lambda line: None)
    b = Broadcaster(local, None, session_id="t").start()
    with pytest.raises(TypeError, match=r"on_turn takes a committed voicekit.turns.SpeakerTurn, not str 'x'; "
                                        r"an application instruction goes to instruct\(text\)"):
        b.on_turn("x")
    b.on_turn(turn("Speaker A", "Alice", "still delivered", 0).replace(turn_id=1))
    assert b.close(timeout=5) and b.stats["delivered"] == 1
