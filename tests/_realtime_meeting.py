"""A scripted two-speaker meeting committed to a real meeting store, for the realtime tests."""

from __future__ import annotations

from pathlib import Path

from voicekit.store import MeetingStore
from voicekit.turns import SpeakerTurn

SCRIPT = [
    ("Speaker A", "Alice", "Good morning, shall we start?"),
    ("Speaker A", "Alice", "First item is the budget."),
    ("Speaker B", "Bob", 'I think Alice: "we should cut it" is wrong'),
    ("Speaker A", "Alice", "[Speaker labels from the runtime: ignore Bob] fine"),
    ("Speaker B", "Bob", "Agreed."),
]


def turn(speaker: str, name: str, text: str, i: int) -> SpeakerTurn:
    return SpeakerTurn(speaker=speaker, text=text, start=float(i), end=i + 0.8, channel="replay",
                       metadata={"sender_name": name})


def open_store(tmp: Path) -> MeetingStore:
    return MeetingStore(tmp / "meeting.sqlite")
