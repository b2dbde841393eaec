"""T8: decisions reach the project's hooks (``HookTrigger.ON_SPEAK_DECISION``, ``HookRunner.emit``)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from voicekit.attribution import SpeakerLabel
from voicekit.hooks import HookRunner, HookTrigger
from voicekit.turns import SpeakerTurn
from voicekit.turntaking import ON_SPEAK_DECISION, Decision, Member, TurnTaker

ALICE = SpeakerLabel("Alice", None, "mic")


def room() -> TurnTaker:
    return TurnTaker([Member("Iris", "You are Iris."), Member("Elena", "You are Elena.")])


def test_trigger_is_in_the_hook_enum_and_matches_the_ladder_event():
    assert HookTrigger.ON_SPEAK_DECISION.value == ON_SPEAK_DECISION == "on_speak_decision"
    assert HookTrigger("on_speak_decision") is HookTrigger.ON_SPEAK_DECISION


def test_attach_hooks_delivers_every_decision_in_order():
    runner = HookRunner(timeout=2.0)
    seen: list[Decision] = []
    seen_async: list[str] = []

    async def on_async(decision: Decision) -> None:
        await asyncio.sleep(0)
        seen_async.append(decision.decided_by.value)

    runner.register(seen.append, HookTrigger.ON_SPEAK_DECISION, name="collect")
    runner.register(on_async, HookTrigger.ON_SPEAK_DECISION)
    taker = room()
    taker.attach_hooks(runner)
    try:
        taker.decide("Elena, what about the budget?", ALICE, turn_id=7)
        taker.record_reply("Elena")
        taker.decide("why?", ALICE)
        taker.decide("What do you two think?", ALICE)
    finally:
        runner.close()
    assert [(d.decided_by, d.responders) for d in seen] == [
        ("mention", ("Elena",)),
        ("continuation", ("Elena",)),
        ("group_address", ("Iris", "Elena")),
    ]
    assert seen[0].turn_id == 7 and seen[0].speaker == "Alice"
    assert seen_async == ["mention", "continuation", "group_address"]
    assert runner.failures == []


def test_hook_runner_accepts_the_enum_member_on_the_taker():
    taker = room()
    got: list[Decision] = []
    taker.on(HookTrigger.ON_SPEAK_DECISION, got.append)
    taker.decide("Iris?", ALICE)
    assert [d.responders for d in got] == [("Iris",)]
    with pytest.raises(ValueError):
        taker.on(HookTrigger.ON_TRANSCRIPTION, got.append)


def test_emit_isolates_failing_and_slow_hooks():
    runner = HookRunner(timeout=0.2)
    release = threading.Event()
    after: list[str] = []

    def broken(decision: Decision) -> None:
        raise RuntimeError("boom")

    def slow(decision: Decision) -> None:
        release.wait(30)
        after.append("slow finished")

    runner.register(broken, HookTrigger.ON_SPEAK_DECISION, name="broken")
    runner.register(slow, HookTrigger.ON_SPEAK_DECISION, name="slow")
    runner.register(lambda d: after.append(d.decided_by.value) or "ok", HookTrigger.ON_SPEAK_DECISION,
                    name="after")
    taker = room()
    taker.attach_hooks(runner)
    try:
        decision = taker.decide("Elena, ship it?", ALICE)  # never raises to the room
        assert decision.responders == ("Elena",)
        assert after == ["mention"]  # later hooks still run, and the slow one had not finished
        assert [(name, start) for name, start, _ in runner.failures] == [("broken", None), ("slow", None)]
        assert "RuntimeError: boom" in runner.failures[0][2]
        assert "timed out" in runner.failures[1][2]
        assert runner.emit(HookTrigger.ON_SPEAK_DECISION, decision)[-1] == "ok"
    finally:
        release.set()
        runner.close()


def test_emit_refuses_transcription_and_run_is_unchanged():
    runner = HookRunner()
    decisions: list[Decision] = []
    runner.register(decisions.append, HookTrigger.ON_SPEAK_DECISION)
    runner.register(lambda t: t.replace(text=t.text.upper()))  # ON_TRANSCRIPTION by default
    turn = SpeakerTurn(speaker="Speaker A", text="hello", start=1.0, end=2.0)
    try:
        with pytest.raises(ValueError):
            runner.emit(HookTrigger.ON_TRANSCRIPTION, turn)
        assert runner.run(turn).text == "HELLO"
        assert decisions == []  # transcription hooks and decision hooks stay apart
        assert runner.hooks_for(HookTrigger.ON_SPEAK_DECISION) == ["list.append"]
    finally:
        runner.close()
