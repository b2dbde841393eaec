"""Known voices: an opt-in library of voiceprints, enrolment and live identification.

A *voiceprint* is one ``(256,)`` float32 unit vector: the mean direction of a person's GE2E
window embeddings (:class:`~voicekit.diarization.encoder.SpeakerEncoder`, 1.0 s windows every
0.25 s), with the seconds of speech it was built from. It is biometric data: nothing is stored
unless the user asks (``--enrol-voices``, ``voicekit voices enrol``), and
:meth:`VoiceLibrary.delete` removes the row and scrubs it from the file (SQLite
``secure_delete``, ``VACUUM``, WAL truncated). See docs/voiceprints.md.

Identification (:class:`VoiceIdentifier`) compares the centroid of every live diarizer speaker
(``OnlineDiarizer.speakers``: ``.label``, ``.centroid``, ``.seconds``) with the library by cosine
similarity, once the speaker has :data:`MIN_EVIDENCE_SECONDS` of speech; the best voice at or
above :data:`MATCH_THRESHOLD` names the label, and the name stays with the label for the rest of
the meeting. The threshold and the evidence requirement were measured on the AMI files of
``../shared/eval`` (``scripts/bench_voiceprints.py``; numbers in docs/voiceprints.md). The
method is the cosine scoring of GE2E d-vectors (Wan et al., "Generalized End-to-End Loss for
Speaker Verification", ICASSP 2018), enrolment as the mean of the speaker's embeddings.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from voicekit._checks import is_finite_real
from voicekit.attribution import Participant

log = logging.getLogger(__name__)

DIMENSION = 256

# The three values below were chosen by `python scripts/bench_voiceprints.py` on the AMI files of
# ../shared/eval that share speakers (two folds, every other enrolled voice competing; the pyannote
# sample never used): docs/voiceprints.md, "How well it works (measured)".

MIN_ENROL_SECONDS = 8.0
"""Least speech (seconds) a voiceprint is built from (twice the evidence a live speaker needs,
so that no voiceprint rests on a handful of windows)."""

MIN_EVIDENCE_SECONDS = 4.0
"""Least speech (seconds) a live speaker must have before the library may name them (at 2 s a
third of the genuine trials were still below the threshold; at 4 s 10 of 10 were named)."""

MATCH_THRESHOLD = 0.875
"""Cosine similarity at or above which a live speaker is named by the library: the lowest of
the measured grid whose pooled impostor false-accept rate is at most 5 % (2 of 45, with 19 of
20 genuine speakers named and none misnamed at ≥ 4 s of evidence)."""

ENV_LIBRARY = "VOICEKIT_VOICES"
"""Environment variable naming the voice library file (overrides the user data dir default)."""

IDENTITY_PREFIX = "voice:"
"""Prefix of the participant id of an enrolled voice (``voice:<name>``)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS voiceprint (
    name TEXT PRIMARY KEY,
    vector BLOB NOT NULL,
    seconds REAL NOT NULL,
    meetings INTEGER NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    sources TEXT NOT NULL DEFAULT ''
);
"""

_COLUMNS = frozenset({"name", "vector", "seconds", "meetings", "created", "updated"})
"""The columns of :data:`_SCHEMA`'s table that every voicekit library has: a library without them is
another tool's (or damaged). ``sources`` came later: a library without it gains it when it is
next written (:meth:`VoiceLibrary.enrol`)."""


def source_digest(vector: np.ndarray, seconds: float) -> str:
    """A short fingerprint of one enrolment's speech: its centroid (rounded to 4 decimals) and its
    seconds. A voiceprint keeps the fingerprints of what was merged into it, so the same meeting
    or recording enrolled twice (a replay run again) is not counted twice. The same speech
    embedded again by the same code on the same machine gives the same centroid, bit for bit;
    on another CPU, a GPU or another library version its float rounding may differ, the
    fingerprint then differs too, and the speech is merged again as new. 16 hex digits of
    SHA-256; it cannot be turned back into a voice."""
    import hashlib

    rounded = np.round(unit(vector).astype(np.float64), 4).astype("<f4")
    return hashlib.sha256(rounded.tobytes() + f"{float(seconds):.2f}".encode()).hexdigest()[:16]


class VoiceprintError(Exception):
    """A voiceprint cannot be enrolled, read or deleted. The message names the fix."""


class SpeakerLike(Protocol):
    """What identification reads of a live speaker (``OnlineDiarizer.speakers`` items)."""

    label: str
    seconds: float

    @property
    def centroid(self) -> np.ndarray: ...


@dataclass(frozen=True)
class Voiceprint:
    """One enrolled voice.

    Attributes:
        name: the person's name (unique in a library).
        vector: ``(256,)`` float32, unit norm.
        seconds: seconds of speech it was built from.
        meetings: how many enrolments were merged into it.
        created / updated: Unix times (seconds).
    """

    name: str
    vector: np.ndarray
    seconds: float
    meetings: int = 1
    created: float = 0.0
    updated: float = 0.0

    @property
    def participant(self) -> Participant:
        """The registered participant this voice is in a meeting (attribution A4, A5, A11)."""
        pid = IDENTITY_PREFIX + self.name
        return Participant(id=pid, display_name=self.name, identity_id=pid, registered=True)


@dataclass(frozen=True)
class Match:
    """A live speaker named by the library.

    Attributes:
        label: the diarizer label ("Speaker A").
        voice: the matched :class:`Voiceprint`.
        similarity: cosine similarity of the speaker's centroid to the voiceprint when matched.
        seconds: the speaker's seconds of speech when matched.
    """

    label: str
    voice: Voiceprint
    similarity: float
    seconds: float


def unit(vector: np.ndarray) -> np.ndarray:
    """``vector`` scaled to unit norm, as float32.

    Raises:
        VoiceprintError: for a vector that is not ``(256,)``, not finite, or zero.
    """
    v = np.asarray(vector, dtype=np.float64)
    if v.shape != (DIMENSION,):   # a (16, 16) array holds 256 numbers but is no embedding
        raise VoiceprintError(f"a voiceprint is a ({DIMENSION},) vector; got shape {np.shape(vector)}")
    if not np.all(np.isfinite(v)):
        raise VoiceprintError(f"a voiceprint is a finite vector; this one holds {int(np.sum(~np.isfinite(v)))} NaN "
                              "or infinite numbers (an embedding of silence or of broken audio?)")
    n = float(np.linalg.norm(v))
    if n == 0.0:
        raise VoiceprintError("a voiceprint cannot be the zero vector")
    return (v / n).astype(np.float32)


def voiceprint_vector(windows: np.ndarray) -> np.ndarray:
    """The voiceprint of a set of window embeddings: their mean direction.

    Args:
        windows: ``(n, 256)`` float32 unit-norm window embeddings of one speaker.

    Returns:
        ``(256,)`` float32, unit norm.

    Raises:
        VoiceprintError: when ``windows`` is empty or not ``(n, 256)``.
    """
    w = np.asarray(windows)
    if w.ndim != 2 or w.shape[1] != DIMENSION or len(w) == 0:
        raise VoiceprintError(f"need (n, {DIMENSION}) window embeddings with n >= 1, got shape {w.shape}")
    return unit(w.astype(np.float64).sum(axis=0))


def default_library_path() -> Path:
    """Where the voice library lives: ``$VOICEKIT_VOICES``, else ``voices.sqlite`` in the user's
    data directory (``platformdirs.user_data_path("voicekit")``, e.g.
    ``~/.local/share/voicekit/voices.sqlite`` on Linux)."""
    env = os.environ.get(ENV_LIBRARY, "").strip()
    if env:
        return Path(env).expanduser()
    import platformdirs

    return platformdirs.user_data_path("voicekit") / "voices.sqlite"


MAX_NAME_CHARS = 100
"""Longest voice name accepted (characters)."""


def _check_name(name: str) -> str:
    """``name`` as stored: one line of plain text (:func:`voicekit.attribution.one_line`: controls
    and line breaks a space, format characters such as zero-width spaces removed), NFC.

    Raises:
        VoiceprintError: an empty or over-long name, or one that reads as a diarization label
            (``Speaker B`` in any spelling: the outputs would show two people as one).
    """
    from voicekit.attribution import one_line
    from voicekit.turns import label_read_in

    name = one_line(str(name))
    if not name:
        raise VoiceprintError("a voice needs a name: give the person's name")
    if len(name) > MAX_NAME_CHARS:
        raise VoiceprintError(f"a voice name has at most {MAX_NAME_CHARS} characters (this one {len(name)}): "
                              "give the person's name")
    if (label := label_read_in(name)) is not None:
        raise VoiceprintError(f"{name!r} reads as a diarization label ({label}): a voice named so "
                              "would show two people as one in the outputs; give the person's name")
    return name


def same_name(a: str, b: str) -> bool:
    """Whether two voice names are one name as the library compares them (:func:`_name_key`:
    "Zoë" precomposed or decomposed, "diane" and "Diane")."""
    return _name_key(a) == _name_key(b)


def _name_key(name: str) -> str:
    """What makes two voice names the same name: one line of plain text, NFC, case folded ("Zoë"
    typed precomposed or decomposed, "diane" and "Diane", "Di\u200bane" are one voice). Not a
    check: a name stored by an older voicekit is still found (to delete it)."""
    from voicekit.attribution import one_line

    return one_line(str(name)).casefold()


def check_enrolment(name: str, seconds: float, min_seconds: float = MIN_ENROL_SECONDS) -> str:
    """The name to enrol (whitespace collapsed); :class:`VoiceprintError` for a bad name or when
    ``seconds`` of speech are too few (the message says how much is needed).
    :meth:`VoiceLibrary.enrol` checks both; a caller may check first, before opening a library."""
    name = _check_name(name)
    if not is_finite_real(seconds):
        raise VoiceprintError(f"{name}: the seconds of speech must be a finite number, got {seconds!r}")
    if not seconds >= min_seconds:
        raise VoiceprintError(f"{name}: {seconds:.1f} s of speech is too little for a voiceprint; "
                              f"at least {min_seconds:g} s of their speech is needed (counted as the "
                              "diarizer counts it: its embedding windows, a little less than the VAD's speech)")
    return name


def check_library_writable(path: str | Path) -> None:
    """Make sure voiceprints can be stored at ``path`` later, creating and changing nothing (the
    check ``--enrol-voices`` runs before a meeting, whose voiceprints would otherwise be lost at
    its end): an existing file must be a voice library (or empty) that this user may write, beside
    a folder where SQLite may write its journal; a missing one must lie under a writable folder.

    Raises:
        VoiceprintError: ``path`` is a folder, another file or database, or cannot be written.
    """
    path = Path(path)
    if path.is_dir() or (path.is_file() and path.stat().st_size > 0):
        VoiceLibrary(path, create=False).close()   # the library's own message for a folder or a foreign file
    if path.exists():
        if not os.access(path, os.W_OK):
            raise _unwritable(path, "the file is read-only")
        if not os.access(path.parent, os.W_OK | os.X_OK):
            raise _unwritable(path, f"its folder {path.parent} is read-only, and SQLite writes a journal there")
        return
    folder = next(p for p in path.parents if p.exists())
    if not folder.is_dir():
        raise _unwritable(path, f"{folder} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise _unwritable(path, f"the folder {folder} is read-only")


def _unwritable(path: Path, why: object) -> VoiceprintError:
    return VoiceprintError(f"cannot write the voice library {path} ({why}); choose a writable "
                           f"path (--voices / voices --library, or ${ENV_LIBRARY})")


class VoiceLibrary:
    """Voiceprints in a SQLite file (one row per name).

    Args:
        path: the library file; its directory is created when ``create``.
        create: create the file when it is missing (``False``: raise instead, e.g. for
            ``voicekit voices list`` on a library never written).

    Raises:
        VoiceprintError: when the file cannot be opened or created, or is not a voice library.
    """

    def __init__(self, path: str | Path, create: bool = True) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise VoiceprintError(f"the voice library {self.path} is a folder: give the library's file, e.g. "
                                  f"{self.path / 'voices.sqlite'}")
        if not create and not self.path.is_file():
            raise VoiceprintError(f"no voice library at {self.path}; enrol a voice first "
                                  "(voicekit voices enrol, or --enrol-voices)")
        if not create and self.path.stat().st_size == 0:   # reading it must not turn it into a database
            raise VoiceprintError(f"{self.path} is an empty file, not a voice library: enrol a voice into it "
                                  "(voicekit voices enrol NAME AUDIO --library PATH), or give the library's own file")
        try:
            if create:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None,
                                        check_same_thread=False)
            # deleted rows are overwritten with zeros, not left in free pages (biometric data)
            self.conn.execute("PRAGMA secure_delete=ON")
            tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.DatabaseError as exc:
            raise VoiceprintError(f"{self.path} is not a voice library ({exc}): give the library's own file, "
                                  f"or a new path (--voices / voices --library, or ${ENV_LIBRARY})") from exc
        except OSError as exc:
            raise _unwritable(self.path, exc) from exc
        if tables and "voiceprint" not in tables:
            self.conn.close()
            raise VoiceprintError(f"{self.path} is another SQLite database (tables: {', '.join(sorted(tables))}), "
                                  "not a voice library: voiceprints are never written into it; give the "
                                  "library's own file or a new path")
        columns = {r[1] for r in self.conn.execute("PRAGMA table_info(voiceprint)")}
        if columns and not _COLUMNS <= columns:   # another tool's table of that name, or another layout
            self.conn.close()
            raise VoiceprintError(f"{self.path} holds a voiceprint table that is not voicekit's (columns: "
                                  f"{', '.join(sorted(columns))}; voicekit's: {', '.join(sorted(_COLUMNS))}): "
                                  "it is left as it is; give the library's own file or a new path (--voices / "
                                  f"voices --library, or ${ENV_LIBRARY})")
        try:
            self.conn.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise _unwritable(self.path, exc) from exc
        with contextlib.suppress(sqlite3.Error):   # (another program holding it open keeps its mode)
            # no write-ahead log: a library another tool set to WAL kept deleted voiceprints in it
            self.conn.execute("PRAGMA journal_mode=DELETE")
        if create:
            try:
                os.chmod(self.path, 0o600)  # biometric data: readable by its owner only
            except OSError:
                pass

    def _sql(self, doing: str) -> contextlib.AbstractContextManager[None]:
        """A context in which a SQLite error is a :class:`VoiceprintError` (:func:`_library_errors`)."""
        return _library_errors(self.path, doing)

    def _row(self, row: Sequence) -> Voiceprint:
        name, blob, seconds, meetings, created, updated = row
        ok = isinstance(blob, bytes) and len(blob) % 4 == 0
        vector = np.frombuffer(blob, dtype="<f4").astype(np.float32) if ok else None
        if vector is None or vector.shape != (DIMENSION,) or not np.isfinite(vector).all():
            raise VoiceprintError(f"the voice library {self.path} holds a damaged voiceprint for {name!r} "
                                  f"(not {DIMENSION} finite numbers): delete it with `voicekit voices delete "
                                  f"{name!r} --library {self.path}` and enrol it again")
        return Voiceprint(name, vector, float(seconds), int(meetings), float(created), float(updated))

    def _stored_name(self, name: str) -> str | None:
        """The spelling under which ``name``'s voice is stored (see :func:`_name_key`), or None."""
        key = _name_key(name)
        with self._sql("reading"):
            names = [n for (n,) in self.conn.execute("SELECT name FROM voiceprint")]
        return next((n for n in names if _name_key(n) == key), None)

    def voices(self) -> list[Voiceprint]:
        """Every voiceprint, by name.

        Raises:
            VoiceprintError: the file is damaged (the message says how to go on).
        """
        with self._sql("reading"):
            rows = self.conn.execute("SELECT name, vector, seconds, meetings, created, updated "
                                     "FROM voiceprint ORDER BY name").fetchall()
        return [self._row(r) for r in rows]

    def _has_sources(self) -> bool:
        """Whether the library has the ``sources`` column (one written before it has not)."""
        return "sources" in {r[1] for r in self.conn.execute("PRAGMA table_info(voiceprint)")}

    def _sources(self, stored: str) -> list[str]:
        """The enrolment fingerprints (:func:`source_digest`) merged into the voice stored as
        ``stored``; none in a library written before they were kept."""
        with self._sql("reading"):
            if not self._has_sources():
                return []
            row = self.conn.execute("SELECT sources FROM voiceprint WHERE name = ?", (stored,)).fetchone()
        return (row[0] or "").split() if row is not None else []

    def holds(self, name: str, vector: np.ndarray, seconds: float) -> bool:
        """Whether this very speech (``vector``, ``seconds``, as :meth:`enrol` takes them) is
        already merged into ``name``'s voiceprint: enrolling it again adds nothing.

        Raises:
            VoiceprintError: for a vector that is not ``(256,)`` finite and non-zero.
        """
        stored = self._stored_name(name)
        return stored is not None and source_digest(vector, seconds) in self._sources(stored)

    def get(self, name: str) -> Voiceprint | None:
        """The voiceprint of ``name``, or None."""
        stored = self._stored_name(name)
        if stored is None:
            return None
        with self._sql("reading"):
            row = self.conn.execute("SELECT name, vector, seconds, meetings, created, updated "
                                    "FROM voiceprint WHERE name = ?", (stored,)).fetchone()
        return None if row is None else self._row(row)

    def enrol(self, name: str, vector: np.ndarray, seconds: float,
              min_seconds: float = MIN_ENROL_SECONDS) -> Voiceprint:
        """Store ``name``'s voiceprint; a name already enrolled is merged (mean weighted by seconds),
        unless this very speech was merged into it before (:meth:`holds`: the same meeting or
        recording enrolled again), which leaves it as it is.

        Args:
            name: the person's name (whitespace collapsed).
            vector: ``(256,)`` float32 centroid of their window embeddings (any norm).
            seconds: seconds of speech behind ``vector``.
            min_seconds: least speech accepted (default :data:`MIN_ENROL_SECONDS`).

        Returns:
            the stored :class:`Voiceprint`.

        Raises:
            VoiceprintError: when ``seconds < min_seconds`` (the message says how much is
                needed), for a bad name (:func:`_check_name`) or vector, or when ``name`` is
                enrolled already and the new voice does not match it (cosine below
                :data:`MATCH_THRESHOLD`: another person of the same name, or a mislabelled speaker;
                merging would spoil both); when the file cannot be written (read-only, damaged).
                A voice that matches another name's voice is logged as a warning, not refused.
        """
        name = check_enrolment(name, seconds, min_seconds)
        v = unit(vector)
        digest = source_digest(v, seconds)
        now = time.time()
        # the read and the write as one transaction: two meetings enrolling at once lost one's
        # speech, and left "Carla" and "carla" both (a voiceprint review)
        with self._sql("writing"):
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                old = self.get(name)
                if old is not None and digest in self._sources(old.name):
                    self.conn.execute("COMMIT")
                    return old
                name, v, seconds, meetings, created, sources = self._merged(name, v, seconds, digest, old, now)
                if not self._has_sources():
                    self.conn.execute("ALTER TABLE voiceprint ADD COLUMN sources TEXT NOT NULL DEFAULT ''")
                self.conn.execute("INSERT OR REPLACE INTO voiceprint (name, vector, seconds, meetings, created, "
                                  "updated, sources) VALUES (?, ?, ?, ?, ?, ?, ?)",
                                  (name, v.astype("<f4").tobytes(), float(seconds), meetings, created, now,
                                   " ".join(sources)))
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")
        return Voiceprint(name, v, float(seconds), meetings, created, now)

    def _merged(self, name: str, v: np.ndarray, seconds: float, digest: str, old: Voiceprint | None,
                now: float) -> tuple[str, np.ndarray, float, int, float, list[str]]:
        """What :meth:`enrol` stores: ``(name, vector, seconds, meetings, created, sources)``, the
        new speech merged into ``old`` (the voice already enrolled under ``name``) when there is one.

        Raises:
            VoiceprintError: the voice does not match ``old``'s; or a new name reads like an enrolled
                one with look-alike letters (Cyrillic "Аnna" beside "Anna": a review found one
                deleted and the other left, both listed as "Anna").
        """
        if old is not None:
            similarity = float(unit(old.vector) @ v)
            if similarity < MATCH_THRESHOLD:
                raise VoiceprintError(
                    f"{name}: this voice does not match the voice enrolled as {old.name!r} (similarity "
                    f"{similarity:.3f}, below {MATCH_THRESHOLD}): another person of the same name, or the "
                    f"wrong speaker named {name!r}? Enrol them under another name, or delete the old "
                    "voice first (voicekit voices delete)")
            merged = unit(old.vector.astype(np.float64) * old.seconds + v.astype(np.float64) * seconds)
            return (old.name, merged, old.seconds + seconds, old.meetings + 1, old.created,
                    [*self._sources(old.name), digest])
        from voicekit.attribution._unicode import skeleton

        try:
            voices = self.voices()
        except VoiceprintError:   # another name's damaged row: a warning is not worth a refusal
            voices = []
        def look(text: str) -> str:   # NFKC and case folded first: "Ian" and "Lan" are two names, "Аnna"
            return skeleton(unicodedata.normalize("NFKC", _name_key(text)).casefold())   # (Cyrillic А) is "Anna"

        alike = next((voice.name for voice in voices if look(voice.name) == look(name)), None)
        if alike is not None:
            raise VoiceprintError(f"{name!r} reads like the enrolled {alike!r} (look-alike letters) but is "
                                  f"another name: enrol under {alike!r} to add to that voice, or choose a name "
                                  "that reads differently")
        other = best_match(v, voices)
        if other[0] is not None:
            # the same person under two names would be named by whichever scores higher, or a
            # second person whose voice reads alike: both worth a look
            log.warning("the voice enrolled as %s matches the voice already enrolled as %r (similarity %.3f "
                        "≥ %g): if they are one person, delete one name (voicekit voices delete)",
                        name, other[0].name, other[1], MATCH_THRESHOLD)
        return name, v, seconds, 1, now, [digest]

    def delete(self, name: str) -> str | None:
        """Delete ``name``'s voiceprint and scrub it from the file.

        Returns:
            the name as it was enrolled (``"Carla"`` for ``delete("carla")``), or None when no
            voice has that name.
        """
        with self._sql("deleting from"), self.conn:
            stored = self._stored_name(name)
            n = 0 if stored is None else self.conn.execute("DELETE FROM voiceprint WHERE name = ?",
                                                           (stored,)).rowcount
        self._scrub()
        return stored if n > 0 else None

    def delete_all(self) -> int:
        """Delete every voiceprint and scrub the file. Returns how many were deleted."""
        with self._sql("deleting from"), self.conn:
            n = self.conn.execute("DELETE FROM voiceprint").rowcount
        self._scrub()
        return n

    def _scrub(self) -> None:
        """secure_delete zeroes freed cells; VACUUM rewrites the file without free pages; a WAL
        or rollback journal left beside it is truncated so no old page survives on disk.

        Raises:
            VoiceprintError: the write-ahead log could not be truncated (another program reads the
                library): the voice is deleted, and its old pages may stay in the log until the
                command runs again (a review found the deleted voiceprint's bytes still on disk).
        """
        with self._sql("scrubbing"):
            self.conn.execute("VACUUM")
            busy = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        if busy:
            raise VoiceprintError(f"the voice is deleted, but another program has the library {self.path} open, "
                                  "so its old pages may stay in the file's write-ahead log: close that program "
                                  "(a running voicekit, sqlite3, a backup) and run the delete again")

    def close(self) -> None:
        """Close the file."""
        self.conn.close()

    def __enter__(self) -> "VoiceLibrary":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def _library_errors(path: Path, doing: str) -> Iterator[None]:
    """``with _library_errors(path, doing):`` a SQLite error inside is a :class:`VoiceprintError`
    that names the library, what was being done and the fix (a read-only file, a damaged one)."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):   # (a review was told to check permissions)
            raise VoiceprintError(f"error {doing} the voice library {path} ({exc}): another program has it "
                                  "open (a running voicekit, sqlite3, a backup): close it and try again") from exc
        if "readonly" in str(exc):
            raise VoiceprintError(f"cannot write the voice library {path} ({exc}): it is read-only; make it "
                                  f"writable, or choose another path (--voices / voices --library, or "
                                  f"${ENV_LIBRARY})") from exc
        raise VoiceprintError(f"error {doing} the voice library {path} ({exc}); check the file and its folder "
                              "(permissions, free space)") from exc
    except sqlite3.DatabaseError as exc:
        raise VoiceprintError(f"the voice library {path} is damaged ({exc}) while {doing} it: move it aside and "
                              "enrol the voices again (a copy may still be read by `sqlite3 FILE .recover`)") from exc
    except sqlite3.Error as exc:
        raise VoiceprintError(f"error {doing} the voice library {path} ({exc}); check the file and its folder "
                              "(permissions, free space)") from exc


def similarities(vector: np.ndarray, voices: Sequence[Voiceprint]) -> np.ndarray:
    """Cosine similarity of a ``(256,)`` vector to each voiceprint: ``(len(voices),)`` float64."""
    if not voices:
        return np.zeros(0)
    v = unit(vector).astype(np.float64)
    return np.stack([p.vector for p in voices]).astype(np.float64) @ v


def best_match(vector: np.ndarray, voices: Sequence[Voiceprint],
               threshold: float = MATCH_THRESHOLD) -> tuple[Voiceprint | None, float]:
    """The most similar voiceprint and its similarity; the voice is None below ``threshold``."""
    sims = similarities(vector, voices)
    if len(sims) == 0:
        return None, 0.0
    i = int(np.argmax(sims))
    return (voices[i] if sims[i] >= threshold else None), float(sims[i])


class VoiceIdentifier:
    """Name live diarizer speakers from a voice library, at most one label per voice.

    Args:
        voices: the enrolled voiceprints (``VoiceLibrary.voices()``).
        threshold: cosine similarity needed (default :data:`MATCH_THRESHOLD`).
        min_seconds: speech seconds a speaker needs before it is compared (default
            :data:`MIN_EVIDENCE_SECONDS`).

    Attributes:
        matches: label -> :class:`Match`, for every label named so far (never changed once set).
    """

    def __init__(self, voices: Iterable[Voiceprint], threshold: float = MATCH_THRESHOLD,
                 min_seconds: float = MIN_EVIDENCE_SECONDS) -> None:
        self.voices = list(voices)
        self.threshold = threshold
        self.min_seconds = min_seconds
        self.matches: dict[str, Match] = {}
        self._declined: set[tuple[str, str]] = set()   # (label, voice name) warned about

    def update(self, speakers: Iterable[SpeakerLike], named: Mapping[str, str] | None = None) -> list[Match]:
        """Compare the speakers not yet named with the voices not yet given to a label.

        Args:
            speakers: the live speakers (``OnlineDiarizer.speakers``).
            named: the names the user or a hook gave, label -> name (``HookRunner.names``): those
                labels are never named, and a voice of one of those names (as voice names
                compare: NFC, case-folded) is given to no other label, which would show two
                people as one. A speaker whose closest voice is such a name stays unnamed (not
                named by a lesser match), with a warning once.

        Returns:
            the new matches of this call (also added to :attr:`matches`).
        """
        named = dict(named or {})
        given = {_name_key(n): label for label, n in named.items()}
        taken = {m.voice.name for m in self.matches.values()}
        new: list[Match] = []
        eligible = [s for s in speakers
                    if s.label not in self.matches and s.label not in named and s.seconds >= self.min_seconds]
        # the closest speaker first: a lesser match listed earlier never takes the voice of a closer
        # one (a voiceprint review: an impostor at 0.88 took Diane's voice from Diane at 0.99)
        free0 = [v for v in self.voices if v.name not in taken]
        eligible.sort(key=lambda s: -best_match(s.centroid, free0, 0.0)[1])
        for s in eligible:
            free = [v for v in self.voices if v.name not in taken]
            voice, sim = best_match(s.centroid, free, self.threshold)
            if voice is not None and _name_key(voice.name) in given:
                if (s.label, voice.name) not in self._declined:
                    self._declined.add((s.label, voice.name))
                    log.warning("%s sounds like %s of the voice library (similarity %.3f), a name given to %s: "
                                "%s is not named %s (check which label is %s)", s.label, voice.name, sim,
                                given[_name_key(voice.name)], s.label, voice.name, voice.name)
                continue
            if voice is not None:
                m = Match(s.label, voice, round(sim, 4), round(float(s.seconds), 2))
                self.matches[s.label] = m
                taken.add(voice.name)
                new.append(m)
        return new

    @property
    def participants(self) -> list[Participant]:
        """The participant records of the voices matched so far (registered participants)."""
        return [m.voice.participant for m in self.matches.values()]

    def stamp(self, turn_metadata: Mapping[str, object], label: str) -> dict[str, object]:
        """The metadata of a turn of ``label`` with its voice's name and identity stamped
        (``sender_name``, ``identity_id``, ``voice_similarity``); unchanged when not matched."""
        meta = dict(turn_metadata)
        m = self.matches.get(label)
        if m is not None:
            meta["sender_name"] = m.voice.name
            meta["identity_id"] = m.voice.participant.id
            meta["voice_similarity"] = m.similarity
        return meta


@dataclass(frozen=True)
class EnrolOutcome:
    """What :func:`enrol_named_speakers` did for one name.

    Attributes:
        name: the person's name.
        labels: the diarizer labels that carried the name.
        seconds: their seconds of speech in this meeting.
        enrolled: the stored voiceprint, or None when refused.
        reason: why it was refused ("" when enrolled).
        repeated: this meeting's speech of the name was in its voiceprint already (the meeting
            enrolled before, e.g. a replay run again): nothing was added.
    """

    name: str
    labels: tuple[str, ...]
    seconds: float
    enrolled: Voiceprint | None
    reason: str = ""
    repeated: bool = False


def enrol_named_speakers(library: VoiceLibrary, speakers: Iterable[SpeakerLike], names: Mapping[str, str],
                         skip: Iterable[str] = (), min_seconds: float = MIN_ENROL_SECONDS) -> list[EnrolOutcome]:
    """Enrol the voice of every speaker a hook or the user named, at the end of a meeting.

    Labels with the same name are pooled (each centroid weighted by its seconds), the name compared
    as the library compares names (``Fiona`` and ``fiona`` are one voice there). A name with
    less than ``min_seconds`` of speech is refused, with the reason.

    Args:
        library: where to store the voiceprints.
        speakers: the meeting's live speakers (``OnlineDiarizer.speakers``).
        names: label -> name (``HookRunner.names``: ``--speaker-names`` and hook renames).
        skip: labels not to enrol (e.g. labels the library itself named).
        min_seconds: least speech per name.

    Returns:
        one :class:`EnrolOutcome` per name, in order of first label.
    """
    skipped = set(skip)
    # by the library's own name key (Fiona and fiona are one voice there), under the first spelling
    pooled: dict[str, tuple[str, list[str], np.ndarray, float]] = {}
    for s in speakers:
        name = (names.get(s.label) or "").strip()
        if not name or s.label in skipped or s.seconds <= 0:
            continue
        key = _name_key(name)
        first, labels, total, secs = pooled.get(key, (name, [], np.zeros(DIMENSION), 0.0))
        labels.append(s.label)
        pooled[key] = (first, labels, total + np.asarray(s.centroid, dtype=np.float64) * s.seconds, secs + s.seconds)
    out = []
    for name, labels, total, secs in pooled.values():
        try:
            repeated = library.holds(name, total, secs)
            voice = library.enrol(name, total, secs, min_seconds)
            out.append(EnrolOutcome(name, tuple(labels), round(secs, 2), voice, repeated=repeated))
        except VoiceprintError as exc:
            out.append(EnrolOutcome(name, tuple(labels), round(secs, 2), None, str(exc)))
    return out


def embed_speech(samples: np.ndarray, encoder, vad: str = "silero") -> tuple[np.ndarray, float]:
    """The voiceprint vector of a recording of one person, and its seconds of speech.

    The recording is cut into utterances by the VAD endpointer (:mod:`voicekit.vad`) and each
    utterance is embedded in windows as the online diarizer embeds it
    (:meth:`SpeakerEncoder.embed_windows`); seconds are counted as the diarizer counts them
    (windows x hop).

    Args:
        samples: ``(n_samples,)`` float32 at 16 kHz, one speaker.
        encoder: a :class:`~voicekit.diarization.encoder.SpeakerEncoder`.
        vad: the VAD name (:func:`voicekit.vad.make_vad`).

    Returns:
        ``((256,) float32 unit vector, seconds)``.

    Raises:
        VoiceprintError: when the VAD finds no speech.
    """
    from voicekit.vad import Endpointer, make_vad

    endpointer = Endpointer(make_vad(vad))
    utterances = list(endpointer.push(np.asarray(samples, dtype=np.float32))) + list(endpointer.flush())
    vectors = [encoder.embed_windows(u.samples, u.start).vectors for u in utterances]
    vectors = [v for v in vectors if len(v)]
    if not vectors:
        raise VoiceprintError("no speech found in the recording; give a recording of the person speaking")
    windows = np.concatenate(vectors)
    return voiceprint_vector(windows), len(windows) * encoder.hop_seconds
