"""The author register (A11, A12): look-alike ranks fixed at commit time, kept as salted digests.

The register is a handful of tables in the meeting store:

``meeting_secret(meeting_id, salt, roster)``
    the meeting's random 32-byte salt (``secrets.token_bytes``) and a digest of the participant
    roster last registered.
``author_key(meeting_id, key_digest, group_id)``
    HMAC-SHA256 digests of the look-alike keys of every name heard, each pointing to its group of
    names that read alike (A11, chained transitively).
``author_register(meeting_id, group_id, source_digest, rank, registered)``
    the rank each source holds in a group, by HMAC-SHA256 digest of the source.
``turn_attribution(turn_id, meeting_id, name, rank, source_digest)``
    what a committed turn was attributed to: the name and rank it had when committed.
``attribution_summary(id, meeting_id, through_turn_id, text, speakers)``
    meeting summaries with the speakers they cover (A15).

No raw id or name is stored in ``meeting_secret``, ``author_key`` or ``author_register``. The
name in ``turn_attribution`` is the turn's own name (the turn stores it too); its source is only a
digest.

Every method that writes runs inside the caller's transaction, which must hold the meeting's lock:
for SQLite a ``BEGIN IMMEDIATE`` transaction (:func:`meeting_lock`), for PostgreSQL the
transaction-scoped advisory lock :class:`voicekit.store.postgres.PostgresAuthorRegister` takes.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import secrets
import sqlite3
from typing import Any, Iterator, Sequence

from voicekit.attribution._unicode import name_keys
from voicekit.attribution.labels import (
    Participant,
    SpeakerLabel,
    agent_of,
    check_participants,
    display_name,
    find_participant,
    is_speaker_turn,
    resolve_name,
    source_key,
    turn_role,
)
from voicekit.attribution.summary import Summary
from voicekit.turns import SpeakerTurn

_SQLITE_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS meeting_secret (
        meeting_id TEXT PRIMARY KEY,
        salt BLOB NOT NULL,
        roster BLOB)""",
    """CREATE TABLE IF NOT EXISTS author_key (
        meeting_id TEXT NOT NULL,
        key_digest BLOB NOT NULL,
        group_id INTEGER NOT NULL,
        PRIMARY KEY (meeting_id, key_digest))""",
    "CREATE INDEX IF NOT EXISTS author_key_group ON author_key (meeting_id, group_id)",
    """CREATE TABLE IF NOT EXISTS author_register (
        meeting_id TEXT NOT NULL,
        group_id INTEGER NOT NULL,
        source_digest BLOB NOT NULL,
        rank INTEGER NOT NULL,
        registered INTEGER NOT NULL,
        PRIMARY KEY (meeting_id, group_id, source_digest))""",
    "CREATE INDEX IF NOT EXISTS author_register_rank ON author_register (meeting_id, group_id, rank)",
    """CREATE TABLE IF NOT EXISTS turn_attribution (
        turn_id INTEGER PRIMARY KEY,
        meeting_id TEXT NOT NULL,
        name TEXT,
        rank INTEGER,
        source_digest BLOB NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS attribution_summary (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        meeting_id TEXT NOT NULL,
        through_turn_id INTEGER,
        text TEXT NOT NULL,
        speakers TEXT NOT NULL)""",
)


@contextlib.contextmanager
def meeting_lock(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Hold a SQLite meeting's lock: a ``BEGIN IMMEDIATE`` transaction, committed on success.

    Rolled back when the block raises (a turn a hook blocked takes no rank).

    Raises:
        RuntimeError: when ``conn`` is already in a transaction.
        sqlite3.OperationalError: when the lock cannot be had within the connection's timeout.
    """
    if conn.in_transaction:
        raise RuntimeError("meeting_lock: the connection is already in a transaction")
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.rollback()
        raise
    else:
        conn.commit()


class AuthorRegister:
    """The author register of one meeting, in a SQLite meeting store.

    Args:
        meeting_id: the meeting the register belongs to (several meetings may share a store).

    The store calls :meth:`ensure_schema` once, then :meth:`record_turn` inside the transaction
    that commits each turn, and :meth:`labels_for` when it builds a model's window.
    """

    placeholder = "?"
    #: Size of an ``IN (...)`` chunk when reading many turns.
    _CHUNK = 500

    def __init__(self, meeting_id: str = "default") -> None:
        self.meeting_id = str(meeting_id)
        self._sql_cache: dict[str, str] = {}
        self._roster_cache: dict[tuple[Participant, ...], tuple[Participant, ...]] = {}

    # -- schema and plumbing ---------------------------------------------------------------

    @staticmethod
    def ensure_schema(conn: sqlite3.Connection) -> None:
        """Create the register's tables and indexes in a SQLite store when missing (idempotent)."""
        for stmt in _SQLITE_SCHEMA:
            conn.execute(stmt)

    def _sql(self, sql: str) -> str:
        out = self._sql_cache.get(sql)
        if out is None:
            out = sql if self.placeholder == "?" else sql.replace("?", self.placeholder)
            self._sql_cache[sql] = out
        return out

    def _exec(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> Any:
        return conn.execute(self._sql(sql), params)

    def _lock(self, conn: Any) -> None:
        """Make sure the meeting's lock is held (SQLite: the caller's write transaction)."""
        if not conn.in_transaction:
            raise RuntimeError(
                "AuthorRegister: write inside the meeting's lock (BEGIN IMMEDIATE, see meeting_lock)")

    def _salt(self, conn: Any, create: bool) -> tuple[bytes | None, bytes | None]:
        row = self._exec(conn, "SELECT salt, roster FROM meeting_secret WHERE meeting_id = ?",
                         (self.meeting_id,)).fetchone()
        if row is None and create:
            self._exec(conn, "INSERT INTO meeting_secret (meeting_id, salt) VALUES (?, ?) "
                       "ON CONFLICT DO NOTHING", (self.meeting_id, secrets.token_bytes(32)))
            row = self._exec(conn, "SELECT salt, roster FROM meeting_secret WHERE meeting_id = ?",
                             (self.meeting_id,)).fetchone()
        if row is None:
            return None, None
        return bytes(row[0]), (bytes(row[1]) if row[1] is not None else None)

    @staticmethod
    def _digest(salt: bytes, kind: bytes, value: str) -> bytes:
        return hmac.new(salt, kind + b"\x00" + value.encode("utf-8", "surrogatepass"),
                        hashlib.sha256).digest()

    def _key_digests(self, salt: bytes, name: str) -> tuple[bytes, bytes]:
        k1, k2 = name_keys(display_name(name))
        return self._digest(salt, b"skeleton-of-fold", k1), self._digest(salt, b"fold-of-skeleton", k2)

    # -- ranks ------------------------------------------------------------------------------

    def _rank(self, conn: Any, salt: bytes, name: str, source: bytes, registered: bool) -> int:
        """The rank ``source`` holds under ``name``, given and written when it holds none yet."""
        mid = self.meeting_id
        d1, d2 = self._key_digests(salt, name)
        rows = self._exec(conn, "SELECT key_digest, group_id FROM author_key "
                          "WHERE meeting_id = ? AND key_digest IN (?, ?)", (mid, d1, d2)).fetchall()
        known = {bytes(r[0]): int(r[1]) for r in rows}
        groups = sorted(set(known.values()))
        if not groups:
            g = self._exec(conn, "SELECT COALESCE(MAX(group_id), 0) + 1 FROM author_key "
                           "WHERE meeting_id = ?", (mid,)).fetchone()[0]
            self._insert_keys(conn, g, (d1, d2), known)
            self._insert_member(conn, g, source, 1, registered)
            return 1
        if len(groups) == 1:
            g = groups[0]
            row = self._exec(conn, "SELECT rank FROM author_register WHERE meeting_id = ? "
                             "AND group_id = ? AND source_digest = ?", (mid, g, source)).fetchone()
            if row is not None:
                self._insert_keys(conn, g, (d1, d2), known)
                return int(row[0])
            if registered:
                taken = {int(r[0]) for r in self._exec(
                    conn, "SELECT rank FROM author_register WHERE meeting_id = ? AND group_id = ?",
                    (mid, g)).fetchall()}
                rank = 1
                while rank in taken:
                    rank += 1
            else:
                rank = int(self._exec(conn, "SELECT COALESCE(MAX(rank), 0) FROM author_register "
                                      "WHERE meeting_id = ? AND group_id = ?", (mid, g)).fetchone()[0]) + 1
            self._insert_keys(conn, g, (d1, d2), known)
            self._insert_member(conn, g, source, rank, registered)
            return rank
        # The name bridges two groups: it renumbers neither and ranks after the highest of both.
        ga, gb = groups
        row = self._exec(conn, "SELECT rank FROM author_register WHERE meeting_id = ? "
                         "AND group_id IN (?, ?) AND source_digest = ? ORDER BY group_id LIMIT 1",
                         (mid, ga, gb, source)).fetchone()
        if row is not None:
            rank = int(row[0])
        else:
            rank = int(self._exec(conn, "SELECT COALESCE(MAX(rank), 0) FROM author_register "
                                  "WHERE meeting_id = ? AND group_id IN (?, ?)",
                                  (mid, ga, gb)).fetchone()[0]) + 1
        self._merge(conn, ga, gb)
        self._insert_keys(conn, ga, (d1, d2), {k: ga for k in known})
        if row is None:
            self._insert_member(conn, ga, source, rank, registered)
        return rank

    def _insert_keys(self, conn: Any, group: int, digests: tuple[bytes, bytes],
                     known: dict[bytes, int]) -> None:
        for d in digests:
            if d not in known:
                self._exec(conn, "INSERT INTO author_key (meeting_id, key_digest, group_id) "
                           "VALUES (?, ?, ?) ON CONFLICT DO NOTHING", (self.meeting_id, d, group))

    def _insert_member(self, conn: Any, group: int, source: bytes, rank: int, registered: bool) -> None:
        self._exec(conn, "INSERT INTO author_register (meeting_id, group_id, source_digest, rank, "
                   "registered) VALUES (?, ?, ?, ?, ?)",
                   (self.meeting_id, group, source, rank, 1 if registered else 0))

    def _merge(self, conn: Any, keep: int, drop: int) -> None:
        """Fold group ``drop`` into ``keep``; a source in both keeps its rank in ``keep``."""
        mid = self.meeting_id
        self._exec(conn, "DELETE FROM author_register WHERE meeting_id = ? AND group_id = ? AND "
                   "source_digest IN (SELECT source_digest FROM author_register "
                   "WHERE meeting_id = ? AND group_id = ?)", (mid, drop, mid, keep))
        self._exec(conn, "UPDATE author_register SET group_id = ? WHERE meeting_id = ? AND group_id = ?",
                   (keep, mid, drop))
        self._exec(conn, "UPDATE author_key SET group_id = ? WHERE meeting_id = ? AND group_id = ?",
                   (keep, mid, drop))

    # -- participants ----------------------------------------------------------------------

    def _registered_roster(self, participants: Sequence[Participant]) -> tuple[Participant, ...]:
        key = tuple(participants)
        roster = self._roster_cache.get(key)
        if roster is None:
            roster = tuple(sorted((p for p in key if p.registered and p.display_name
                                   and display_name(p.display_name)),
                                  key=lambda p: (p.id, p.display_name or "")))
            if len(self._roster_cache) > 64:
                self._roster_cache.clear()
            self._roster_cache[key] = roster
        return roster

    def _sync_roster(self, conn: Any, salt: bytes, stored: bytes | None,
                     participants: Sequence[Participant]) -> None:
        roster = self._registered_roster(participants)
        if not roster:
            return
        digest = self._digest(salt, b"roster", json.dumps(
            [[p.source_key, p.display_name] for p in roster], ensure_ascii=False))
        if digest == stored:
            return
        for p in roster:
            self._rank(conn, salt, p.display_name or "", self._digest(salt, b"source", p.source_key), True)
        self._exec(conn, "UPDATE meeting_secret SET roster = ? WHERE meeting_id = ?",
                   (digest, self.meeting_id))

    def register_participant(self, conn: Any, participant: Participant) -> int | None:
        """Register a participant the meeting registered (an enrolled voice, a LiveKit identity).

        Call it inside the meeting's lock when the participant joins. A participant registered
        before any look-alike spoke keeps the bare name; later, they take the lowest rank free
        (A11). :meth:`record_turn` also registers the ``participants`` it is given.

        Returns:
            The participant's rank (1 is the bare name), or None when they have no name or are
            not ``registered``.

        Raises:
            RuntimeError: outside a transaction.
        """
        self._lock(conn)
        if not participant.registered or not participant.display_name \
                or not display_name(participant.display_name):
            return None
        salt, _ = self._salt(conn, create=True)
        assert salt is not None
        return self._rank(conn, salt, participant.display_name,
                          self._digest(salt, b"source", participant.source_key), True)

    # -- turns -----------------------------------------------------------------------------

    def record_turn(self, conn: Any, turn_id: int, turn: SpeakerTurn,
                    participants: Sequence[Participant] = (), *,
                    assistant_id: str | None = None) -> SpeakerLabel | None:
        """Attribute a turn being committed and store the record with it (A12).

        Call inside the transaction that inserts the turn, under the meeting's lock. Every
        committed turn joins the register, whatever its visibility; registered participants in
        ``participants`` are registered first (their bare names reserved) when the roster
        changed since the last call.

        Args:
            conn: the store's connection, inside its transaction.
            turn_id: the store's id of the turn (``turns.id``).
            turn: the turn as committed.
            participants: the meeting's participant records (A4, A5, A11).
            assistant_id: the agent whose own turns read as ``assistant`` (see ``turn_role``).

        Returns:
            The label fixed for the turn, or None for a turn that carries no label (the
            assistant's own, an application instruction, a runtime event). An AI member's turn
            that names its agent (``metadata["agent_id"]``) is recorded with its name and rank
            also where it is the assistant's own, so that every other member's view reads it by
            that name (:meth:`labels_for` with their ``assistant_id``).

        Raises:
            RuntimeError: outside a transaction.
            ValueError: for an unknown turn role.
            TypeError: a participant that is not a :class:`Participant` (a bare name).
            sqlite3.IntegrityError / psycopg.errors.UniqueViolation: when ``turn_id`` already
                has a record.
        """
        check_participants(participants)
        self._lock(conn)
        role = turn_role(turn, assistant_id)
        salt, roster = self._salt(conn, create=True)
        assert salt is not None
        self._sync_roster(conn, salt, roster, participants)
        speaking = is_speaker_turn(role)
        if not speaking and agent_of(turn) is None:
            src = self._digest(salt, b"source", "role:" + role)
            self._store(conn, turn_id, None, None, src)
            return None
        # an AI member's turn is named and ranked whichever view commits it: it is another agent's
        # in every other member's view (A6: an AI member that has a name reads by its name)
        src = self._digest(salt, b"source", source_key(turn, participants))
        name = resolve_name(turn, participants)
        if name is None:
            self._store(conn, turn_id, None, None, src)
            return SpeakerLabel(None, None, turn.channel) if speaking else None
        p = find_participant(turn, participants)
        registered = bool(p is not None and p.registered and p.display_name
                          and source_key(turn, participants) == p.source_key)
        rank = self._rank(conn, salt, name, src, registered)
        self._store(conn, turn_id, name, rank, src)
        return SpeakerLabel(name, None if rank == 1 else rank, turn.channel) if speaking else None

    def _store(self, conn: Any, turn_id: int, name: str | None, rank: int | None, src: bytes) -> None:
        self._exec(conn, "INSERT INTO turn_attribution (turn_id, meeting_id, name, rank, source_digest) "
                   "VALUES (?, ?, ?, ?, ?)", (int(turn_id), self.meeting_id, name, rank, src))

    def labels_for(self, conn: Any, turns: Sequence[SpeakerTurn],
                   participants: Sequence[Participant] = (), *,
                   assistant_id: str | None = None) -> list[SpeakerLabel | None]:
        """The label of each turn as a model reads it (one entry per turn).

        A turn with a stored record reads with the name and rank it was committed with (A12). The
        turns without one (older data, or ``turn_id`` None) are ranked in the order of ``turns``,
        each against the register as it stands and the unrecorded turns before it, as
        :meth:`record_turn` would rank them if they were committed now one after another: two of
        them from two sources whose names read alike are told apart (A11), also in a store written
        before the register existed. Nothing is written: they are ranked in a private in-memory
        copy of this meeting's register (:meth:`_rank_unrecorded`). Turns that carry no label
        give None.

        Raises:
            TypeError: a participant that is not a :class:`Participant` (a bare name).
        """
        check_participants(participants)
        ids = [t.turn_id for t in turns if t.turn_id is not None]
        stored: dict[int, tuple[str | None, int | None]] = {}
        for i in range(0, len(ids), self._CHUNK):
            chunk = ids[i:i + self._CHUNK]
            marks = ", ".join("?" for _ in chunk)
            for row in self._exec(conn, f"SELECT turn_id, name, rank FROM turn_attribution "
                                  f"WHERE meeting_id = ? AND turn_id IN ({marks})",
                                  (self.meeting_id, *chunk)).fetchall():
                stored[int(row[0])] = (row[1], None if row[2] is None else int(row[2]))
        speaking = [is_speaker_turn(turn_role(t, assistant_id)) for t in turns]
        unrecorded = [t for t, s in zip(turns, speaking)
                      if s and (t.turn_id is None or t.turn_id not in stored)]
        ranked = iter(self._rank_unrecorded(conn, unrecorded, participants, assistant_id)
                      if unrecorded else ())
        out: list[SpeakerLabel | None] = []
        for t, s in zip(turns, speaking):
            if not s:
                out.append(None)
                continue
            rec = stored.get(t.turn_id) if t.turn_id is not None else None
            if rec is None:
                out.append(next(ranked))
                continue
            name, rank = rec
            out.append(SpeakerLabel(name, None if not rank or rank == 1 else rank, t.channel))
        return out

    def _rank_unrecorded(self, conn: Any, turns: Sequence[SpeakerTurn], participants: Sequence[Participant],
                         assistant_id: str | None) -> list[SpeakerLabel | None]:
        """Labels for speaker turns the register holds no record of, ranked in order, without
        writing to ``conn``.

        This meeting's salt, roster digest, look-alike keys and ranks are read in one statement
        (one consistent snapshot, as a writer under the meeting's lock left them) into a
        :class:`MemoryRegister`, where the turns are recorded one after another with
        :meth:`record_turn` (registered participants in ``participants`` reserved first, A11).
        With no register yet (an older store) the copy starts empty, with a salt of its own.
        """
        rows = self._exec(
            conn,
            # no NULL literals: PostgreSQL cannot match an untyped NULL column across a UNION
            "SELECT 0, salt, roster, 0, 0, 0 FROM meeting_secret WHERE meeting_id = ? "
            "UNION ALL SELECT 1, key_digest, key_digest, group_id, 0, 0 FROM author_key WHERE meeting_id = ? "
            "UNION ALL SELECT 2, source_digest, source_digest, group_id, rank, registered FROM author_register "
            "WHERE meeting_id = ?", (self.meeting_id,) * 3).fetchall()
        scratch = MemoryRegister(self.meeting_id)
        try:
            scratch.load(rows)
            return [scratch.record(t, participants, assistant_id=assistant_id) for t in turns]
        finally:
            scratch.close()

    # -- summaries (A15) -------------------------------------------------------------------

    def save_summary(self, conn: Any, summary: Summary) -> None:
        """Store a summary with the speakers it covers."""
        speakers = json.dumps([[s.name, s.rank, s.channel] for s in summary.speakers],
                              ensure_ascii=False)
        self._exec(conn, "INSERT INTO attribution_summary (meeting_id, through_turn_id, text, speakers) "
                   "VALUES (?, ?, ?, ?)", (self.meeting_id, summary.through_turn_id, summary.text, speakers))

    def latest_summary(self, conn: Any) -> Summary | None:
        """The meeting's latest summary with its speakers, or None."""
        row = self._exec(conn, "SELECT text, speakers, through_turn_id FROM attribution_summary "
                         "WHERE meeting_id = ? ORDER BY id DESC LIMIT 1", (self.meeting_id,)).fetchone()
        if row is None:
            return None
        speakers = tuple(SpeakerLabel(n, r, c) for n, r, c in json.loads(row[1]))
        return Summary(text=row[0], speakers=speakers,
                       through_turn_id=None if row[2] is None else int(row[2]))


class MemoryRegister:
    """The author register of a meeting that keeps no store, in memory: each turn recorded in turn,
    its rank fixed when it is recorded, as a store fixes it at commit (A11, A12).

    Runs :class:`AuthorRegister` on a private in-memory SQLite database, so two sources whose
    names read alike are told apart across every turn recorded, not only within one call.

    Args:
        meeting_id: the meeting id the private register is kept under (it matters only for a
            register :meth:`load` copied from a store).
    """

    def __init__(self, meeting_id: str = "memory") -> None:
        self._conn = sqlite3.connect(":memory:", check_same_thread=False)
        AuthorRegister.ensure_schema(self._conn)
        self._register = AuthorRegister(meeting_id)
        self._recorded = 0

    def load(self, rows: Sequence[Sequence[Any]]) -> None:
        """Fill the empty register with a copy of a store's register for the same meeting.

        Args:
            rows: ``(0, salt, roster, …)`` for the meeting's secret (at most one; ``roster``
                may be None), ``(1, key_digest, …, group_id, …)`` per look-alike key and
                ``(2, source_digest, …, group_id, rank, registered)`` per ranked source, as
                :meth:`AuthorRegister._rank_unrecorded` reads them (``…``: ignored); digests as
                ``bytes`` or ``memoryview``.
        """
        mid = self._register.meeting_id
        by_kind: dict[int, list[Sequence[Any]]] = {0: [], 1: [], 2: []}
        for row in rows:
            by_kind[int(row[0])].append(row)
        with meeting_lock(self._conn):
            self._conn.executemany(
                "INSERT INTO meeting_secret (meeting_id, salt, roster) VALUES (?, ?, ?)",
                [(mid, bytes(r[1]), None if r[2] is None else bytes(r[2])) for r in by_kind[0]])
            self._conn.executemany(
                "INSERT INTO author_key (meeting_id, key_digest, group_id) VALUES (?, ?, ?)",
                [(mid, bytes(r[1]), int(r[3])) for r in by_kind[1]])
            self._conn.executemany(
                "INSERT INTO author_register (meeting_id, group_id, source_digest, rank, registered) "
                "VALUES (?, ?, ?, ?, ?)", [(mid, int(r[3]), bytes(r[1]), int(r[4]), int(r[5])) for r in by_kind[2]])

    def record(self, turn: SpeakerTurn, participants: Sequence[Participant] = (), *,
               assistant_id: str | None = None) -> SpeakerLabel | None:
        """Record one turn and return its label (None for a turn that is not a speaker's)."""
        self._recorded += 1
        with meeting_lock(self._conn):
            return self._register.record_turn(self._conn, self._recorded, turn, participants,
                                              assistant_id=assistant_id)

    def close(self) -> None:
        """Free the in-memory database."""
        self._conn.close()


def rank_labels(turns: Sequence[SpeakerTurn], participants: Sequence[Participant] = (), *,
                assistant_id: str | None = None) -> list[SpeakerLabel | None]:
    """Labels for turns without a store: ranks given in the order of ``turns``
    (a fresh :class:`MemoryRegister` over them).

    Meant for tests and for callers that keep no store; a meeting with a store reads
    :meth:`AuthorRegister.labels_for` instead, whose ranks were fixed at commit, and a caller
    that labels turns one at a time keeps one :class:`MemoryRegister` for the meeting.
    """
    register = MemoryRegister()
    try:
        return [register.record(t, participants, assistant_id=assistant_id) for t in turns]
    finally:
        register.close()
