"""A PostgreSQL meeting store for meetings shared by several processes (psycopg 3).

It holds a meeting's committed turns and its author register (``voicekit.attribution``), for
programs that commit turns and read labels from several processes. It is not the
:class:`voicekit.store.MeetingStore` that :class:`voicekit.pipeline.Pipeline`, ``voicekit
export`` and refinement use (no outputs, refined speakers, names or embeddings): those write
SQLite. Turns and the register live in the same database. A turn is
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

import contextlib
import functools
import hashlib
import json
import math
import re
from typing import Any, Iterator, Sequence

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

#: The tables and indexes of :data:`_PG_SCHEMA`, read from it: when all exist, ensure_schema runs no DDL.
_PG_OBJECTS = tuple(re.search(r"IF NOT EXISTS (\w+)", stmt).group(1) for stmt in _PG_SCHEMA)

#: Seconds libpq waits for the server to answer a connection (a DSN's own connect_timeout wins).
CONNECT_TIMEOUT_S = 10

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
        ``CREATE TABLE IF NOT EXISTS`` can collide in PostgreSQL. When every table and index
        exists it runs no DDL: ``CREATE INDEX IF NOT EXISTS`` takes a table lock even then, in
        the opposite order to a commit's, and deadlocked with another process committing to the
        meeting.
        """
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK_KEY,))
            found = conn.execute("SELECT count(*) FROM unnest(%s::text[]) AS name WHERE to_regclass(name) IS NOT NULL",
                                 (list(_PG_OBJECTS),)).fetchone()
            if found is not None and found[0] == len(_PG_OBJECTS):
                return
            for stmt in _PG_SCHEMA:
                conn.execute(stmt)

    def _lock(self, conn: Any) -> None:
        status = conn.info.transaction_status
        if conn.autocommit and status == psycopg.pq.TransactionStatus.IDLE:
            raise RuntimeError("PostgresAuthorRegister: write inside a transaction "
                               "(conn.transaction()), so that the meeting's lock is held")
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (meeting_lock_key(self.meeting_id),))


#: A turn's metadata as JSONB, as the SQLite store writes it (:func:`voicekit.turns.metadata_json`):
#: a value JSON has no type for (a numpy float) as its ``str()``, NaN refused.
_metadata_dumps = functools.partial(json.dumps, ensure_ascii=False, default=str, allow_nan=False)


def _holds_nul(value: Any) -> bool:
    """Whether a string, or a key or value inside dicts and lists, holds U+0000."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(k) or _holds_nul(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_holds_nul(v) for v in value)
    return False


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
        """Open a connection to ``dsn`` (libpq connection string or URI) and wrap it. libpq waits
        :data:`CONNECT_TIMEOUT_S` seconds for the server unless the DSN sets ``connect_timeout``.

        Raises:
            psycopg.OperationalError: when the server cannot be reached or does not answer in time.
        """
        params = psycopg.conninfo.conninfo_to_dict(dsn)
        params.setdefault("connect_timeout", CONNECT_TIMEOUT_S)
        return cls(psycopg.connect(**params), meeting_id, **kwargs)

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def ensure_schema(self) -> None:
        """Create the tables when missing (commits)."""
        with self._transaction():
            PostgresAuthorRegister.ensure_schema(self.conn)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """One transaction, rolled back on any error, so that a failed call (a cancelled read, a
        refused turn) leaves the connection usable for the next; a missing table names the fix.

        Raises:
            RuntimeError: the store's tables do not exist (``ensure_schema()`` was not called).
        """
        try:
            with self.conn.transaction():
                yield
        except psycopg.errors.UndefinedTable as exc:
            raise RuntimeError(f"the meeting store's tables do not exist in this database ({exc.diag.message_primary}): "
                               "call ensure_schema() once after connecting") from exc

    def add_participant(self, participant: Participant) -> int | None:
        """Register a participant under the meeting's lock and commit; returns their rank."""
        with self._transaction():
            return self.register.register_participant(self.conn, participant)

    def commit_turn(self, turn: SpeakerTurn, participants: Sequence[Participant] = ()
                    ) -> tuple[SpeakerTurn, SpeakerLabel | None]:
        """Commit a turn and fix its label, in one transaction under the meeting's lock.

        Returns:
            The turn with its ``turn_id``, and its label (None for a turn without one).

        Raises:
            ValueError: a turn whose times are not finite seconds, or that holds a NUL character
                (U+0000), which PostgreSQL's text and JSONB cannot store; nothing is written.
            TypeError, ValueError: metadata that is not JSON (as the SQLite store:
                :func:`voicekit.turns.metadata_json`); nothing is written.
            RuntimeError: the tables do not exist (call :meth:`ensure_schema`).
            psycopg.Error: on a database error. Nothing is committed then, except when the
                connection drops after the server received the COMMIT: the turn may then be
                stored; read :meth:`turns` on a new connection before committing it again.
        """
        if not (math.isfinite(turn.start) and math.isfinite(turn.end)):
            raise ValueError(f"a turn's times must be finite seconds, got {turn.start!r}..{turn.end!r} "
                             f"({turn.speaker}: {turn.text[:40]!r})")
        metadata = _metadata_dumps(turn.metadata)   # its TypeError / ValueError before anything is written
        words = [w.__dict__ for w in turn.words]
        if _holds_nul([turn.speaker, turn.text, turn.channel, turn.metadata, words]):
            raise ValueError(f"a turn holds a NUL character (U+0000), which PostgreSQL cannot store in text: remove "
                             f"it first, e.g. text.replace('\\0', '') ({turn.speaker}: {turn.text[:40]!r})")
        with self._transaction():
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (meeting_lock_key(self.meeting_id),))
            row = self.conn.execute(
                "INSERT INTO turns (meeting_id, speaker, text, start_s, end_s, channel, metadata, "
                "words, emitted_at) VALUES (%s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s) RETURNING id",
                (self.meeting_id, turn.speaker, turn.text, turn.start, turn.end, turn.channel,
                 metadata, Jsonb(words), turn.emitted_at),
            ).fetchone()
            assert row is not None
            turn_id = int(row[0])
            label = self.register.record_turn(self.conn, turn_id, turn, participants,
                                              assistant_id=self.assistant_id)
        return turn.replace(turn_id=turn_id), label

    def turns(self, last: int | None = None) -> list[SpeakerTurn]:
        """The meeting's turns in commit order, oldest first (only the ``last`` ones when given).

        Commit order, unlike the SQLite store's time order: processes sharing a meeting commit
        as their turns end, and a model's view is what was committed before it.

        Raises:
            ValueError: ``last`` below 0.
            RuntimeError: the tables do not exist (call :meth:`ensure_schema`).
        """
        if last is not None and last < 0:
            raise ValueError(f"last must be 0 or more, got {last}")
        cols = "id, speaker, text, start_s, end_s, channel, metadata, words, emitted_at"
        with self._transaction():
            if last is None:
                rows = self.conn.execute(f"SELECT {cols} FROM turns WHERE meeting_id = %s ORDER BY id",
                                         (self.meeting_id,)).fetchall()
            else:
                rows = self.conn.execute(f"SELECT {cols} FROM turns WHERE meeting_id = %s "
                                         "ORDER BY id DESC LIMIT %s", (self.meeting_id, last)).fetchall()
                rows.reverse()
        return [_turn_from_row(r) for r in rows]

    def labels_for(self, turns: Sequence[SpeakerTurn], participants: Sequence[Participant] = ()
                   ) -> list[SpeakerLabel | None]:
        """The labels of ``turns`` as a model reads them (stored ranks, A12)."""
        with self._transaction():
            return self.register.labels_for(self.conn, turns, participants, assistant_id=self.assistant_id)
