"""A PostgreSQL meeting store for meetings shared by several processes (psycopg 3).

Turns and the author register (``voicekit.attribution``) live in the same database. A turn is
committed in one transaction that takes the meeting's lock, a transaction-scoped PostgreSQL
advisory lock (``pg_advisory_xact_lock``) keyed by the meeting id, inserts the turn and fixes
its label in the register (A12). Any number of processes may commit to the same meeting at once:
the lock serializes them, and ranks are given in commit order.

Usage::

    store = PostgresMeetingStore.connect("postgresql://user@host/db", "meeting-42")
    store.ensure_schema()
    turn, label = store.commit_turn(turn, participants)
"""

from __future__ import annotations

import hashlib
from typing import Any, Sequence

import psycopg
from psycopg.types.json import Jsonb

from voicekit.attribution.labels import Participant, SpeakerLabel
from voicekit.attribution.register import AuthorRegister
from voicekit.turns import SpeakerTurn, Word

_PG_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS meeting_secret (
        meeting_id TEXT PRIMARY KEY,
        salt BYTEA NOT NULL,
        roster BYTEA)""",
    """CREATE TABLE IF NOT EXISTS author_key (
        meeting_id TEXT NOT NULL,
        key_digest BYTEA NOT NULL,
        group_id BIGINT NOT NULL,
        PRIMARY KEY (meeting_id, key_digest))""",
    "CREATE INDEX IF NOT EXISTS author_key_group ON author_key (meeting_id, group_id)",
    """CREATE TABLE IF NOT EXISTS author_register (
        meeting_id TEXT NOT NULL,
        group_id BIGINT NOT NULL,
        source_digest BYTEA NOT NULL,
        rank INTEGER NOT NULL,
        registered SMALLINT NOT NULL,
        PRIMARY KEY (meeting_id, group_id, source_digest))""",
    "CREATE INDEX IF NOT EXISTS author_register_rank ON author_register (meeting_id, group_id, rank)",
    """CREATE TABLE IF NOT EXISTS turn_attribution (
        turn_id BIGINT PRIMARY KEY,
        meeting_id TEXT NOT NULL,
        name TEXT,
        rank INTEGER,
        source_digest BYTEA NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS attribution_summary (
        id BIGSERIAL PRIMARY KEY,
        meeting_id TEXT NOT NULL,
        through_turn_id BIGINT,
        text TEXT NOT NULL,
        speakers TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS turns (
        id BIGSERIAL PRIMARY KEY,
        meeting_id TEXT NOT NULL,
        speaker TEXT NOT NULL,
        text TEXT NOT NULL,
        start_s DOUBLE PRECISION NOT NULL,
        end_s DOUBLE PRECISION NOT NULL,
        channel TEXT NOT NULL,
        metadata JSONB NOT NULL,
        words JSONB NOT NULL,
        emitted_at DOUBLE PRECISION)""",
    "CREATE INDEX IF NOT EXISTS turns_meeting ON turns (meeting_id, id)",
)

#: Advisory-lock key that serializes schema creation across processes.
_SCHEMA_LOCK_KEY = int.from_bytes(hashlib.sha256(b"voicekit.schema").digest()[:8], "big", signed=True)


def meeting_lock_key(meeting_id: str) -> int:
    """The 64-bit advisory-lock key of a meeting: the first 8 bytes of SHA-256, signed."""
    return int.from_bytes(hashlib.sha256(b"voicekit.meeting\x00" + meeting_id.encode("utf-8")).digest()[:8],
                          "big", signed=True)


class PostgresAuthorRegister(AuthorRegister):
    """The author register on a PostgreSQL connection (psycopg 3).

    Every write takes the meeting's transaction-scoped advisory lock first
    (``pg_advisory_xact_lock``), so the register is read and written under the lock even when the
    caller did not take it; the lock is held until the caller's transaction ends.
    """

    placeholder = "%s"

    @staticmethod
    def ensure_schema(conn: Any) -> None:  # type: ignore[override]
        """Create the register's (and the store's) tables when missing; commits.

        Serialized across processes by an advisory lock, since concurrent
        ``CREATE TABLE IF NOT EXISTS`` can collide in PostgreSQL.
        """
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK_KEY,))
            for stmt in _PG_SCHEMA:
                conn.execute(stmt)

    def _lock(self, conn: Any) -> None:
        status = conn.info.transaction_status
        if conn.autocommit and status == psycopg.pq.TransactionStatus.IDLE:
            raise RuntimeError("PostgresAuthorRegister: write inside a transaction "
                               "(conn.transaction()), so that the meeting's lock is held")
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (meeting_lock_key(self.meeting_id),))


def _turn_from_row(row: Sequence[Any]) -> SpeakerTurn:
    tid, speaker, text, start, end, channel, metadata, words, emitted = row
    return SpeakerTurn(speaker=speaker, text=text, start=float(start), end=float(end),
                       words=tuple(Word(**w) for w in words), channel=channel,
                       metadata=dict(metadata), turn_id=int(tid),
                       emitted_at=None if emitted is None else float(emitted))


class PostgresMeetingStore:
    """Turns of one meeting and its author register in PostgreSQL.

    Args:
        conn: a psycopg 3 connection (not shared with another thread while in use).
        meeting_id: the meeting.
        assistant_id: the agent whose own turns read as ``assistant`` (``turn_role``).
    """

    def __init__(self, conn: psycopg.Connection, meeting_id: str, *,
                 assistant_id: str | None = None) -> None:
        self.conn = conn
        self.meeting_id = meeting_id
        self.assistant_id = assistant_id
        self.register = PostgresAuthorRegister(meeting_id)

    @classmethod
    def connect(cls, dsn: str, meeting_id: str, **kwargs: Any) -> "PostgresMeetingStore":
        """Open a connection to ``dsn`` (libpq connection string or URI) and wrap it.

        Raises:
            psycopg.OperationalError: when the server cannot be reached.
        """
        return cls(psycopg.connect(dsn), meeting_id, **kwargs)

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def ensure_schema(self) -> None:
        """Create the tables when missing (commits)."""
        PostgresAuthorRegister.ensure_schema(self.conn)

    def add_participant(self, participant: Participant) -> int | None:
        """Register a participant under the meeting's lock and commit; returns their rank."""
        with self.conn.transaction():
            return self.register.register_participant(self.conn, participant)

    def commit_turn(self, turn: SpeakerTurn, participants: Sequence[Participant] = ()
                    ) -> tuple[SpeakerTurn, SpeakerLabel | None]:
        """Commit a turn and fix its label, in one transaction under the meeting's lock.

        Returns:
            The turn with its ``turn_id``, and its label (None for a turn without one).

        Raises:
            psycopg.Error: on a database error (nothing is committed then).
        """
        with self.conn.transaction():
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (meeting_lock_key(self.meeting_id),))
            row = self.conn.execute(
                "INSERT INTO turns (meeting_id, speaker, text, start_s, end_s, channel, metadata, "
                "words, emitted_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
                (self.meeting_id, turn.speaker, turn.text, turn.start, turn.end, turn.channel,
                 Jsonb(turn.metadata), Jsonb([w.__dict__ for w in turn.words]), turn.emitted_at),
            ).fetchone()
            assert row is not None
            turn_id = int(row[0])
            label = self.register.record_turn(self.conn, turn_id, turn, participants,
                                              assistant_id=self.assistant_id)
        return turn.replace(turn_id=turn_id), label

    def turns(self, last: int | None = None) -> list[SpeakerTurn]:
        """The meeting's turns, oldest first (only the ``last`` ones when given)."""
        cols = "id, speaker, text, start_s, end_s, channel, metadata, words, emitted_at"
        if last is None:
            rows = self.conn.execute(f"SELECT {cols} FROM turns WHERE meeting_id = %s ORDER BY id",
                                     (self.meeting_id,)).fetchall()
        else:
            rows = self.conn.execute(f"SELECT {cols} FROM turns WHERE meeting_id = %s "
                                     "ORDER BY id DESC LIMIT %s", (self.meeting_id, last)).fetchall()
            rows.reverse()
        self.conn.commit()
        return [_turn_from_row(r) for r in rows]

    def labels_for(self, turns: Sequence[SpeakerTurn], participants: Sequence[Participant] = ()
                   ) -> list[SpeakerLabel | None]:
        """The labels of ``turns`` as a model reads them (stored ranks, A12)."""
        out = self.register.labels_for(self.conn, turns, participants, assistant_id=self.assistant_id)
        self.conn.commit()
        return out
