"""The meeting in ``--out``: reading an existing store, refusing to start over it (or setting it
aside, or going on with it), the output stem, writing the outputs, refining a stored meeting, and
the summary lines a command ends with."""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Iterator
from pathlib import Path

from voicekit.cli.common import CliError, _plural


def _read_store(store_path: Path, sql: str) -> list[tuple] | None:
    """The rows of one query on an existing meeting store, read without the store class (no
    schema is created, the connection is closed: no -wal/-shm left behind); None when the file is
    absent (it is not created) or not a readable store."""
    import contextlib
    import sqlite3

    if not store_path.is_file():
        return None
    try:
        with contextlib.closing(sqlite3.connect(store_path)) as conn:
            return conn.execute(sql).fetchall()
    except sqlite3.Error:
        return None


def _committed_turns(store_path: Path) -> int:
    """Turns in an existing meeting store (0 for an empty or unreadable one, e.g. a failed start)."""
    rows = _read_store(store_path, "SELECT COUNT(*) FROM turns")
    return rows[0][0] if rows else 0


def _store_uri(store_path: Path, mode: str) -> str:
    """The SQLite URI that opens ``store_path`` in ``mode`` (``ro``/``rw``): percent-encoded, so a
    folder named with ``?``, ``#`` or ``%`` is that folder (unquoted, ``out?x/meeting.sqlite``
    opened, and created, the file ``out``)."""
    return f"{store_path.resolve().as_uri()}?mode={mode}"


def _unreadable_store(store_path: Path) -> str | None:
    """Why an existing file at ``store_path`` is not a meeting store voicekit may start over
    without ``--overwrite`` (damaged, or another program's database), or None: it is absent, empty
    (0 bytes, or a database with no table), or a readable voicekit store."""
    import contextlib
    import sqlite3

    if not store_path.is_file() or store_path.stat().st_size == 0:
        return None
    try:
        with contextlib.closing(sqlite3.connect(_store_uri(store_path, "ro"), uri=True)) as conn:
            tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables and "turns" not in tables:
                return "a database without voicekit's tables"
            if tables:
                conn.execute("SELECT COUNT(*) FROM turns").fetchone()
    except sqlite3.Error as exc:
        from voicekit.store import access_problem
        from voicekit.store.sqlite import _disk_full

        # no damage: access, or a full disk (a WAL store needs room for its -shm to be read: a
        # store review was sent to `.recover` a healthy store on a full disk)
        return None if access_problem(store_path, exc) is not None or _disk_full(exc, store_path.parent) \
            else str(exc)
    return None


def _check_store_access(store_path: Path, way: str, write: bool = False) -> None:
    """Refuse an existing ``store_path`` this user may not read (with ``write``: nor write), with
    what to make readable or writable: SQLite says "attempt to write a readonly database" for a
    store in a folder this user may not write, which is no damage (:func:`_check_readable_store`).

    The store is opened as SQLite opens it for voicekit; ``write`` tries a write (its header's
    ``user_version``, set to what it is) in a transaction that is rolled back.

    Raises:
        CliError: ``cannot write OUT/meeting.sqlite (read-only: permission denied): make the
            folder OUT writable, or {way}`` (:func:`voicekit.store.access_problem`).
    """
    import contextlib
    import sqlite3

    from voicekit.store import access_problem

    if not store_path.is_file() or store_path.stat().st_size == 0:
        return
    try:
        uri = _store_uri(store_path, "rw" if write else "ro")
        with contextlib.closing(sqlite3.connect(uri, uri=True, isolation_level=None)) as conn:
            (version,) = conn.execute("PRAGMA user_version").fetchone()
            if write:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    conn.execute(f"PRAGMA user_version = {int(version)}")
                finally:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
    except (sqlite3.Error, OSError) as exc:
        access = access_problem(store_path, exc)
        if access is not None:
            raise CliError(f"{access.problem}: {access.remedy}, or {way}") from exc


def _stored_meta(store_path: Path) -> dict:
    """The metadata of an existing meeting store ({} for an unreadable one; a damaged value is
    left out, as :meth:`MeetingStore.meta` leaves it out)."""
    from voicekit.store.sqlite import meta_values

    return meta_values(_read_store(store_path, "SELECT key, value FROM meeting") or [])[0]


def _check_readable_store(store_path: Path, way: str, access_way: str | None = None) -> None:
    """Refuse an existing ``store_path`` that this user may not read (:func:`_check_store_access`),
    or that is damaged or another program's database.

    Raises:
        CliError: naming what is wrong, ``way`` (what the user can do; ``access_way`` instead, if
            given, when it is the access) and, for damage, SQLite's recovery.
    """
    _check_store_access(store_path, access_way or way)
    damage = _unreadable_store(store_path)
    if damage is not None:
        raise CliError(f"{store_path} is not a meeting store voicekit can read ({damage}), so voicekit leaves it "
                       f"as it is: {way} (`sqlite3 {store_path} .recover` may save the turns of a damaged store)")


def _check_existing_meeting(store_path: Path, args: argparse.Namespace, stem: str) -> None:
    """Refuse to start over a meeting already in ``--out`` unless ``--overwrite`` (or, for live
    capture, ``--append``) says what to do with it; and, when ``--out`` holds no meeting, to
    write over files of the new meeting's output names (``<stem>.txt``…) that no meeting there
    wrote: the user's own notes, or the outputs of a meeting whose store was removed.

    Raises:
        CliError: naming the way forward; with ``--append``, also a store this user may not write.
    """
    from voicekit.outputs import output_paths

    append = getattr(args, "append", None)
    if not args.overwrite:
        _check_readable_store(store_path, "pass --overwrite to replace it, or choose another --out")
    if not store_path.exists() or not _committed_turns(store_path):
        ours = store_path.exists() and _stored_meta(store_path).get("stem") == stem   # a meeting of no turns
        taken = [p for p in output_paths(store_path.parent, stem) if p.is_file()]   # (a folder: see outputs)
        if taken and not (args.overwrite or ours):
            names = ", ".join(p.name for p in taken)
            raise CliError(f"{store_path.parent} holds {names}, which this meeting would write over and no meeting "
                           f"there wrote: pass --overwrite to replace {'it' if len(taken) == 1 else 'them'}, "
                           "or choose another --out or --stem")
        return
    if not (append or args.overwrite):
        raise CliError(f"{store_path.parent} already holds a meeting ({store_path.name}); pass --overwrite to "
                       "replace it" + (", --append to go on with it" if append is not None else "") +
                       ", or choose another --out")
    if append:
        _check_store_access(store_path, "record this session in another --out", write=True)
        # export --refine re-clusters every turn from its kept windows: all sessions keep them, or none
        kept, keep = _has_embeddings(store_path), getattr(args, "keep_embeddings", None)
        pyannote = str(getattr(args, "diarizer", "embedded")).startswith("pyannote")
        if kept and not keep:
            way = ("--diarizer pyannote keeps none (go on with --diarizer embedded --keep-embeddings, or record this "
                   "session in another --out), or" if pyannote else
                   "add --keep-embeddings to keep this session's too, or" if keep is not None else
                   "this command keeps none (record this session in another --out), or")
            raise CliError(f"the meeting in {store_path.parent} kept its speakers' embeddings (for `voicekit export "
                           f"--refine`, and to know its speakers again as it goes on): {way} first "
                           f"`voicekit export {store_path.parent} --drop-embeddings`")
        if keep and not kept:
            raise CliError(f"the meeting in {store_path.parent} kept no speaker embeddings, so `voicekit export "
                           "--refine` could not re-cluster its earlier turns: go on with it without "
                           "--keep-embeddings, or record this session in another --out")


def _session_meta(store, meta: dict, start_time: float) -> dict:  # noqa: ANN001 - a MeetingStore
    """Record this capture session's metadata in the store and return the meeting's: ``started``
    stays the first session's, and ``sessions`` lists each session's source, wall-clock start and
    meeting time (``start_time``: 0 unless it goes on with a stored meeting). The meeting's
    ``duration`` is unknown (None) until the session ends and stores it: a session killed before
    leaves None, which ``voicekit export`` reads as a meeting that did not end. The meeting's
    ``renamed`` (names given after an earlier session) is carried into what is returned."""
    now = time.time()
    stored = store.meta() if start_time else {}
    sessions = stored.get("sessions")
    if sessions is None and stored:   # a meeting stored before sessions were listed, or a replay
        sessions = [{"source": stored.get("source"), "started": stored.get("started"), "start_time": 0.0}]
    session = {"source": meta.get("source"), "started": now, "start_time": start_time}
    meta = {**meta, "duration": None, "started": stored.get("started", now), "sessions": [*(sessions or []), session]}
    store.set_meta(**meta)
    # names given after an earlier session (`export --speaker-names`) name the outputs of this one too
    return {**meta, "renamed": stored["renamed"]} if "renamed" in stored else meta


def _known_speakers(pipe) -> str:  # noqa: ANN001 - a Pipeline
    """How a resumed meeting's speakers are known, for the line that says it goes on."""
    known = [s.label for s in getattr(pipe.diarizer, "speakers", ())]
    how = ("--diarizer pyannote keeps no speaker embeddings" if pipe.options.pyannote is not None else
           "run every session with --keep-embeddings to know voices again")
    return (f"{', '.join(known)} known by voice from the stored embeddings" if known else
            "new speakers are labelled after the stored ones: the meeting kept no speaker embeddings, so a voice "
            f"heard before gets a new label ({how})")


def _has_embeddings(store_path: Path) -> bool:
    """Whether an existing meeting store kept speaker embeddings (False for an unreadable one)."""
    return bool(_read_store(store_path, "SELECT 1 FROM embeddings LIMIT 1"))


def _meeting_files(store_path: Path) -> list[Path]:
    """The files of the meeting stored at ``store_path`` that exist: its store (with SQLite's
    ``-wal``/``-shm``), the outputs voicekit wrote from it (``<stem>.<ext>`` and
    ``<stem>.refined.<ext>`` of its stem, ``meeting`` when none is stored, as ``export`` names
    them) and the local session's default log; nothing else."""
    from voicekit.outputs import output_paths

    stem = _stored_meta(store_path).get("stem")
    paths = [*output_paths(store_path.parent, stem if isinstance(stem, str) and stem else "meeting"), store_path,
             Path(f"{store_path}-wal"), Path(f"{store_path}-shm"), store_path.parent / "session.jsonl"]
    return [path for path in paths if path.is_file()]


def _remove_meeting(store_path: Path) -> None:
    """Remove the meeting a new one replaces (:func:`_meeting_files`)."""
    for path in _meeting_files(store_path):
        path.unlink(missing_ok=True)


class _SetAside:
    """The meeting ``--overwrite`` replaces, moved into ``OUT/.voicekit-replaced/`` while the new
    one runs, then deleted; moved back when the new one never starts (a refused token, an
    unreachable server, Ctrl-C while joining) or fails before its first committed turn (a
    connection lost at once, a model that fails on the first utterance), so a failed start loses
    nothing."""

    @staticmethod
    def folder(store_path: Path) -> Path:
        """Where the meeting of ``store_path`` is set aside."""
        return store_path.parent / ".voicekit-replaced"

    def __init__(self, store_path: Path) -> None:
        self.dir = self.folder(store_path)
        self.moved: list[Path] = []
        files = _meeting_files(store_path)
        if files:
            self.dir.mkdir(exist_ok=True)
        for path in files:
            path.rename(self.dir / path.name)
            self.moved.append(path)

    def drop(self) -> None:
        """The new meeting started: delete the old one."""
        import shutil

        shutil.rmtree(self.dir, ignore_errors=True)
        self.moved = []

    def restore(self) -> None:
        """The new meeting never started: put the old one back."""
        for path in self.moved:
            (self.dir / path.name).rename(path)
        self.moved = []
        if self.dir.is_dir() and not any(self.dir.iterdir()):
            self.dir.rmdir()

    @classmethod
    def recover(cls, store_path: Path) -> str | None:
        """After a command that ``--overwrite`` ran was killed (SIGKILL, a crash: nothing restored
        or dropped the meeting it set aside): put the set-aside meeting back when the new one never
        committed a turn, else finish the replacement (delete it). Returns a line saying which,
        or None when nothing was set aside. A store review found the next command's own
        ``--overwrite`` set aside the empty meeting over it, then deleted both."""
        import shutil

        folder = cls.folder(store_path)
        if not folder.is_dir():
            return None
        old = folder / store_path.name
        if not old.is_file():
            shutil.rmtree(folder, ignore_errors=True)
            return None
        if _committed_turns(store_path):
            shutil.rmtree(folder, ignore_errors=True)
            return (f"a command that replaced the meeting in {store_path.parent} (--overwrite) was stopped "
                    "after its first turn: the meeting it replaced is deleted, as --overwrite asked")
        for path in _meeting_files(store_path):
            path.unlink()
        for path in folder.iterdir():
            path.rename(store_path.parent / path.name)
        folder.rmdir()
        return (f"a command that was replacing the meeting in {store_path.parent} (--overwrite) was stopped "
                "before its first turn: that meeting is put back")


def _take_meeting_dir(out: Path, fix: str = "wait until it ends, or choose another --out") -> None:
    """Take the meeting directory ``out`` for this command (:func:`~voicekit.cli.common._lock_meeting_dir`),
    then settle a replacement a killed command left half done (:meth:`_SetAside.recover`),
    with a warning on stderr."""
    import sys

    from voicekit.cli.common import _lock_meeting_dir

    _lock_meeting_dir(out, fix=fix)
    note = _SetAside.recover(out / "meeting.sqlite")
    if note is not None:
        print(f"warning: {note}", file=sys.stderr)


def _meeting_stem(store_path: Path, args: argparse.Namespace) -> str:
    """The output stem of a live capture: ``--stem``, else ``meeting``; with ``--append``, the
    stored meeting's (its outputs are rewritten, never a second set beside them).

    Raises:
        CliError: ``--append`` with a ``--stem`` other than the stored meeting's.
    """
    stem = _check_stem(args.stem)
    stored = _stored_meta(store_path).get("stem") if args.append and _committed_turns(store_path) else None
    if stored and stem is not None and stem != stored:
        raise CliError(f"the meeting in {store_path.parent} writes its outputs as {stored}.*: with --append, "
                       f"leave out --stem (or give --stem {stored})")
    return stem or stored or "meeting"


def _check_stem(stem: str | None) -> str | None:
    """``--stem`` as given (None: the default), once it is known to be a plain file name."""
    if stem is not None and (not stem.strip() or Path(stem).name != stem or stem in (".", "..")):
        raise CliError(f"--stem {stem!r} must be a file name without a folder (e.g. meeting); "
                       "the folder is --out")
    return stem


def _turns_summary(result, speed: bool = False) -> str:  # noqa: ANN001 - MeetingResult
    """``N turns, M speakers[, audio in time (RTF)][, median turn latency]`` (no latency without turns).

    ``speed``: an unpaced replay, whose latency is an estimate (each turn's utterance close in
    audio time plus that utterance's processing time: no wait for the audio, no queue), and says so."""
    lat = sorted(result.latencies)
    parts = [_plural(len(result.turns), "turn"), _plural(len({t.speaker for t in result.turns}), "speaker")]
    if speed:   # an RTF of a few samples is start-up time over nothing: said from 1 s of audio on
        parts.append(f"{_seconds(result.audio_seconds)} of audio in {result.processing_seconds:.1f} s"
                     + (f" (RTF {result.rtf:.3f})" if result.audio_seconds >= 1.0 else ""))
    if lat:
        parts.append(f"median turn latency {statistics.median(lat):.2f} s"
                     + (" (estimated; --realtime measures it)" if speed else ""))
    line = ", ".join(parts)
    if not result.turns and not result.blocked:
        line += (f"; the VAD heard no speech in {_seconds(result.audio_seconds)}" if result.speech_seconds <= 0 else
                 f"; Whisper found no words in the {_seconds(result.speech_seconds)} the VAD took for speech")
    return line


def _seconds(value: float) -> str:
    """``12.3 s``; under a second, two decimals (``0.05 s``, where one decimal said 0.0 or 0.1)."""
    return f"{value:.1f} s" if value >= 1.0 else f"{value:.2f} s"


LANGUAGE_HINT_WORDS = 40
"""Words an English-only model must have transcribed before :func:`_hints` judges their language."""

LANGUAGE_HINT_PROBABILITY = 0.6
"""Mean word probability below which an English-only model's words look like another language
heard as English. Measured with tiny.en (``voicekit replay``, the words of the JSON): every
English evaluation recording with at least 40 words 0.672 (dev00, far field) to 0.947; German
(diarizationExample2) 0.436, and espeak-ng French / Spanish 0.562 / 0.418 (its English 0.859)."""

LANGUAGE_HINT_STRETCH_PROBABILITY = 0.5
"""Mean word probability of :data:`LANGUAGE_HINT_WORDS` consecutive words below which that stretch
looks like another language, in a meeting whose whole mean does not (one that switches language
partway). Measured with tiny.en over every stretch of 40 words: the English evaluation recordings'
lowest stretches 0.594 (dev00), 0.620 (tst00), 0.629 (EN2002a_30s), 0.643 (diarizationExample);
the German half of faster-whisper's multilingual.mp3 0.387 (its whole mean 0.695)."""


def _hints(result, options, english_only: bool) -> list[str]:  # noqa: ANN001 - MeetingResult, PipelineOptions
    """The lines that say what to do at the end of a meeting, when:

    - most of the speech was telephone-band audio and the embedded diarizer had no speaker
      count: there it merged voices (docs/accuracy.md);
    - an English-only Whisper model was unsure of most of at least
      :data:`LANGUAGE_HINT_WORDS` words (mean probability below
      :data:`LANGUAGE_HINT_PROBABILITY`): the meeting may not be in English (or be noisy: a
      journalist's trial mixed noise into an English call and was told only of the language); or of
      :data:`LANGUAGE_HINT_WORDS` consecutive words (below
      :data:`LANGUAGE_HINT_STRETCH_PROBABILITY`): part of it may not be.
    """
    hints = []
    d = options.diarizer
    if result.telephone_share >= 0.5 and options.pyannote is None and not d.num_speakers and not d.min_speakers:
        hints.append("the audio is telephone-band (nothing above 4 kHz), where the speaker encoder tells voices apart "
                     "less well (on the evaluation recordings resampled to 8 kHz it found the right number of "
                     "speakers in 1 of 18): give --num-speakers N when you know how many spoke")
    words = sorted((w for t in result.turns for w in t.words), key=lambda w: w.start)
    n = LANGUAGE_HINT_WORDS
    if english_only and len(words) >= n:
        import numpy as np

        from voicekit.outputs import clock

        fix = (f"{options.stt.model} (English only) heard it as English words: use --model base, the multilingual "
               "model (--language CODE when you know it)")
        probabilities = np.array([w.probability for w in words])
        mean = float(probabilities.mean())
        stretches = np.convolve(probabilities, np.ones(n) / n, mode="valid")   # every n consecutive words
        low = int(np.argmin(stretches))
        if mean < LANGUAGE_HINT_PROBABILITY:
            hints.append(f"Whisper was unsure of most words (mean word probability {mean:.2f} over "
                         f"{len(words)} words; English meetings measured 0.67-0.95): if the meeting is not in "
                         f"English, {fix}; if it is, loud noise or a distant microphone may be the cause "
                         "(check the transcript against the recording)")
        elif stretches[low] < LANGUAGE_HINT_STRETCH_PROBABILITY:
            # the part: every stretch under the line that overlaps the lowest one, chained
            below = stretches < LANGUAGE_HINT_STRETCH_PROBABILITY
            first, last = low, low
            while first > 0 and below[first - 1]:
                first -= 1
            while last + 1 < len(below) and below[last + 1]:
                last += 1
            # from its first to its last unsure word: the stretch may open on the last sure words
            # before the switch ("software." at 0.95 before the German of multilingual.mp3)
            lo, hi = first, last + n - 1
            while probabilities[lo] >= LANGUAGE_HINT_STRETCH_PROBABILITY:
                lo += 1
            while probabilities[hi] >= LANGUAGE_HINT_STRETCH_PROBABILITY:
                hi -= 1
            part = probabilities[lo:hi + 1]
            hints.append(f"Whisper was unsure of most words from {clock(words[lo].start, digits=1)} to "
                         f"{clock(words[hi].end, digits=1)} (mean word probability {part.mean():.2f} "
                         f"over {len(part)} words; English meetings measured 0.59 at their lowest over {n}): if "
                         f"that part is not in English, {fix}")
    return hints


def _unmatched_names(named: set[str], store) -> str | None:  # noqa: ANN001 - MeetingStore
    """The warning for ``--speaker-names`` labels that no turn of the meeting carries, live or
    refined (when the store holds a refinement); None when every label matched."""
    if not named:
        return None
    speakers = {t.speaker for t in store.turns()}
    refined = store.has_refined()
    if refined:
        speakers |= {t.speaker for t in store.turns(refined=True)}
    unmatched = sorted(set(named) - speakers)
    if not unmatched:
        return None
    out = store.path.parent
    later = (f"the name is kept in the store and names that label if a later `voicekit export {out} --refine "
             "--num-speakers N` finds it" if _has_embeddings(store.path) else
             "to look for that speaker, replay again with --overwrite --num-speakers N and the same "
             f"--speaker-names, or add --keep-embeddings so that `voicekit export {out} --refine --num-speakers N` "
             "can look for it without transcribing again")
    return (f"--speaker-names: {', '.join(unmatched)} matched no speaker of this meeting (its speakers"
            f"{', live and refined' if refined else ''}: {', '.join(sorted(speakers)) or 'none'}); {later}")


def _refined_summary(store) -> str:  # noqa: ANN001 - MeetingStore
    """One line on a refinement: speakers found, live turns whose main speaker changed, each by
    its start time as the transcript shows it (a speaker with a persistent name is shown with it,
    as the outputs show it)."""
    from voicekit.outputs import clock

    live, refined = store.turns(), store.turns(refined=True)
    changed = store.changed_turns()
    names = store.speaker_names(refined=True)
    starts = {t.turn_id: t.start for t in live}

    def shown(label: str) -> str:
        return f"{label} ({names[label]})" if label in names else label

    in_part = store.relabelled_turns() - len(changed)
    return (f"refined: {_plural(len({t.speaker for t in refined}), 'speaker')} "
            f"(live: {len({t.speaker for t in live})}); {len(changed)} of {_plural(len(live), 'live turn')} "
            "moved to another speaker by most of their words"
            + (": " + ", ".join(f"the turn at {clock(starts[tid], digits=1)} {shown(a)} → {shown(b)}"
                                for tid, a, b in changed[:6])
               + (" …" if len(changed) > 6 else "") if changed else "")
            + (f", {in_part} more in part" if in_part > 0 else "")
            + (f"; the .refined files hold {_plural(len(refined), 'turn')}: a live turn whose words go to "
               "different speakers is cut, touching turns of one speaker are joined"
               if len(refined) != len(live) else ""))


def _refine_stored(store, num_speakers: int | None, out: Path) -> None:  # noqa: ANN001 - MeetingStore
    """Re-cluster a finished meeting from the embeddings its store kept; record the refined labels
    beside the live ones. ``out``: the meeting folder, as the errors' commands name it."""
    from voicekit.diarization.encoder import WindowEmbeddings
    from voicekit.diarization.refine import refine_turns

    if num_speakers is not None and num_speakers < 1:
        raise CliError(f"--num-speakers must be at least 1, got {num_speakers}")
    kept = store.embeddings()
    if not kept:
        if not store.turns():
            raise CliError("this meeting has no turns (no speech was transcribed), so there is nothing to refine; "
                           f"`voicekit export {out}` without --refine writes its (empty) outputs")
        source = str(store.meta().get("source", ""))
        if store.has_refined():
            again = ("a live meeting's embeddings, once dropped, are gone, so no other count can be tried"
                     if source.startswith(("mic:", "livekit:")) else
                     "a refinement with a speaker count needs the recording replayed again with --overwrite --refine "
                     "--num-speakers N (add --keep-embeddings to re-cluster here later)")
            raise CliError("cannot re-cluster: this meeting's speaker embeddings were not kept (or were "
                           f"dropped); its stored refinement is written by `voicekit export {out} --refine` "
                           f"without --num-speakers, and {again}")
        if str(store.meta().get("diarizer", "")).startswith("pyannote:"):
            how = ("pyannote diarized it (--diarizer pyannote), and voicekit's refinement re-clusters the embedded "
                   "speaker encoder's windows, which such a meeting does not keep: `voicekit export "
                   f"{out}` without --refine writes its outputs (replay it with --diarizer embedded --refine to refine it)")
        elif store.meta().get("diarizer") == "per-channel":
            how = ("it was replayed with --per-channel, where each channel is one speaker and none is "
                   f"diarized: there is nothing to re-cluster (`voicekit export {out}` without --refine writes its outputs)")
        elif source.startswith("livekit:"):
            how = "`voicekit livekit` keeps no speaker embeddings (it has no --keep-embeddings), so this meeting cannot be refined"
        elif source.startswith("mic:"):
            how = ("a microphone meeting keeps them only when it ran with `voicekit mic --keep-embeddings`; "
                   "this one cannot be refined")
        else:
            count = f" --num-speakers {num_speakers}" if num_speakers else ""
            how = (f"replay the recording again with --refine{count}, or with --keep-embeddings to refine it "
                   "later here")
        raise CliError(f"this meeting has no refined labels and no speaker embeddings to refine from: {how}")
    store.set_refined(refine_turns(store.turns(), [WindowEmbeddings(*k) for k in kept], num_speakers))


def _interrupt_note(pipes, verb: str) -> tuple[float, str]:  # noqa: ANN001
    """After Ctrl-C: the seconds of audio every pipeline consumed in this session and the line
    that says what was committed (``verb at HH:MM:SS.s: …``, in meeting time)."""
    from voicekit.outputs import clock

    seconds = round(min((p.consumed_seconds for p in pipes), default=0.0), 3)
    at = f"{verb} at {clock(seconds + min((p.start_time for p in pipes), default=0.0), digits=1)}"
    if all(p.finished for p in pipes):
        return seconds, f"{at}: every utterance heard so far was committed"
    return seconds, f"{at} while the last utterances were being committed: only the turns committed before are kept"


OUTPUT_DIGESTS_KEY = "output_digests"
"""Meeting metadata key: ``{file name: sha256 hex of what voicekit last wrote to it}``, so that a
rewrite can tell a file a person edited since (:func:`_write_outputs`)."""


def _write_outputs(turns, out: Path, stem: str, meta: dict, suffix: str = "", *, store) -> list[Path]:  # noqa: ANN001
    """:func:`voicekit.outputs.write_all` (its two steps), its failure told as one line with the way back.

    An output a person edited since voicekit wrote it (its content no longer the digest ``store``
    recorded, :data:`OUTPUT_DIGESTS_KEY`) is first kept as ``<name>.edited.<ext>``
    (``.edited-2.<ext>``…), with a warning: a journalist's trial corrected a transcript by hand,
    ran `voicekit export` to rename a speaker, and lost the corrections. The digests of the files
    written are recorded in ``store`` (a read-only store exports all the same, without them). A file
    that holds what is about to be written is no edit either (a command killed between writing
    the files and recording their digests: a store review saw every output called edited).

    Raises:
        CliError: some outputs could not be written (every other one is): ``cannot write OUT/x.srt
            (Is a directory); x.json, … are written and the 3 turns are safe in OUT/meeting.sqlite:
            OUT/x.srt is a folder: remove or rename it, then run `voicekit export OUT``` (the fix
            by its errno, :attr:`voicekit.outputs.OutputError.remedy`).
    """
    import hashlib
    import logging
    import sys

    from voicekit.outputs import OutputError, output_path, render_all, write_texts
    from voicekit.store import StoreError

    def digest(path: Path) -> str | None:
        try:
            return hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            return None

    # the speakers' names as the store records them (names given after the meeting are among them)
    contents = render_all(turns, stem, meta, store.speaker_names(refined=bool(meta.get("refined"))))
    new = {output_path(out, stem, ext, suffix).name: hashlib.sha256(text.encode("utf-8")).hexdigest()
           for ext, text in contents.items()}
    digests = dict(store.meta().get(OUTPUT_DIGESTS_KEY) or {})
    for ext in contents:
        path = output_path(out, stem, ext, suffix)
        recorded = digests.get(path.name)
        if recorded is None or not path.is_file() or digest(path) in (recorded, new[path.name], None):
            continue
        kept, n = path.with_name(f"{path.stem}.edited{path.suffix}"), 1
        while kept.exists():
            n += 1
            kept = path.with_name(f"{path.stem}.edited-{n}{path.suffix}")
        try:
            path.rename(kept)
        except OSError as exc:
            raise CliError(f"{path} was edited since voicekit wrote it, and it cannot be kept as {kept.name} "
                           f"({exc.strerror or exc}): copy it elsewhere, then run the command again") from exc
        print(f"warning: {path.name} was edited since voicekit wrote it: your version is kept as {kept.name}",
              file=sys.stderr)
    try:
        written = write_texts(contents, out, stem, suffix=suffix)
    except OutputError as exc:
        n = len(turns)
        done = exc.written
        others = f"{', '.join(p.name for p in done)} {'is' if len(done) == 1 else 'are'} written and " if done else ""
        raise CliError(f"{exc}; {others}the {_plural(n, 'turn')} {'is' if n == 1 else 'are'} safe in "
                       f"{out / 'meeting.sqlite'}: {exc.remedy}, then run `voicekit export {out}`") from exc
    digests.update({p.name: new[p.name] for p in written})
    try:
        store.set_meta(**{OUTPUT_DIGESTS_KEY: digests})
    except StoreError as exc:   # a read-only store exports all the same, without the record
        logging.getLogger("voicekit.cli").debug("output digests not recorded: %s", exc)
    return written


def _wrote_line(written: list[Path], out: Path) -> str:
    """The closing "wrote …" line of a meeting command: the meeting store first (what `voicekit
    export` and `--append` read), then the outputs written from it."""
    return f"wrote meeting.sqlite, {', '.join(p.name for p in written)} to {out}/"


def _store_failed(exc: Exception, store_path: Path, again: str) -> CliError:
    """The error that ends a meeting whose store stopped taking turns (a full disk), raised inside
    :func:`_replacing`'s block: what is kept, and the way on. ``again``: what to run again when
    nothing was committed (a meeting ``--overwrite`` set aside is then put back)."""
    out = store_path.parent
    kept = _committed_turns(store_path)
    if not kept:
        replacing = _SetAside.folder(store_path).is_dir()
        return CliError(f"{exc}; no turn was committed" + (f", and the meeting that was in {out} is kept as it was"
                                                           if replacing else "") + f": free space, then {again}")
    return CliError(f"{exc}; the {_plural(kept, 'turn')} committed before {'is' if kept == 1 else 'are'} "
                    f"kept: free space, then run `voicekit export {out}` to write the outputs")


@contextlib.contextmanager
def _replacing(store_path: Path, append: bool = False) -> Iterator:  # of a MeetingStore
    """The meeting store a replay or a microphone meeting runs into, open for the block.

    With ``append`` the stored meeting, as it is. Else a new meeting in place of any meeting in
    ``store_path`` (``--overwrite``, or a store with no turn; :func:`_check_existing_meeting` ran
    first): the old one is set aside (:class:`_SetAside`) while the new one runs, deleted when the
    block ends (also by an error after the new meeting's first turn), and put back when the block
    raises before the new meeting committed a turn (a model that fails on the first utterance lost
    the meeting ``--overwrite`` was to replace)."""
    from voicekit.store import MeetingStore

    aside = _SetAside(store_path) if store_path.exists() and not append else None
    store = None
    try:
        store = MeetingStore(store_path)
        yield store
    except BaseException:
        if aside is not None and not _committed_turns(store_path):
            if store is not None:
                _discard_unjoined(store, store_path, False, aside)
            else:
                aside.restore()
        elif aside is not None:   # the new meeting holds turns: it replaced the old one
            aside.drop()
        raise
    else:
        if aside is not None:
            aside.drop()


def _discard_unjoined(store, store_path: Path, append: bool, aside: "_SetAside | None") -> None:  # noqa: ANN001
    """After a join that failed or was stopped, or a meeting that failed before its first turn:
    close the store; remove it when this run made it (not ``--append``) and it holds no turn, so
    no empty meeting is left; and put back the meeting ``--overwrite`` had set aside."""
    store.close()
    if not append and not _committed_turns(store_path):
        _remove_meeting(store_path)
    if aside is not None:
        aside.restore()
