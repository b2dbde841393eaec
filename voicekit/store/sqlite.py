"""The embedded meeting store: SQLite in WAL mode, one file per meeting (``DIR/meeting.sqlite``).

Each committed turn is written in its own transaction, so a crash, a Ctrl-C or a killed process
loses nothing already committed; ``voicekit export DIR`` rebuilds every output from here. The
store keeps the live speaker label (what was emitted, never changed) and, after refinement, the
refined label beside it.
"""

from __future__ import annotations

import errno
import json
import logging
import math
import os
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from voicekit.attribution import AuthorRegister, Participant, meeting_lock
from voicekit.turns import (SpeakerTurn, Word, inherited_names, join_touching, join_words, majority_label,
                            metadata_json, rename_turns, split_by_labels)

SCHEMA = """
CREATE TABLE IF NOT EXISTS meeting (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS turns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    channel TEXT NOT NULL,
    speaker TEXT NOT NULL,
    sender_name TEXT NOT NULL,
    text TEXT NOT NULL,
    start REAL NOT NULL,
    "end" REAL NOT NULL,
    words TEXT NOT NULL,
    metadata TEXT NOT NULL,
    emitted_at REAL,
    committed_at REAL NOT NULL,
    refined_speaker TEXT,
    refined_words TEXT,
    sent INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS turns_start ON turns(start);
CREATE TABLE IF NOT EXISTS speaker_names (speaker TEXT PRIMARY KEY, name TEXT NOT NULL);
-- speaker embeddings of each utterance's windows, kept only when asked (--keep-embeddings) so that
-- `voicekit export --refine` can re-cluster the meeting later: float64 times, float32 vectors
CREATE TABLE IF NOT EXISTS embeddings (
    utterance INTEGER PRIMARY KEY,
    starts BLOB NOT NULL,
    ends BLOB NOT NULL,
    vectors BLOB NOT NULL,
    dim INTEGER NOT NULL
);
"""


SCHEMA_VERSION = 1
"""The layout of a meeting store, in its SQLite header (``PRAGMA user_version``). Stores written
before it was recorded say 0 and are read as 1 (the columns added since are added,
:meth:`MeetingStore._add_missing_columns`), then marked 1 when writable. A store of a later
version is refused and left as it is: its tables may mean what this voicekit does not know.
A change of layout that an older voicekit would misread raises it."""

# a meta key's row (and so its place in meta()'s order) is kept when its value changes
_META_UPSERT = "INSERT INTO meeting(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"
_NAMES_UPSERT = "INSERT OR REPLACE INTO speaker_names(speaker, name) VALUES (?, ?)"


@dataclass(frozen=True)
class ResumePoint:
    """Where a session that continues a stored meeting begins (``voicekit mic --append``).

    Attributes:
        start_time: meeting time in seconds of the new session's first sample: the end of the
            stored meeting's audio (the latest of its recorded ``duration``, its last turn's end
            and its last kept window's end: a crash leaves no duration), so the sessions read as
            one recording without the gap.
        next_utterance: the first utterance index not stored (kept embeddings are keyed by it).
    """

    start_time: float
    next_utterance: int


class StoreError(Exception):
    """The meeting store cannot be opened or written. The message names the fix."""


@dataclass(frozen=True)
class StoreAccess:
    """Why this user may not read or write a meeting store: permissions or a read-only file
    system, not damage (the file itself may be a whole meeting).

    Attributes:
        problem: what failed, ``cannot write OUT/meeting.sqlite (read-only: permission denied)``.
        remedy: what gives access, ``make the folder OUT writable``.
    """

    problem: str
    remedy: str


_READ_ONLY_ERRNOS = (errno.EACCES, errno.EPERM, errno.EROFS)


FULL_BYTES = 1 << 20
"""Free space under which an I/O error of SQLite's counts as a full disk (bytes)."""


def _disk_full(exc: BaseException, folder: Path) -> bool:
    """Whether ``exc`` says the disk (or the user's quota) under ``folder`` is full: SQLite's
    ``SQLITE_FULL`` ("database or disk is full"), an ``OSError`` ENOSPC / EDQUOT, or an I/O
    error of SQLite's while less than :data:`FULL_BYTES` are free there (SQLite says "disk I/O
    error", ``SQLITE_IOERR_SHMSIZE``, when the database file fits but its 32 KiB ``-shm`` does
    not)."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name == "SQLITE_FULL" or "disk is full" in str(exc).lower():
        return True
    if name.startswith("SQLITE_IOERR") or "disk i/o error" in str(exc).lower():
        try:
            fs = os.statvfs(folder)
        except OSError:
            return False
        return fs.f_bavail * fs.f_frsize < FULL_BYTES
    return False


def _names(path: Path, files: list[Path]) -> str:
    """``meeting.sqlite``, ``meeting.sqlite and its -wal, -shm files`` or ``meeting.sqlite-shm``:
    which of a store's files ``files`` holds."""
    extra = [p.name[len(path.name):] for p in files if p != path]
    if path not in files:
        return " and ".join(p.name for p in files)
    return path.name + (f" and its {', '.join(extra)} file{'s' if len(extra) > 1 else ''}" if extra else "")


def access_problem(path: str | Path, exc: BaseException) -> StoreAccess | None:
    """Tell an error met opening or writing the SQLite store at ``path`` that is about access
    (SQLite's ``SQLITE_READONLY*`` "attempt to write a readonly database", ``SQLITE_CANTOPEN``
    "unable to open database file" for a file or folder this user may not read, ``SQLITE_PERM``;
    an ``OSError`` EACCES / EPERM / EROFS) from damage and every other failure.

    SQLite opens a file it may not write read-only without a word and fails on the first write,
    which for a WAL store is the shared-memory file it makes beside it, so even a read fails in a
    folder this user may not write: the folder, the store and its ``-wal``/``-shm`` files are
    looked at (``os.access``, ``os.statvfs``) to say which one to fix.

    Returns:
        the problem and its remedy; None when ``exc`` is not about access (a damaged file, a full
        disk, or a file SQLite cannot open although this user may read it).
    """
    path = Path(path)
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc).lower()
    if isinstance(exc, OSError):
        if exc.errno not in _READ_ONLY_ERRNOS:
            return None
        kind = "read-only fs" if exc.errno == errno.EROFS else "write"
    elif name.startswith("SQLITE_READONLY") or "readonly database" in text:
        kind = "write"
    elif name.startswith(("SQLITE_CANTOPEN", "SQLITE_PERM")) or "unable to open database file" in text:
        kind = "read"
    else:
        return None
    folder = path.parent
    files = [p for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists()]
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            kind = "read-only fs"
    except OSError:
        pass
    if kind == "read-only fs":
        return StoreAccess(f"cannot write {path} (read-only file system)",
                           f"mount the file system of {folder} read-write")
    if not os.access(folder, os.X_OK):
        return StoreAccess(f"cannot read {path} (permission denied)", f"make the folder {folder} readable")
    unreadable = [p for p in files if not os.access(p, os.R_OK)]
    if unreadable:
        return StoreAccess(f"cannot read {path} (permission denied)", f"make {_names(path, unreadable)} readable")
    if kind == "read":
        return None   # it may be read: SQLite failed for another reason
    if not os.access(folder, os.W_OK):
        return StoreAccess(f"cannot write {path} (read-only: permission denied)", f"make the folder {folder} writable")
    unwritable = [p for p in files if not os.access(p, os.W_OK)]
    if unwritable:
        return StoreAccess(f"cannot write {path} (read-only: permission denied)",
                           f"make {_names(path, unwritable)} writable")
    return StoreAccess(f"cannot write {path} (read-only)", "make it and its folder writable")


def _words_json(words: tuple[Word, ...]) -> str:
    return json.dumps([[w.start, w.end, w.text, round(w.probability, 4), w.speaker] for w in words],
                      ensure_ascii=False)


def _words_from_json(text: str) -> tuple[Word, ...]:
    return tuple(Word(s, e, t, p, spk) for s, e, t, p, spk in json.loads(text))


TURN_COLUMNS = 'id, channel, speaker, sender_name, text, start, "end", words, metadata, emitted_at'
"""The ``turns`` columns :func:`turn_from_row` reads, in its order (prefix them in a join)."""


def turn_from_row(row: Sequence) -> SpeakerTurn:
    """A committed :class:`SpeakerTurn` from a row of :data:`TURN_COLUMNS` (live labels)."""
    tid, channel, speaker, sender, text, start, end, words, metadata, emitted = row
    meta = json.loads(metadata)
    if sender:
        meta["sender_name"] = sender
    return SpeakerTurn(speaker=speaker, text=text, start=start, end=end, words=_words_from_json(words),
                       channel=channel, metadata=meta, turn_id=tid, emitted_at=emitted)


def meta_values(rows) -> tuple[dict[str, Any], dict[str, str]]:  # noqa: ANN001 - (key, value) rows
    """The meeting metadata of ``(key, JSON text)`` rows, and the values that are not JSON (a
    damaged store: left out of the first, the raw text by key in the second). ``NaN`` and
    ``Infinity``, which Python's reader takes but strict JSON has not, are damage too: the JSON
    output could not be written with them."""
    out: dict[str, Any] = {}
    damaged: dict[str, str] = {}
    for key, value in rows:
        try:
            out[key] = json.loads(value, parse_constant=_not_json)
        except (TypeError, ValueError):
            damaged[key] = str(value)
    return out, damaged


def _not_json(constant: str) -> None:
    raise ValueError(f"{constant} is not JSON")


class MeetingStore:
    """A meeting's turns in SQLite.

    Args:
        path: the database file (``DIR/meeting.sqlite``); its directory is created.
        meeting_id: the meeting's id in the attribution register.

    Raises:
        StoreError: when the directory or the file is not writable (the message says which to
            make writable, :func:`access_problem`), the disk is full (it says to free space), or
            the file is not a voicekit store.
    """

    def __init__(self, path: str | Path, meeting_id: str = "default") -> None:
        self.path = Path(path)
        self._bad_meta: set[str] = set()   # damaged metadata keys, warned of once
        self.register = AuthorRegister(meeting_id)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None,
                                        check_same_thread=False)
            tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables and "turns" not in tables:   # another program's database: never written into
                self.conn.close()
                raise StoreError(f"{self.path} is another SQLite database (tables: {', '.join(sorted(tables))}), "
                                 "not a voicekit meeting store: voicekit leaves it as it is; give a new path")
            (version,) = self.conn.execute("PRAGMA user_version").fetchone()
            if version > SCHEMA_VERSION:   # (an ops trial: nothing recorded a store's layout)
                self.conn.close()
                raise StoreError(f"{self.path} was written by a newer voicekit (meeting store layout {version}; "
                                 f"this voicekit reads up to {SCHEMA_VERSION}): voicekit leaves it as it is; "
                                 "read it with the voicekit that wrote it, or a later one")
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            # freed pages are overwritten with zeros whatever SQLite's build: dropped speaker
            # embeddings leave no bytes in the file (docs/privacy.md)
            self.conn.execute("PRAGMA secure_delete=ON")
            self.conn.executescript(SCHEMA)
            self._add_missing_columns()
            AuthorRegister.ensure_schema(self.conn)
            if version < SCHEMA_VERSION:
                try:
                    self.conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                except sqlite3.OperationalError:   # a read-only store (export reads it): stays unmarked
                    pass
        except (OSError, sqlite3.Error) as exc:
            if isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError):
                raise StoreError(f"the meeting store {self.path} is damaged or not a voicekit store ({exc}): "
                                 f"voicekit leaves it as it is; `sqlite3 {self.path} .recover` may save its "
                                 "turns into a new database") from exc
            access = access_problem(self.path, exc)
            if access is not None:
                raise StoreError(f"{access.problem}: {access.remedy}, or choose another --out") from exc
            if _disk_full(exc, self.path.parent):
                raise StoreError(f"cannot open the meeting store {self.path} ({exc}): free disk space "
                                 f"on {self.path.parent}, or choose an --out on another disk") from exc
            raise StoreError(f"cannot open the meeting store {self.path} ({exc}); "   # cannot open or write it
                             "choose a writable --out directory") from exc

    def _add_missing_columns(self) -> None:
        """A store written by an earlier voicekit lacks the columns added since (``CREATE TABLE IF
        NOT EXISTS`` keeps the old table): add each one, as ``SCHEMA`` declares it, so that
        ``voicekit export`` reads old meetings too. The added columns are empty (NULL / 0)."""
        have = {row[1] for row in self.conn.execute("PRAGMA table_info(turns)")}
        for column, decl in (("emitted_at", "REAL"), ("committed_at", "REAL NOT NULL DEFAULT 0"),
                             ("refined_speaker", "TEXT"), ("refined_words", "TEXT"),
                             ("sent", "INTEGER NOT NULL DEFAULT 0")):
            if column not in have:
                self.conn.execute(f"ALTER TABLE turns ADD COLUMN {column} {decl}")

    # --- meeting metadata -------------------------------------------------------------------
    def _write_error(self, exc: sqlite3.Error) -> StoreError:
        access = access_problem(self.path, exc)
        if access is not None:
            return StoreError(f"{access.problem}: {access.remedy}")
        return StoreError(f"cannot write to the meeting store {self.path} ({exc})"
                          + ("; free disk space" if _disk_full(exc, self.path.parent) else ""))

    def set_meta(self, **values: Any) -> None:
        """Store meeting metadata (JSON-serialisable values).

        Raises:
            StoreError: when the store cannot be written (disk full, read-only).
            TypeError, ValueError: a value that is not JSON (a NaN or infinite number: strict JSON
                has none, and the transcript's JSON could not be written); nothing is written.
        """
        rows = [(k, json.dumps(v, ensure_ascii=False, allow_nan=False)) for k, v in values.items()]
        try:
            with self.conn:
                self.conn.executemany(_META_UPSERT, rows)
        except sqlite3.Error as exc:
            raise self._write_error(exc) from exc

    def meta(self) -> dict[str, Any]:
        """All meeting metadata, in the order the keys were first stored. A value that is not JSON
        (a damaged store) is left out, with a warning: a store review found one damaged key (the
        model's name) keeping `voicekit export` from every committed turn."""
        rows = self.conn.execute("SELECT key, value FROM meeting ORDER BY rowid").fetchall()
        out, damaged = meta_values(rows)
        for key in damaged.keys() - self._bad_meta:
            self._bad_meta.add(key)
            logging.getLogger("voicekit.store").warning(
                "%s: the meeting's %r is damaged (%r is not JSON): left out", self.path, key, damaged[key][:40])
        return out

    # --- turns ------------------------------------------------------------------------------
    def commit(self, turn: SpeakerTurn, participants: Sequence[Participant] = ()) -> SpeakerTurn:
        """Commit one turn durably, with its attribution record (name, rank, salted source
        digest: attribution.md A12), in one transaction under the meeting's lock.

        Args:
            turn: the turn; ``metadata["sender_name"]`` is stored as given (absent = no name).
            participants: the meeting's participant records, for name resolution (A4, A5).

        Returns:
            the turn with ``turn_id`` set.

        Raises:
            StoreError: when the store cannot be written (disk full, read-only, locked too long).
            ValueError: a turn whose times are not finite seconds (NaN, infinity); nothing is
                written.
            TypeError, ValueError: metadata that is not JSON (:func:`voicekit.turns.metadata_json`);
                nothing is written.
        """
        if not (math.isfinite(turn.start) and math.isfinite(turn.end)):
            raise ValueError(f"a turn's times must be finite seconds, got {turn.start!r}.."
                             f"{turn.end!r} ({turn.speaker}: {turn.text[:40]!r})")
        sender = str(turn.metadata.get("sender_name") or "").strip()
        metadata = metadata_json(turn.metadata)
        try:
            with meeting_lock(self.conn):
                cur = self.conn.execute(
                    'INSERT INTO turns(channel, speaker, sender_name, text, start, "end", words, metadata,'
                    " emitted_at, committed_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (turn.channel, turn.speaker, sender, turn.text, turn.start, turn.end,
                     _words_json(turn.words), metadata,
                     turn.emitted_at, time.time()))
                committed = turn.replace(turn_id=cur.lastrowid)
                self.register.record_turn(self.conn, committed.turn_id, committed, participants)
        except sqlite3.Error as exc:
            raise self._write_error(exc) from exc
        return committed

    def labels(self, turns: Sequence[SpeakerTurn], participants: Sequence[Participant] = (), *,
               assistant_id: str | None = None):
        """The attribution label of each turn as committed (``SpeakerLabel`` or None), as the
        agent ``assistant_id`` reads them: its own turns give None, another AI member's turn
        (``metadata["agent_id"]``) its name (``turn_role``; a meeting with several AI members
        asks once per member). Without it, ``assistant``-role turns give None."""
        return self.register.labels_for(self.conn, turns, participants, assistant_id=assistant_id)

    def set_speaker_names(self, names: dict[str, str]) -> None:
        """Record persistent renames (speaker label -> name).

        Raises:
            StoreError: when the store cannot be written (disk full, read-only).
        """
        try:
            with self.conn:
                self.conn.executemany(_NAMES_UPSERT, list(names.items()))
        except sqlite3.Error as exc:
            raise self._write_error(exc) from exc

    def rename_speakers(self, names: dict[str, str]) -> None:
        """Name speakers after the meeting (``voicekit export --speaker-names``), label -> name.

        The names are kept in the meeting metadata (``meta()["renamed"]``, merged with earlier
        ones) and as persistent names (:meth:`set_speaker_names`: a meeting that goes on with
        ``--append`` emits the label's new turns under its name). The turns as committed are not
        changed: :meth:`turns` with ``renamed=True`` shows every turn of a renamed label under
        its new name.

        Raises:
            StoreError: when the store cannot be written (disk full, read-only); nothing is
                changed then.
        """
        renamed = {**self.renamed_speakers(), **names}
        try:
            with self.conn:
                self.conn.execute(_META_UPSERT, ("renamed", json.dumps(renamed, ensure_ascii=False)))
                self.conn.executemany(_NAMES_UPSERT, list(names.items()))
        except sqlite3.Error as exc:
            raise self._write_error(exc) from exc

    def renamed_speakers(self) -> dict[str, str]:
        """The names given after the meeting (:meth:`rename_speakers`), label -> name."""
        row = self.conn.execute("SELECT value FROM meeting WHERE key = 'renamed'").fetchone()
        return json.loads(row[0]) if row else {}

    def speaker_names(self, refined: bool = False) -> dict[str, str]:
        """Persistent renames, speaker label -> name.

        Args:
            refined: the names of the refined view: also the name a named label that refinement
                emptied passes to the unnamed label that took its words
                (:func:`voicekit.turns.inherited_names`).
        """
        names = dict(self.conn.execute("SELECT speaker, name FROM speaker_names"))
        return self._refined_view(names)[0] if refined and names else names

    def set_refined(self, refined: dict[int, list[str]]) -> None:
        """Record the refined speaker label of every word (turn id -> one label per word).

        The turn's ``refined_speaker`` is the label of most of its words (a tie keeps the live
        label); a turn whose words
        disagree is split into several refined turns by :meth:`turns` (``refined=True``).

        Raises:
            StoreError: when the store cannot be written (disk full, read-only); the live
                labels are untouched.
        """
        live = dict(self.conn.execute("SELECT id, speaker FROM turns"))
        rows = []
        for tid, labels in refined.items():
            major = majority_label(labels, live.get(tid)) if labels else None
            rows.append((major, json.dumps(labels), tid))
        try:
            with self.conn:
                self.conn.executemany("UPDATE turns SET refined_speaker = ?, refined_words = ? WHERE id = ?", rows)
        except sqlite3.Error as exc:
            raise self._write_error(exc) from exc

    def changed_turns(self) -> list[tuple[int, str, str]]:
        """Turns whose refined speaker differs from the live one: ``(turn id, live, refined)``."""
        return list(self.conn.execute(
            "SELECT id, speaker, refined_speaker FROM turns WHERE refined_speaker IS NOT NULL "
            "AND refined_speaker != speaker ORDER BY id"))

    def relabelled_turns(self) -> int:
        """How many live turns the refined view moves, whole or in part: at least one word given
        another speaker (the turns of :meth:`changed_turns`, and those moved only in part); a
        turn whose text a hook edited stays whole in the refined view, so it counts only when
        its refined speaker differs (:func:`voicekit.turns.split_by_labels`)."""
        count = 0
        for speaker, refined_words, refined_speaker, text, words in self.conn.execute(
                "SELECT speaker, refined_words, refined_speaker, text, words FROM turns WHERE refined_words IS NOT NULL"):
            if text != join_words(_words_from_json(words)):   # edited: kept whole
                count += refined_speaker is not None and refined_speaker != speaker
            else:
                count += any(label != speaker for label in json.loads(refined_words))
        return count

    def turns(self, refined: bool = False, renamed: bool = False) -> list[SpeakerTurn]:
        """All committed turns in time order.

        Args:
            refined: return the refined view (where refinement ran): each turn split where its
                words' refined speakers change; a piece moved to another speaker carries that
                speaker's persistent name (``speaker_names(refined=True)``: a named label that
                refinement emptied passes its name on) and ``metadata["moved_from"]`` (the live label); pieces
                of continuous speech that end with the same speaker are joined
                (:func:`voicekit.turns.join_touching`).
            renamed: every turn of a label named after the meeting (:meth:`rename_speakers`)
                carries that name (:func:`voicekit.turns.rename_turns`), as the outputs show
                it; False: each turn's name as it was emitted.
        """
        names = self.renamed_speakers() if renamed else {}
        if not refined:
            turns = [turn_from_row(row) for row in self.conn.execute(
                f"SELECT {TURN_COLUMNS} FROM turns ORDER BY start, id")]
            return rename_turns(turns, names) if names else turns
        pieces = self._refined_view(self.speaker_names())[1]
        # renamed before the join: pieces of one speaker that only their emitted names told apart join
        return join_touching(rename_turns(pieces, names, keep_emitted=False) if names else pieces)

    def _refined_view(self, names: dict[str, str]) -> tuple[dict[str, str], list[SpeakerTurn]]:
        """The refined view's names (``names`` and what :func:`inherited_names` passes on) and
        its pieces, not yet joined; the turns are split again only when a name is passed on."""
        pieces = self._refined_pieces(names)
        heirs = inherited_names(pieces, names) if names else {}
        if not heirs:
            return names, pieces
        names = {**names, **heirs}
        return names, self._refined_pieces(names)

    def _refined_pieces(self, names: dict[str, str]) -> list[SpeakerTurn]:
        """Every turn split by its refined words' labels (:func:`split_by_labels`), not yet joined.
        A turn of the first store layout, refined as a whole (``refined_speaker``, no
        ``refined_words``: a store review found its refinement dropped), gives every word that label."""
        out = []
        for row in self.conn.execute(f"SELECT {TURN_COLUMNS}, refined_words, refined_speaker FROM turns "
                                     "ORDER BY start, id"):
            turn, refined_words, refined_speaker = turn_from_row(row[:-2]), row[-2], row[-1]
            labels = (json.loads(refined_words) if refined_words else
                      [refined_speaker] * len(turn.words) if refined_speaker else [])
            out.extend(split_by_labels(turn, labels, names))
        return out

    # --- speaker embeddings (opt-in) ----------------------------------------------------------
    def add_embeddings(self, utterance: int, starts: np.ndarray, ends: np.ndarray, vectors: np.ndarray) -> None:
        """Keep one utterance's window embeddings, for a later ``voicekit export --refine``.

        Args:
            utterance: the utterance index.
            starts / ends: ``(n,)`` window times in seconds.
            vectors: ``(n, d)`` float32 unit-norm speaker embeddings.

        Raises:
            StoreError: when the store cannot be written (disk full, read-only).
        """
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        try:
            with self.conn:
                self.conn.execute("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?, ?)",
                                  (utterance, np.asarray(starts, "<f8").tobytes(), np.asarray(ends, "<f8").tobytes(),
                                   vectors.astype("<f4").tobytes(), vectors.shape[1]))
        except sqlite3.Error as exc:
            raise self._write_error(exc) from exc

    def embeddings(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Every kept utterance's ``(starts, ends, vectors)`` in utterance order (see
        :meth:`add_embeddings`); empty when the meeting was not run with ``--keep-embeddings``."""
        out = []
        for starts, ends, vectors, dim in self.conn.execute(
                "SELECT starts, ends, vectors, dim FROM embeddings ORDER BY utterance"):
            out.append((np.frombuffer(starts, "<f8"), np.frombuffer(ends, "<f8"),
                        np.frombuffer(vectors, "<f4").reshape(-1, dim)))
        return out

    def drop_embeddings(self) -> int:
        """Delete the kept speaker embeddings (they can identify voices); returns how many
        utterances' embeddings were deleted."""
        try:
            with self.conn:
                return self.conn.execute("DELETE FROM embeddings").rowcount
        except sqlite3.Error as exc:
            raise self._write_error(exc) from exc

    def resume_point(self) -> ResumePoint:
        """Where a session continuing this meeting begins (:class:`ResumePoint`): after its
        recorded duration, its last turn, its last kept window (an utterance's kept windows
        reach past its last turn to the end of its audio; those of turns a hook blocked are not
        kept) and the start of
        its last capture session (a session killed before it committed a turn, or stored its
        duration, began there)."""
        meta = self.meta()
        duration = meta.get("duration")
        sessions = meta.get("sessions") if isinstance(meta.get("sessions"), list) else []
        ends = [float(duration) if isinstance(duration, (int, float)) else 0.0,
                float(self.conn.execute('SELECT MAX("end") FROM turns').fetchone()[0] or 0.0),
                *(float(s["start_time"]) for s in sessions
                  if isinstance(s, dict) and isinstance(s.get("start_time"), (int, float)))]
        last = self.conn.execute("SELECT utterance, ends FROM embeddings ORDER BY utterance DESC LIMIT 1").fetchone()
        if last is not None:
            windows = np.frombuffer(last[1], "<f8")
            ends.append(float(windows.max()) if len(windows) else 0.0)
        return ResumePoint(round(max(ends), 3), 0 if last is None else int(last[0]) + 1)

    def speaker_labels(self) -> set[str]:
        """Every label a turn of the meeting carries, live or refined (a refinement may open
        labels no live turn has); a session that goes on gives none of them to a new speaker. (A
        label only named, by ``--speaker-names``, is not one: nobody has it yet, and the first
        new speaker to get it takes its name.)"""
        labels = {row[0] for row in self.conn.execute("SELECT speaker FROM turns")}
        for speaker, words in self.conn.execute("SELECT refined_speaker, refined_words FROM turns "
                                                "WHERE refined_speaker IS NOT NULL"):
            labels.add(speaker)
            labels.update(json.loads(words) if words else ())
        return labels

    def has_turns(self, channel: str) -> bool:
        """Whether the meeting holds a turn on ``channel`` (``"replay"``, ``"mic"``, ``"room1/2"``)."""
        return self.conn.execute("SELECT 1 FROM turns WHERE channel = ? LIMIT 1", (channel,)).fetchone() is not None

    def has_refined(self) -> bool:
        """Whether refinement has run on this meeting."""
        return self.conn.execute("SELECT COUNT(*) FROM turns WHERE refined_speaker IS NOT NULL").fetchone()[0] > 0

    def unrefined_turns(self) -> int:
        """How many turns with words have no refined label: all of them before any refinement;
        after one, the turns committed since (the meeting went on, ``voicekit mic --append``). A
        turn without words (a hook's ``words=()`` redaction) has nothing to refine: counted, it
        made every later export say a turn was committed since, and re-cluster."""
        return self.conn.execute("SELECT COUNT(*) FROM turns WHERE refined_speaker IS NULL "
                                 "AND words != '[]'").fetchone()[0]

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def __enter__(self) -> "MeetingStore":
        """``with MeetingStore(path) as store:`` closes the store when the block ends."""
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
