"""Per-session delivery bookkeeping in the meeting's SQLite file.

``realtime_delivery(session_id, turn_id, status, at)``
    one row per committed turn a session has dealt with: ``delivered`` (the provider accepted
    it), ``rejected`` (the provider refused it; logged, not retried) or ``skipped`` (not a human
    turn). A turn without a row has not reached the session yet and is sent from the store.
``realtime_session(session_id, speakers, updated_at)``
    the speakers the session has been sent (name, rank, channel), so that a session that has
    been labelled stays labelled (A3) across reconnects and restarts.

Labels come from the author register (``voicekit.attribution``): a turn that already has a
``turn_attribution`` record reads with it; one without is recorded here, in commit order, under
the meeting's lock, which fixes its rank (A12).
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Sequence

from voicekit.attribution import AuthorRegister, Participant, SpeakerLabel, meeting_lock
from voicekit.store.sqlite import TURN_COLUMNS, turn_from_row
from voicekit.turns import SpeakerTurn

SCHEMA = """
CREATE TABLE IF NOT EXISTS realtime_delivery (
    session_id TEXT NOT NULL,
    turn_id INTEGER NOT NULL,
    status TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (session_id, turn_id)
);
CREATE TABLE IF NOT EXISTS realtime_session (
    session_id TEXT PRIMARY KEY,
    speakers TEXT NOT NULL,
    updated_at REAL NOT NULL
);
"""

DELIVERED, REJECTED, SKIPPED = "delivered", "rejected", "skipped"


class DeliveryLog:
    """What one session has been sent, durably, beside the meeting's turns.

    Args:
        path: the meeting store (``DIR/meeting.sqlite``); it must already hold the ``turns`` table.
        session_id: the session's name in the bookkeeping (``openai:gpt-realtime``…).
        meeting_id: the author register's meeting id.
    """

    def __init__(self, path: str | Path, session_id: str, meeting_id: str = "default") -> None:
        self.path = Path(path)
        self.session_id = session_id
        self.register = AuthorRegister(meeting_id)
        self.conn = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.executescript(SCHEMA)
        AuthorRegister.ensure_schema(self.conn)

    def undelivered(self, before: int | None = None) -> list[SpeakerTurn]:
        """Committed turns this session has no row for, in commit order (with ``before``: only
        turn ids below it)."""
        columns = ", ".join(f"t.{c.strip()}" for c in TURN_COLUMNS.split(","))
        rows = self.conn.execute(
            f"SELECT {columns} FROM turns t LEFT JOIN realtime_delivery d ON d.session_id = ? AND d.turn_id = t.id"
            " WHERE d.turn_id IS NULL AND t.id < ? ORDER BY t.id",
            (self.session_id, before if before is not None else 2**62)).fetchall()
        return [turn_from_row(row) for row in rows]

    def delivered(self, last: int) -> list[SpeakerTurn]:
        """The last ``last`` turns this session was sent (an earlier run's, for a new one), in
        commit order."""
        if last <= 0:
            return []
        columns = ", ".join(f"t.{c.strip()}" for c in TURN_COLUMNS.split(","))
        rows = self.conn.execute(
            f"SELECT {columns} FROM turns t JOIN realtime_delivery d ON d.session_id = ? AND d.turn_id = t.id"
            " WHERE d.status = ? ORDER BY t.id DESC LIMIT ?", (self.session_id, DELIVERED, last)).fetchall()
        return [turn_from_row(row) for row in reversed(rows)]

    def mark(self, turn_id: int, status: str) -> None:
        """Record what became of a turn (one transaction; a second mark of a turn is ignored)."""
        self.conn.execute("INSERT OR IGNORE INTO realtime_delivery(session_id, turn_id, status, at) "
                          "VALUES (?, ?, ?, ?)", (self.session_id, int(turn_id), status, time.time()))

    def statuses(self) -> dict[int, str]:
        """``{turn id: status}`` for this session."""
        return dict(self.conn.execute("SELECT turn_id, status FROM realtime_delivery WHERE session_id = ? "
                                      "ORDER BY turn_id", (self.session_id,)))

    def label(self, turn: SpeakerTurn, participants: Sequence[Participant] = (),
              assistant_id: str | None = None) -> SpeakerLabel | None:
        """The turn's label (A4–A7, A11, A12): its stored record, else recorded now."""
        has = self.conn.execute("SELECT 1 FROM turn_attribution WHERE meeting_id = ? AND turn_id = ?",
                                (self.register.meeting_id, turn.turn_id)).fetchone()
        if has is None:
            try:
                with meeting_lock(self.conn):
                    return self.register.record_turn(self.conn, turn.turn_id, turn, participants,
                                                     assistant_id=assistant_id)
            except sqlite3.IntegrityError:
                pass  # recorded meanwhile by another writer: read it back
        return self.register.labels_for(self.conn, [turn], participants, assistant_id=assistant_id)[0]

    def speakers(self) -> list[SpeakerLabel]:
        """The speakers this session has been sent (A3)."""
        row = self.conn.execute("SELECT speakers FROM realtime_session WHERE session_id = ?",
                                (self.session_id,)).fetchone()
        return [SpeakerLabel(n, r, c) for n, r, c in json.loads(row[0])] if row else []

    def save_speakers(self, labels: Sequence[SpeakerLabel]) -> None:
        data = json.dumps([[s.name, s.rank, s.channel] for s in labels], ensure_ascii=False)
        self.conn.execute("INSERT OR REPLACE INTO realtime_session(session_id, speakers, updated_at) "
                          "VALUES (?, ?, ?)", (self.session_id, data, time.time()))

    def close(self) -> None:
        self.conn.close()
