"""The broadcaster's queue policy and the local session's JSON lines."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time

from _realtime_meeting import SCRIPT, open_store, turn

from voicekit.attribution import RUNTIME_NOTE
from voicekit.realtime import Broadcaster, DeliveryLog, LocalSession, RealtimeSession, SessionEvent


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
    with caplog.at_level(logging.WARNING, logger="voicekit.realtime"):
        t0 = time.perf_counter()
        for i in range(12):
            spk, name, text = SCRIPT[i % len(SCRIPT)]
            t = store.commit(turn(spk, name, f"{text} #{i}", i))
            committed.append(t)
            b.on_turn(t)
        enqueue_s = time.perf_counter() - t0
    assert enqueue_s < 0.5          # on_turn returned at once although the provider is stalled
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
