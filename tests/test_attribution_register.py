"""A12: ranks fixed at commit, stored with the turn, salted digests only, under the meeting's lock."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3

import pytest

from voicekit.attribution import (
    AuthorRegister,
    Participant,
    SpeakerLabel,
    attribution_on,
    meeting_lock,
)
from voicekit.attribution._unicode import name_keys
from voicekit.turns import SpeakerTurn


def turn(name: str | None, text: str = "hi", channel: str = "mic", **meta) -> SpeakerTurn:
    if name is not None:
        meta["sender_name"] = name
    return SpeakerTurn(speaker=meta.pop("speaker", f"Speaker {name}"), text=text, start=0.0,
                       end=1.0, channel=channel, metadata=meta)


class MiniStore:
    """A minimal meeting store for the tests: a ``turns`` table and the register."""

    def __init__(self, conn: sqlite3.Connection, meeting_id: str = "m1", participants=()):
        self.conn = conn
        self.participants = list(participants)
        conn.execute("CREATE TABLE IF NOT EXISTS turns (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                     "speaker TEXT, text TEXT, channel TEXT, sender_name TEXT, visibility TEXT)")
        AuthorRegister.ensure_schema(conn)
        conn.commit()
        self.register = AuthorRegister(meeting_id)

    def commit(self, t: SpeakerTurn, hook=None) -> tuple[SpeakerTurn, SpeakerLabel | None]:
        with meeting_lock(self.conn):
            cur = self.conn.execute(
                "INSERT INTO turns (speaker, text, channel, sender_name, visibility) VALUES (?, ?, ?, ?, ?)",
                (t.speaker, t.text, t.channel, t.metadata.get("sender_name"), t.metadata.get("visibility")))
            t = t.replace(turn_id=cur.lastrowid)
            label = self.register.record_turn(self.conn, t.turn_id, t, self.participants)
            if hook is not None:
                hook(t)  # a hook may block the turn by raising: nothing is committed
        return t, label

    def labels(self, turns):
        return [x.text if x else None for x in self.register.labels_for(self.conn, turns, self.participants)]


@pytest.fixture
def store(tmp_path):
    conn = sqlite3.connect(tmp_path / "meeting.db")
    yield MiniStore(conn)
    conn.close()


def test_a12_rank_is_fixed_at_commit_and_stable_as_the_window_slides(store):
    committed = [store.commit(turn(n, speaker=s))[0] for n, s in
                 [("Alice", "A"), ("ALICE", "B"), ("Bob", "C"), ("Аlice", "D"), ("ALICE", "B")]]
    full = store.labels(committed)
    assert full == ["Alice", "ALICE (2)", "Bob", "Аlice (3)", "ALICE (2)"]
    # a window that no longer holds Alice still reads ALICE (2): ranks are the meeting's
    assert store.labels(committed[1:]) == full[1:]
    assert store.labels(committed[3:]) == full[3:]


def test_a12_renamed_speaker_reads_as_named_then_on_earlier_turns(store):
    t1, _ = store.commit(turn("Speaker A", speaker="Speaker A"))
    t2, _ = store.commit(turn("Bob", speaker="Speaker B"))
    # a hook renames Speaker A to Alice from now on
    t3, _ = store.commit(turn("Alice", speaker="Speaker A"))
    assert store.labels([t1, t2, t3]) == ["Speaker A", "Bob", "Alice"]
    rows = store.conn.execute("SELECT name, rank FROM turn_attribution ORDER BY turn_id").fetchall()
    assert rows == [("Speaker A", 1), ("Bob", 1), ("Alice", 1)]


def test_a12_private_aside_joins_the_register_blocked_turn_does_not(store):
    store.commit(turn("Alice", speaker="A"))
    aside, label = store.commit(turn("ALICE", speaker="B", visibility="private"))
    assert label.text == "ALICE (2)"

    def block(_):
        raise PermissionError("hook blocked the turn")

    with pytest.raises(PermissionError):
        store.commit(turn("alice", speaker="C"), hook=block)
    assert store.conn.execute("SELECT COUNT(*) FROM turns").fetchone()[0] == 2
    # the blocked source took no rank; the aside kept its own
    t, label = store.commit(turn("aLiCe", speaker="D"))
    assert label.text == "aLiCe (3)"


def test_a12_turn_without_record_is_ranked_against_the_register_on_read(store):
    store.commit(turn("Alice", speaker="A"))
    old = store.commit(turn("ALICE", speaker="B"))[0]
    # older data: a turn committed before the register existed, with no record
    store.conn.execute("INSERT INTO turns (speaker, text, channel) VALUES ('X', 'old', 'mic')")
    legacy = turn("Аlice", speaker="X").replace(turn_id=999)
    assert store.labels([old, legacy]) == ["ALICE (2)", "Аlice (3)"]
    # reading wrote nothing
    assert store.conn.execute("SELECT COUNT(*) FROM author_register").fetchone()[0] == 2
    assert store.conn.execute("SELECT COUNT(*) FROM turn_attribution").fetchone()[0] == 2


def test_a11_a12_turns_without_a_record_are_told_apart_from_each_other(store):
    """Turns without a record are ranked in window order, each against the register and the
    unrecorded turns before it: two sources of look-alike names never share a label (A11), and
    a store written before the register existed (no record, no salt) still ranks. Nothing is
    written on read."""
    store.commit(turn("Alice", speaker="A"))
    legacy = [turn("ALICE", speaker="X").replace(turn_id=100), turn("alice", speaker="Y").replace(turn_id=101),
              turn("ALICE", speaker="X").replace(turn_id=102), turn("Alice", speaker="A").replace(turn_id=103)]
    assert store.labels(legacy) == ["ALICE (2)", "alice (3)", "ALICE (2)", "Alice"]
    assert store.conn.execute("SELECT COUNT(*) FROM author_register").fetchone()[0] == 1
    assert store.conn.execute("SELECT COUNT(*) FROM turn_attribution").fetchone()[0] == 1


def test_a11_a12_an_older_store_with_no_register_ranks_on_read(tmp_path):
    conn = sqlite3.connect(tmp_path / "old.db")
    old = MiniStore(conn)   # the register's tables exist, but nothing was ever recorded
    two_alices = [turn("Alice", speaker="Speaker A").replace(turn_id=1),
                  turn("Alice", speaker="Speaker B").replace(turn_id=2)]
    labels = old.register.labels_for(conn, two_alices)
    assert [x.text for x in labels] == ["Alice", "Alice (2)"]
    assert attribution_on(two_alices, labels)   # two people: the model is told who said what (A1)
    # a registered participant keeps the bare name (A11), as it would have at commit
    alice = Participant("u-alice", "Alice", channels=("room1/1",))
    window = [turn("ALICE", speaker="X").replace(turn_id=3),
              turn(None, participant_id="u-alice", channel="room1/1").replace(turn_id=4)]
    assert [x.text for x in old.register.labels_for(conn, window, [alice])] == ["ALICE (2)", "Alice"]
    assert conn.execute("SELECT COUNT(*) FROM meeting_secret").fetchone()[0] == 0   # nothing written
    conn.close()


def test_a12_register_keeps_only_salted_digests(store, tmp_path):
    secrets_ = ["Alice", "u-alice", "voice:alice", "Speaker A", "room1/2", "+15551234"]
    alice = Participant("u-alice", "Alice", identity_id="voice:alice", channels=("room1/2",))
    store.participants = [alice]
    store.commit(turn(None, participant_id="u-alice", channel="room1/2"))
    store.commit(turn("ALICE", speaker="Speaker A", participant_id="+15551234"))
    dump = b""
    for table in ("meeting_secret", "author_key", "author_register"):
        for row in store.conn.execute(f"SELECT * FROM {table}"):
            for v in row:
                dump += v if isinstance(v, bytes) else str(v).encode()
    forms = set()
    for s in secrets_:
        forms |= {s, s.casefold(), *name_keys(s)}
    for f in forms:
        assert f.encode() not in dump, f
    digests = [r[0] for r in store.conn.execute("SELECT key_digest FROM author_key")]
    assert digests and all(len(d) == 32 for d in digests)
    # a per-meeting salt: the same name gives other digests in another meeting
    other = MiniStore(store.conn, "m2")
    other.commit(turn("Alice", speaker="Speaker A"))
    by_meeting = {m: {r[0] for r in store.conn.execute(
        "SELECT key_digest FROM author_key WHERE meeting_id = ?", (m,))} for m in ("m1", "m2")}
    assert not (by_meeting["m1"] & by_meeting["m2"])
    salts = [r[0] for r in store.conn.execute("SELECT salt FROM meeting_secret ORDER BY meeting_id")]
    assert len(salts) == 2 and salts[0] != salts[1] and all(len(s) == 32 for s in salts)


def test_a12_writes_only_inside_the_meetings_lock(store):
    with pytest.raises(RuntimeError):
        store.register.record_turn(store.conn, 1, turn("Alice"))
    with pytest.raises(RuntimeError):
        store.register.register_participant(store.conn, Participant("p", "Alice"))
    with meeting_lock(store.conn):
        with pytest.raises(RuntimeError):
            with meeting_lock(store.conn):
                pass


def test_a12_assistant_instruction_event_turns_are_recorded_without_label(store):
    _, a = store.commit(turn(None, "ok", role="assistant"))
    _, i = store.commit(turn(None, "be brief", role="instruction"))
    assert a is None and i is None
    assert store.conn.execute("SELECT COUNT(*) FROM turn_attribution WHERE name IS NULL").fetchone()[0] == 2


def test_a6_t12_an_ai_members_reply_reads_by_its_name_in_every_other_members_view(tmp_path):
    # one store for a meeting with two AI members: Elena's reply is committed once, with no
    # assistant_id, and each member reads the window from its own side (a new-user audit: it read
    # '@replay' in Iris's view, and as Alice's words where store.labels() was used)
    from voicekit.attribution import build_chat_messages
    from voicekit.store import MeetingStore

    store = MeetingStore(tmp_path / "m.sqlite")
    turns = [store.commit(turn("Alice", "Ready?", channel="replay")),
             store.commit(turn("Elena", "I think so", channel="replay", role="assistant", agent_id="elena")),
             store.commit(turn("Bob", "Good.", channel="replay", speaker="Speaker B"))]
    iris = store.labels(turns, assistant_id="iris")
    assert [x.text if x else None for x in iris] == ["Alice", "Elena", "Bob"]
    assert [x.text if x else None for x in store.labels(turns, assistant_id="elena")] == ["Alice", None, "Bob"]
    assert [x.text if x else None for x in store.labels(turns)] == ["Alice", None, "Bob"]
    messages = build_chat_messages(turns, iris, assistant_id="iris")
    assert [m["role"] for m in messages] == ["user", "user", "user"]
    assert messages[1]["content"] == 'Elena: "I think so"'
    own = build_chat_messages(turns, store.labels(turns, assistant_id="elena"), assistant_id="elena")
    assert own[1] == {"role": "assistant", "content": "I think so"}
    # the agent is one source wherever its reply comes through (its agent_id, not the channel)
    again = store.commit(turn("Elena", "And one more thing", channel="ai2", speaker="x",
                              role="assistant", agent_id="elena"))
    assert store.labels([again], assistant_id="iris")[0].text == "Elena"
    # labels read for no agent, given to Iris's view: the error says how to read them
    with pytest.raises(ValueError, match=r"MeetingStore.labels\(turns, assistant_id="):
        build_chat_messages(turns, store.labels(turns), assistant_id="iris")


def _sqlite_worker(path, n, wid, barrier, out):
    names = ["Alice", "ALICE", "Аlice", "ａｌｉｃｅ"]
    conn = sqlite3.connect(path, timeout=30)
    st = MiniStore(conn)
    barrier.wait()
    got = []
    for i in range(n):
        t, lab = st.commit(turn(names[(wid + i) % len(names)], speaker=f"w{wid}-s{i % 2}"))
        got.append((t.turn_id, f"w{wid}-s{i % 2}", lab.rank or 1))
    out.put(got)
    conn.close()


def test_a12_sqlite_lock_two_processes_get_distinct_stable_ranks(tmp_path):
    path = str(tmp_path / "shared.db")
    MiniStore(sqlite3.connect(path))
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_sqlite_worker, args=(path, 60, w, barrier, out)) for w in range(2)]
    for p in procs:
        p.start()
    results = [r for _ in procs for r in out.get(timeout=120)]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    ranks: dict[str, set[int]] = {}
    for _, src, rank in results:
        ranks.setdefault(src, set()).add(rank)
    assert all(len(r) == 1 for r in ranks.values())  # stable
    assert sorted(r.pop() for r in ranks.values()) == [1, 2, 3, 4]  # distinct


def test_a12_through_the_pipeline_a_blocked_turn_takes_no_rank_a_private_one_does(tmp_path):
    """A12 on the real path (Pipeline → HookRunner → MeetingStore), not a minimal store: on a
    recording with four turns a hook names them Alice / ALICE (a private aside) / alice (blocked)
    / aLiCe; the blocked turn is not stored and took no rank, the aside kept its own."""
    from _pipeline_support import EVAL, components

    from voicekit.hooks import HookResult, HookRunner
    from voicekit.pipeline import Pipeline, PipelineOptions
    from voicekit.sources import FileSource
    from voicekit.store import MeetingStore

    names = iter(["Alice", "ALICE", "alice", "aLiCe"])

    def name_each_turn(t):  # noqa: ANN001, ANN202
        name = next(names, None)
        if name is None:
            return None
        if name == "alice":
            return HookResult.blocked()
        meta = {**t.metadata, "sender_name": name, **({"visibility": "private"} if name == "ALICE" else {})}
        return t.replace(metadata=meta)

    hooks = HookRunner()
    hooks.register(name_each_turn)
    store = MeetingStore(tmp_path / "meeting.sqlite")
    try:
        result = Pipeline(PipelineOptions(), components(), hooks=hooks, store=store).run(
            FileSource(EVAL / "pyaudioanalysis" / "diarizationExample.wav"))
        turns = store.turns()
        labels = [lab.text for lab in store.labels(turns)]
    finally:
        hooks.close()
        store.close()
    print(labels)
    assert result.blocked == 1
    assert labels[:3] == ["Alice", "ALICE (2)", "aLiCe (3)"]
    assert all(t.sender_name != "alice" for t in turns)
