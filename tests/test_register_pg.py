"""A12 with PostgreSQL: the register shared by several processes under an advisory lock.

Needs a PostgreSQL server: ``VOICEKIT_PG_DSN`` (default: the throwaway cluster of
``shared/tools/pg-test.sh``, ``postgresql://postgres@127.0.0.1:55432/postgres``). Skipped when
none is reachable, unless ``VOICEKIT_REQUIRE_PG`` is set (CI), which makes that a failure.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import uuid

import pytest

from voicekit.attribution import Participant
from voicekit.turns import SpeakerTurn

DSN = os.environ.get("VOICEKIT_PG_DSN", "postgresql://postgres@127.0.0.1:55432/postgres")
REQUIRED = bool(os.environ.get("VOICEKIT_REQUIRE_PG"))


def _server_problem() -> str | None:
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - depends on the machine
        return f"psycopg is not installed ({exc})"
    try:
        with psycopg.connect(DSN, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:  # noqa: BLE001 - any failure means no server to test against
        return f"no PostgreSQL reachable at {DSN}: {exc}".strip()
    return None


@pytest.fixture(scope="module")
def dsn():
    problem = _server_problem()
    if problem:
        if REQUIRED:
            pytest.fail(f"VOICEKIT_REQUIRE_PG is set but {problem}")
        pytest.skip(f"{problem} (set VOICEKIT_PG_DSN, or VOICEKIT_REQUIRE_PG=1 to make this fail)")
    from voicekit.store.postgres import PostgresMeetingStore

    store = PostgresMeetingStore.connect(DSN, "schema")
    store.ensure_schema()
    store.close()
    return DSN


def turn(name: str | None, text: str = "hi", channel: str = "mic", **meta) -> SpeakerTurn:
    if name is not None:
        meta["sender_name"] = name
    return SpeakerTurn(speaker=meta.pop("speaker", f"Speaker {name}"), text=text, start=0.0,
                       end=1.0, channel=channel, metadata=meta)


def test_a12_pg_store_commits_turns_with_ranks_and_reads_them_back(dsn):
    from voicekit.store.postgres import PostgresMeetingStore

    store = PostgresMeetingStore.connect(dsn, "m-" + uuid.uuid4().hex)
    try:
        alice = Participant("u-alice", "Alice", channels=("room1/1",))
        assert store.add_participant(alice) == 1
        got = [store.commit_turn(t, [alice])[1].text for t in [
            turn("ALICE", speaker="A"), turn(None, participant_id="u-alice", channel="room1/1"),
            turn("Аlice", speaker="B"), turn(None, channel="room1/2")]]
        assert got == ["ALICE (2)", "Alice", "Аlice (3)", "@room1/2"]
        turns = store.turns()
        assert [t.text for t in turns] == ["hi"] * 4 and turns[0].metadata == {"sender_name": "ALICE"}
        assert [x.text for x in store.labels_for(turns[1:], [alice])] == got[1:]
        # the register holds digests only
        raw = store.conn.execute("SELECT key_digest FROM author_key WHERE meeting_id = %s",
                                 (store.meeting_id,)).fetchall()
        assert raw and all(len(r[0]) == 32 for r in raw)
        store.conn.commit()
    finally:
        store.close()


def test_a11_a12_pg_turns_without_a_record_are_ranked_in_order_without_writing(dsn):
    """The register is copied from PostgreSQL in one statement and the unrecorded turns ranked in
    the copy: two look-alike sources are told apart, a source of the register keeps its rank."""
    from voicekit.store.postgres import PostgresMeetingStore

    store = PostgresMeetingStore.connect(dsn, "m-" + uuid.uuid4().hex)
    try:
        store.commit_turn(turn("Alice", speaker="A"))
        legacy = [turn("ALICE", speaker="X"), turn("alice", speaker="Y"), turn("Alice", speaker="A")]
        assert [x.text for x in store.labels_for(legacy)] == ["ALICE (2)", "alice (3)", "Alice"]
        count = store.conn.execute("SELECT COUNT(*) FROM author_register WHERE meeting_id = %s",
                                   (store.meeting_id,)).fetchone()[0]
        assert count == 1
        store.conn.commit()
        fresh = PostgresMeetingStore.connect(dsn, "m-" + uuid.uuid4().hex)   # no register row at all
        try:
            assert [x.text for x in fresh.labels_for(legacy[:2])] == ["ALICE", "alice (2)"]
        finally:
            fresh.close()
    finally:
        store.close()


def test_a12_pg_record_outside_a_transaction_is_refused(dsn):
    import psycopg

    from voicekit.store.postgres import PostgresAuthorRegister

    with psycopg.connect(dsn, autocommit=True) as conn:
        with pytest.raises(RuntimeError):
            PostgresAuthorRegister("m-" + uuid.uuid4().hex).record_turn(conn, 1, turn("Alice"))


NAMES = ["Alice", "ALICE", "\u0410lice", "\uff41\uff4c\uff49\uff43\uff45", "Al\u200bice", "aLiCe"]
OLGA = ["Olga", "\u041eLGA", "olga", "\u039flga"]  # Cyrillic O, Greek Omicron


def _pg_worker(dsn: str, meeting: str, wid: int, commits: int, barrier, out) -> None:
    from voicekit.store.postgres import PostgresMeetingStore

    store = PostgresMeetingStore.connect(dsn, meeting)
    barrier.wait()  # every process starts committing at the same moment
    got = []
    for i in range(commits):
        k = i % 5
        if k < 3:
            src, name = f"w{wid}-alice{k}", NAMES[(wid * 3 + k) % len(NAMES)]
        else:
            src, name = f"w{wid}-olga{k}", OLGA[(wid * 2 + k - 3) % len(OLGA)]
        t, label = store.commit_turn(turn(name, text=f"{wid}:{i}", source_id=src))
        got.append((t.turn_id, src, name, label.rank or 1))
    store.close()
    out.put(got)


def test_a12_pg_two_processes_at_a_barrier_get_distinct_stable_ranks(dsn):
    from voicekit.store.postgres import PostgresMeetingStore

    meeting, workers, commits = "m-" + uuid.uuid4().hex, 3, 220
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(workers), ctx.Queue()
    procs = [ctx.Process(target=_pg_worker, args=(dsn, meeting, w, commits, barrier, out))
             for w in range(workers)]
    for p in procs:
        p.start()
    results = [row for _ in procs for row in out.get(timeout=300)]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert len(results) == workers * commits
    assert len({r[0] for r in results}) == workers * commits  # every commit got its own turn id

    rank_of: dict[str, set[int]] = {}
    first_id: dict[str, int] = {}
    for tid, src, _, rank in results:
        rank_of.setdefault(src, set()).add(rank)
        first_id[src] = min(first_id.get(src, tid), tid)
    assert all(len(r) == 1 for r in rank_of.values()), rank_of  # stable ranks
    alice = [s for s in rank_of if "alice" in s]
    olga = [s for s in rank_of if "olga" in s]
    # distinct ranks within each look-alike group, 1..n, given in commit order
    for group in (alice, olga):
        by_commit = sorted(group, key=first_id.__getitem__)
        assert [next(iter(rank_of[s])) for s in by_commit] == list(range(1, len(group) + 1))

    # read back through a fresh connection: the ranks stored with the turns are the same
    store = PostgresMeetingStore.connect(dsn, meeting)
    try:
        turns = store.turns()
        labels = store.labels_for(turns)
        by_id = {tid: rank for tid, _, _, rank in results}
        assert len(turns) == workers * commits
        assert all((lab.rank or 1) == by_id[t.turn_id] for t, lab in zip(turns, labels))
    finally:
        store.close()


def test_ensure_schema_takes_no_table_lock_once_the_tables_exist(dsn):
    """A review: every ensure_schema ran CREATE INDEX IF NOT EXISTS, which takes a table lock in
    the opposite order to a commit's, and two programs starting one meeting deadlocked (one lost
    its turns). Here another connection holds a commit's lock on ``turns``; ensure_schema must not
    wait for it."""
    import psycopg

    from voicekit.store.postgres import PostgresMeetingStore

    with psycopg.connect(dsn) as holder:
        holder.execute("INSERT INTO turns (meeting_id, speaker, text, start_s, end_s, channel, metadata, words) "
                       "VALUES ('m-held', 'A', 'x', 0, 1, 'mic', '{}', '[]')")   # RowExclusiveLock, not committed
        store = PostgresMeetingStore.connect(dsn + "?options=-c%20lock_timeout%3D2000", "m-" + uuid.uuid4().hex)
        try:
            store.ensure_schema()   # the old DDL: LockNotAvailable after 2 s
            assert store.commit_turn(turn("Alice"))[0].turn_id is not None
        finally:
            store.close()
        holder.rollback()


def test_a_failed_call_leaves_the_store_usable_and_names_ensure_schema(dsn):
    """A review: a read that failed (a missing table, a cancelled query) left the connection in
    an aborted transaction, and every later commit of the meeting failed."""
    import psycopg

    from voicekit.store.postgres import PostgresMeetingStore

    schema = "vk_" + uuid.uuid4().hex[:12]
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            store = PostgresMeetingStore.connect(f"{dsn}?options=-c%20search_path%3D{schema}", "m-1")
            try:
                with pytest.raises(RuntimeError, match=r"tables do not exist.*call ensure_schema\(\) once"):
                    store.turns()
                with pytest.raises(RuntimeError, match="ensure_schema"):
                    store.commit_turn(turn("Alice"))
                store.ensure_schema()
                with pytest.raises(ValueError, match="last must be 0 or more"):
                    store.turns(last=-1)
                assert [t.text for t in store.turns()] == []
                assert store.commit_turn(turn("Alice", text="after"))[1].text == "Alice"
                assert [t.text for t in store.turns()] == ["after"]
            finally:
                store.close()
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def test_commit_turn_checks_a_turn_as_the_sqlite_store_does(dsn):
    """A review: a NUL character failed inside the transaction with a database error, numpy
    metadata raised where SQLite writes its str(), and NaN times were stored."""
    import numpy as np

    from voicekit.store.postgres import PostgresMeetingStore

    store = PostgresMeetingStore.connect(dsn, "m-" + uuid.uuid4().hex)
    try:
        for bad, message in ((turn("Alice", text="a\x00b"), "NUL character"),
                             (turn("Al\x00ice"), "NUL character"),
                             (turn("Alice", note={"k": "\x00"}), "NUL character"),
                             (turn("Alice").replace(start=float("nan")), "finite seconds"),
                             (turn("Alice", score=float("inf")), "Out of range float values")):
            with pytest.raises(ValueError, match=message):
                store.commit_turn(bad)
        stored, _ = store.commit_turn(turn("Alice", score=np.float32(0.5), text="ok \\u0000 typed"))
        back = store.turns()
        assert [t.text for t in back] == ["ok \\u0000 typed"] and back[0].metadata["score"] == "0.5"
    finally:
        store.close()


def test_connect_gives_up_on_a_server_that_does_not_answer(monkeypatch):
    """A review: connect() against a server that accepts TCP and never answers waited forever."""
    import socket
    import time

    import psycopg

    import voicekit.store.postgres as pg

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        monkeypatch.setattr(pg, "CONNECT_TIMEOUT_S", 2)
        t0 = time.monotonic()
        with pytest.raises(psycopg.OperationalError):
            pg.PostgresMeetingStore.connect(f"postgresql://x@127.0.0.1:{silent.getsockname()[1]}/db", "m")
        assert time.monotonic() - t0 < 30
