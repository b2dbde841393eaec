"""Scoring against references: DER (pyannote.metrics) and WER (jiwer).

Conventions (stated in every table this module prints):

- DER is pyannote.metrics' ``DiarizationErrorRate(collar=c, skip_overlap=False)`` scored inside
  the file's UEM (``[0, duration]`` when the file has none). pyannote's ``collar`` is the *total*
  width removed around each reference boundary, so ``collar=0.5`` equals md-eval's
  ``--collar 0.25`` (the usual setting in papers). Reported at collar 0 and 0.5.
- Pooled DER is (sum of false alarm + missed + confusion) / (sum of reference speech), never a
  mean of per-file percentages.
- WER is jiwer's on text normalised with Whisper's English normaliser (``whisper-normalizer``'s
  ``EnglishTextNormalizer``, a port of openai/whisper's ``normalizers/english.py``).
- cpWER (concatenated minimum-permutation WER, Watanabe et al., "CHiME-6 Challenge", 2020) is
  meeteval's (``meeteval.wer.cpwer``) on the same normalised text: each speaker's words joined,
  hypothesis speakers matched one-to-one to reference speakers to minimise the errors, an
  unmatched speaker's words all errors. It scores words and who said them together, where a
  reference transcript names its speakers (an STM file).
"""

from __future__ import annotations

import csv
import functools
import math
import unicodedata
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from voicekit.turns import SpeakerTurn, join_touching, split_by_labels

COLLARS = (0.0, 0.5)


@dataclass(frozen=True)
class EvalFile:
    """One recording with a speaker reference (a row of ``eval/index.tsv``).

    Attributes:
        file_id: the id used in the RTTM and UEM.
        audio / rttm / uem / transcript: paths (uem and transcript may be None).
        speakers: true number of speakers.
        kind: a short description ("ami-farfield", "telephone-2spk"…).
    """

    file_id: str
    audio: Path
    rttm: Path
    uem: Path | None
    transcript: Path | None
    speakers: int
    kind: str


class EvalIndexError(ValueError):
    """An ``index.tsv`` (or a reference it points at) that cannot be scored; the message names
    the row, the problem and the fix."""


class UnknownFileIdError(EvalIndexError):
    """A file id asked for (``load_index(only=…)``, ``voicekit eval --files``) that the index has no row for."""


#: The columns of ``index.tsv`` (tab-separated, a header row first); uem, transcript and kind may
#: be left out, and ``-`` or an empty cell means "none".
INDEX_COLUMNS = ("file_id", "audio", "rttm", "uem", "transcript", "speakers", "kind")
_REQUIRED_COLUMNS = ("file_id", "audio", "rttm", "speakers")


def load_index(eval_dir: str | Path, only: Collection[str] | None = None) -> list[EvalFile]:
    """Read ``<eval_dir>/index.tsv`` and check its rows before anything is run.

    The index is tab-separated with a header row naming :data:`INDEX_COLUMNS` (``file_id``,
    ``audio``, ``rttm``, ``speakers`` required); paths are relative to ``eval_dir``. Each RTTM
    must hold ``SPEAKER`` lines whose second field is the row's ``file_id``.

    Args:
        eval_dir: the folder holding ``index.tsv``.
        only: the file ids to read (one id may be given as a string), in index order; only their
            rows are checked, so a folder holding some of the recordings can score those. None
            reads and checks every row.

    Returns:
        The rows read, in index order.

    Raises:
        FileNotFoundError: when the index is missing (point ``--eval-dir`` at ``../shared/eval``).
        EvalIndexError: a missing column, a path that is not a file, a speaker count that is not
            a positive whole number, an RTTM with no line for the row's file id; its subclass
            :class:`UnknownFileIdError` for an id of ``only`` that no row has (the message lists
            the index's ids).
    """
    if isinstance(only, str):
        only = [only]
    eval_dir = Path(eval_dir)
    index = eval_dir / "index.tsv"
    if not index.is_file():
        raise FileNotFoundError(f"{index} not found: point --eval-dir at the evaluation folder (../shared/eval)")
    out = []
    with open(index, encoding="utf-8-sig") as f:
        reader = csv.DictReader(f, delimiter="\t")
        missing = [c for c in _REQUIRED_COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise EvalIndexError(f"{index}: no column {', '.join(missing)} in its header row "
                                 f"({' '.join(reader.fieldnames or ()) or 'empty'}); the columns, tab-separated: "
                                 f"{' '.join(INDEX_COLUMNS)} (uem, transcript and kind may be left out)")
        for line, row in enumerate(reader, start=2):
            where = f"{index}, line {line}"

            file_id = (row.get("file_id") or "").strip()
            check = only is None or file_id in only

            def p(key: str, required: bool = False) -> Path | None:
                v = (row.get(key) or "").strip()
                if v in ("", "-"):
                    if required and check:
                        raise EvalIndexError(f"{where}: the {key} column is empty; give the file's path, "
                                             f"relative to {eval_dir}")
                    return None
                path = eval_dir / unicodedata.normalize("NFC", v)
                if check and not path.is_file():
                    raise EvalIndexError(f"{where}: {key} {path} is not a file; paths are relative to {eval_dir}")
                return path

            if not file_id:
                raise EvalIndexError(f"{where}: the file_id column is empty")
            speakers = (row.get("speakers") or "").strip()
            valid = speakers.isascii() and speakers.isdigit() and int(speakers) >= 1
            if check and not valid:
                raise EvalIndexError(f"{where}: speakers is {speakers!r}; give the number of speakers in the "
                                     "reference (a whole number, 1 or more)")
            file = EvalFile(file_id, p("audio", True), p("rttm", True), p("uem"), p("transcript"),
                            int(speakers) if valid else 0, (row.get("kind") or "").strip() or "-")
            if check:
                _check_rttm_ids(file, where)
            out.append(file)
    if only is None:
        return out
    unknown = set(only) - {f.file_id for f in out}
    if unknown:
        raise UnknownFileIdError(f"unknown file id{'s' if len(unknown) > 1 else ''} {', '.join(sorted(unknown))}; "
                                 f"the ids in {index}: {', '.join(f.file_id for f in out)}")
    return [f for f in out if f.file_id in only]


def _speaker_lines(rttm: Path) -> list[list[str]]:
    """The fields of every ``SPEAKER`` line of an RTTM file (NIST RT-09 format: type, file id,
    channel, onset s, duration s, <NA>, <NA>, speaker, …)."""
    return [parts for parts in (line.split() for line in rttm.read_text(encoding="utf-8").splitlines())
            if len(parts) >= 8 and parts[0] == "SPEAKER"]


def _check_rttm_ids(file: EvalFile, where: str) -> None:
    """Check the references of a row before anything is run: the RTTM (and the UEM, and an STM
    transcript, when the row has them) hold lines for its file id, and their times are numbers.

    Raises:
        EvalIndexError: naming the file, the line and the fix.
    """
    ids = {parts[1] for parts in _speaker_lines(file.rttm)}
    if file.file_id not in ids:
        found = ", ".join(sorted(ids)[:10]) if ids else "none"
        raise EvalIndexError(f"{where}: {file.rttm} has no SPEAKER line for file id {file.file_id!r} (the ids "
                             f"in it: {found}); the file_id column must be the RTTM's second field")
    for n, parts in _numbered_lines(file.rttm):
        if len(parts) >= 8 and parts[0] == "SPEAKER" and parts[1] == file.file_id:
            _check_times(parts[3:5], f"{where}: {file.rttm}, line {n}", "onset and duration (fields 4 and 5)")
    if file.uem is not None:
        for n, parts in _lines_for(file.uem, file.file_id, f"{where}: the UEM"):
            _check_times(parts[2:4], f"{where}: {file.uem}, line {n}", "start and end (fields 3 and 4)")
    if file.transcript is not None and _stm_rows(file.transcript) is not None:
        _lines_for(file.transcript, file.file_id, f"{where}: the STM transcript")


def _numbered_lines(path: Path) -> list[tuple[int, list[str]]]:
    """The fields of each line of a reference file but blank ones and ``;;`` comments, numbered
    from 1."""
    return [(n, line.split()) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
            if line.strip() and not line.startswith(";;")]


def _lines_for(path: Path, file_id: str, what: str) -> list[tuple[int, list[str]]]:
    """The numbered lines of a UEM or STM file whose first field is ``file_id``.

    Raises:
        EvalIndexError: when there is none (a UEM for another file would score the whole
            recording; an STM shared by several files would score every file's words).
    """
    lines = _numbered_lines(path)
    rows = [(n, parts) for n, parts in lines if parts[0] == file_id]
    if not rows:
        found = ", ".join(sorted({parts[0] for _, parts in lines})[:10]) or "none"
        raise EvalIndexError(f"{what} {path} has no line for file id {file_id!r} (the ids in it: {found}); its "
                             "first field must be the file_id column")
    return rows


def _check_times(fields: Sequence[str], where: str, what: str) -> None:
    if len(fields) < 2 or not all(_is_number(x) and math.isfinite(float(x)) and float(x) >= 0 for x in fields):
        raise EvalIndexError(f"{where}: the {what} must be seconds (numbers, 0 or more), got {' '.join(fields)!r}")


def load_reference(file: EvalFile, duration: float):
    """The reference ``pyannote.core.Annotation`` and UEM ``Timeline`` of a file.

    The UEM is every ``file_id channel start end`` line of the file's UEM for its file id (a UEM
    of several stretches scores all of them); ``[0, duration]`` when the file has no UEM."""
    from pyannote.core import Annotation, Segment, Timeline

    ref = Annotation(uri=file.file_id)
    for parts in _speaker_lines(file.rttm):
        if parts[1] == file.file_id:
            start, dur = float(parts[3]), float(parts[4])
            ref[Segment(start, start + dur), ref.new_track(Segment(start, start + dur))] = parts[7]
    stretches = []
    if file.uem is not None:   # load_index checked that it has lines for the file id
        for line in file.uem.read_text(encoding="utf-8").splitlines():
            parts = line.split()
            if len(parts) == 4 and parts[0] == file.file_id:
                stretches.append(Segment(float(parts[2]), float(parts[3])))
    uem = Timeline(stretches if file.uem is not None else [Segment(0.0, duration)], uri=file.file_id)
    return ref, uem


def turns_to_annotation(turns: Sequence[SpeakerTurn], uri: str):
    """Speaker turns as a ``pyannote.core.Annotation`` (one segment per turn, label = speaker)."""
    from pyannote.core import Annotation, Segment

    hyp = Annotation(uri=uri)
    for t in turns:
        if t.end > t.start:
            seg = Segment(t.start, t.end)
            hyp[seg, hyp.new_track(seg)] = t.speaker
    return hyp


@dataclass(frozen=True)
class DerScore:
    """DER components in seconds at one collar.

    Attributes:
        collar: pyannote collar (total width, seconds).
        total: reference speech in seconds.
        false_alarm / missed / confusion: seconds.
    """

    collar: float
    total: float
    false_alarm: float
    missed: float
    confusion: float

    @property
    def der(self) -> float:
        """Diarization error rate as a fraction (0.07 = 7 %); with no reference speech, 1.0 when
        there is any error (false alarm) and 0.0 when there is none, as pyannote.metrics scores it."""
        error = self.false_alarm + self.missed + self.confusion
        if not self.total:
            return 1.0 if error else 0.0
        return error / self.total


def score_der(reference, hypothesis, uem, collar: float) -> DerScore:
    """DER of ``hypothesis`` against ``reference`` inside ``uem`` (pyannote.metrics)."""
    from pyannote.metrics.diarization import DiarizationErrorRate

    metric = DiarizationErrorRate(collar=collar, skip_overlap=False)
    d = metric(reference, hypothesis, uem=uem, detailed=True)
    return DerScore(collar, d["total"], d["false alarm"], d["missed detection"], d["confusion"])


def pool(scores: Sequence[DerScore]) -> DerScore:
    """Pooled DER: components summed over files."""
    return DerScore(scores[0].collar if scores else 0.0, sum(s.total for s in scores),
                    sum(s.false_alarm for s in scores), sum(s.missed for s in scores),
                    sum(s.confusion for s in scores))


#: Typographic apostrophes read as ``'``: Whisper's normaliser expands "don't" but splits "don’t"
#: into two words, so a hand-typed transcript's ’ counted as errors against Whisper's '.
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


def normalize_text(text: str) -> str:
    """Whisper's English text normalisation (``whisper_normalizer.english.EnglishTextNormalizer``),
    after typographic apostrophes (’ ‘ ʼ) are read as ``'``."""
    return _normalizer()(text.translate(_APOSTROPHES))


@functools.lru_cache(maxsize=1)
def _normalizer():  # noqa: ANN202
    """One ``EnglishTextNormalizer`` (it reads its spelling table when made): cpWER normalises
    every segment."""
    from whisper_normalizer.english import EnglishTextNormalizer

    return EnglishTextNormalizer()


def wer(reference: str, hypothesis: str) -> float:
    """Word error rate (jiwer) after Whisper-style normalisation, as a fraction."""
    import jiwer

    ref, hyp = normalize_text(reference), normalize_text(hypothesis)
    if not ref.strip():
        return 0.0 if not hyp.strip() else 1.0
    return float(jiwer.wer(ref, hyp))


def cer(reference: str, hypothesis: str) -> float:
    """Character error rate (jiwer) after the same normalisation as :func:`wer`, as a fraction.

    Finer than the WER where two transcripts differ only in how a compound is written ("seat
    belts" / "seatbelts": two word errors, one character).
    """
    import jiwer

    ref, hyp = normalize_text(reference), normalize_text(hypothesis)
    if not ref.strip():
        return 0.0 if not hyp.strip() else 1.0
    return float(jiwer.cer(ref, hyp))


def reference_text(file: EvalFile) -> str | None:
    """The reference transcript of a file, or None when it has none.

    An STM file (every line but ``;;`` comments ``file channel speaker start end text``, NIST
    sclite's format) gives the texts of the lines for the file's id, in time order; any other
    file is plain text, read whole."""
    if file.transcript is None or not file.transcript.is_file():
        return None
    rows = reference_segments(file)
    if rows is None:   # not STM: plain text
        return " ".join(file.transcript.read_text(encoding="utf-8").split())
    return " ".join(text for _, _, _, text in rows if text.strip())


def reference_segments(file: EvalFile) -> list[tuple[str, float, float, str]] | None:
    """The speaker-attributed reference of a file: ``(speaker, start, end, text)`` rows of its
    STM transcript in time order (times in seconds), or None when it has no transcript or a
    plain-text one (no speakers)."""
    if file.transcript is None or not file.transcript.is_file():
        return None
    rows = _stm_rows(file.transcript)
    if rows is None:
        return None
    return sorted(((speaker, start, end, text) for file_id, speaker, start, end, text in rows
                   if file_id == file.file_id), key=lambda row: row[1])


def _stm_rows(path: Path) -> list[tuple[str, str, float, float, str]] | None:
    """``(file id, speaker, start, end, text)`` of every line of an STM file but ``;;`` comments,
    or None when the file is no STM (plain text)."""
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith(";;"):
            continue
        parts = line.split(maxsplit=5)
        if len(parts) < 5 or not all(_is_number(x) for x in parts[3:5]):
            return None
        rows.append((parts[0], parts[2], float(parts[3]), float(parts[4]), parts[5] if len(parts) == 6 else ""))
    return rows


def cpwer(reference: Sequence[tuple[str, float, float, str]], hypothesis: Sequence[SpeakerTurn]) -> float:
    """cpWER (meeteval's ``cpwer``) of ``hypothesis`` against ``reference``, as a fraction.

    Args:
        reference: ``(speaker, start, end, text)`` rows (:func:`reference_segments`).
        hypothesis: speaker turns; a turn's speaker is its ``speaker`` label.

    Both texts are normalised as for :func:`wer`; a reference without words scores 0 (or 1 when
    the hypothesis has some), a hypothesis without words 1. Source: Watanabe et al., "CHiME-6
    Challenge: Tackling Multispeaker Speech Recognition for Unsegmented Recordings", 2020;
    meeteval (von Neumann et al., 2023).
    """
    import meeteval
    from meeteval.io import SegLST

    def seglst(rows):  # noqa: ANN001, ANN202
        return SegLST([{"session_id": "meeting", "speaker": speaker, "start_time": start, "end_time": end,
                        "words": normalize_text(text)} for speaker, start, end, text in rows])

    ref = seglst(reference)
    hyp = seglst((t.speaker, t.start, t.end, t.text) for t in hypothesis)
    if not any(seg["words"].strip() for seg in ref):
        return 0.0 if not any(seg["words"].strip() for seg in hyp) else 1.0
    if not any(seg["words"].strip() for seg in hyp):   # meeteval refuses a session with no segment
        return 1.0   # every reference word deleted
    return float(meeteval.wer.cpwer(ref, hyp)["meeting"].error_rate)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@dataclass
class FileResult:
    """Scores of one file.

    Attributes:
        file: the :class:`EvalFile`.
        live / refined: ``{collar: DerScore}`` for the live and refined outputs (refined: empty
            when no refinement ran, with ``--diarizer pyannote``).
        speakers_live / speakers_refined: number of speakers found.
        wer: WER of the transcript, or None without a reference transcript.
        cpwer_live / cpwer_refined: cpWER of the live and refined turns, or None without a
            speaker-attributed (STM) reference transcript.
        audio_seconds / processing_seconds: for the real-time factor.
        error: the exception text when the file failed.
    """

    file: EvalFile
    live: dict
    refined: dict
    speakers_live: int
    speakers_refined: int
    wer: float | None
    audio_seconds: float
    processing_seconds: float
    error: str | None = None
    cpwer_live: float | None = None
    cpwer_refined: float | None = None


def evaluate_file(file: EvalFile, components, options, *, oracle_count: bool = False,
                  out_dir: str | Path | None = None) -> FileResult:
    """Replay one file through a fresh :class:`~voicekit.pipeline.Pipeline` and score it.

    Args:
        file: the recording and its references.
        components / options: the loaded models and the pipeline options.
        oracle_count: give the diarizer the file's true speaker count (``file.speakers``) as
            ``num_speakers``, in place of the options' counts.
        out_dir: when given, write the hypotheses scored there, ``<file_id>.rttm`` (live) and
            ``<file_id>.refined.rttm``, to score them with another tool.

    Returns:
        The scores; a failure (of the pipeline, or a reference that cannot be read) is the
        result's ``error``, never an exception.
    """
    import dataclasses

    from voicekit.audio import probe
    from voicekit.outputs import to_rttm
    from voicekit.pipeline import Pipeline
    from voicekit.sources import FileSource

    if oracle_count:
        options = dataclasses.replace(options, diarizer=dataclasses.replace(
            options.diarizer, num_speakers=file.speakers, min_speakers=None, max_speakers=None))
    try:
        info = probe(file.audio)
        pipe = Pipeline(options, components)
        # pyannote's labels are not refined (voicekit's refinement re-clusters the speaker encoder's
        # windows): its refined cells would repeat the live ones and read as a refinement that ran
        refine = options.pyannote is None
        result = pipe.run(FileSource(file.audio), refine=refine)
        turns = [t.replace(turn_id=i) if t.turn_id is None else t for i, t in enumerate(result.turns)]
        refined_turns = refined_view(turns, result.refined) if refine else None
        hyps = {"": turns, **({".refined": refined_turns} if refine else {})}
        if out_dir is not None:
            Path(out_dir).mkdir(parents=True, exist_ok=True)
            for suffix, hyp in hyps.items():
                (Path(out_dir) / f"{file.file_id}{suffix}.rttm").write_text(to_rttm(hyp, file.file_id), encoding="utf-8")
        ref, uem = load_reference(file, info.duration)
        live = {c: score_der(ref, turns_to_annotation(turns, file.file_id), uem, c) for c in COLLARS}
        refined = {c: score_der(ref, turns_to_annotation(refined_turns, file.file_id), uem, c)
                   for c in COLLARS} if refine else {}
        ref_text = reference_text(file)
        ref_rows = reference_segments(file)
        cp = None if ref_rows is None else (cpwer(ref_rows, turns),
                                            cpwer(ref_rows, refined_turns) if refine else None)
    except Exception as exc:  # noqa: BLE001 - reported in the table
        return FileResult(file, {}, {}, 0, 0, None, 0.0, 0.0, f"{type(exc).__name__}: {exc}")
    hyp_text = " ".join(t.text for t in turns)
    return FileResult(file, live, refined, len({t.speaker for t in turns}),
                      len({t.speaker for t in refined_turns}) if refine else 0,
                      None if ref_text is None else wer(ref_text, hyp_text),
                      result.audio_seconds, result.processing_seconds,
                      cpwer_live=None if cp is None else cp[0], cpwer_refined=None if cp is None else cp[1])


def refined_view(turns: Sequence[SpeakerTurn], refined: dict[int, list[str]]) -> list[SpeakerTurn]:
    """Turns split and relabelled by word-level refined labels, one speaker's touching turns
    joined: the store's refined view, what the ``.refined.*`` outputs hold
    (:func:`voicekit.turns.join_touching`)."""
    out: list[SpeakerTurn] = []
    for t in turns:
        out.extend(split_by_labels(t, refined.get(t.turn_id, [])))
    return join_touching(out)


def format_table(results: Sequence[FileResult]) -> str:
    """A Markdown table of per-file and pooled scores, with the scoring conventions."""
    lines = [
        "DER: pyannote.metrics DiarizationErrorRate(skip_overlap=False), file UEM (else [0, duration]); "
        "c0 = collar 0, c0.5 = pyannote collar 0.5 s total (= md-eval 0.25 s per side). "
        "Pooled = summed errors / summed reference speech. WER: jiwer after Whisper's English normaliser; "
        "cpWER (words and speakers): meeteval's, on the same text, where the transcript names its speakers.",
        "",
        "| file | kind | live DER c0 | live DER c0.5 (FA/miss/conf) | refined DER c0 | refined DER c0.5 (FA/miss/conf) "
        "| #spk live/refined/true | WER | RTF | cpWER live/refined |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]

    def pct(x: float) -> str:
        return f"{100 * x:.1f}"

    def split(s: DerScore) -> str:
        if not s.total:   # no reference speech: the components are no share of anything
            return f"{pct(s.der)} (no reference speech; {s.false_alarm:.1f} s false alarm)"
        t = s.total
        return f"{pct(s.der)} ({pct(s.false_alarm / t)}/{pct(s.missed / t)}/{pct(s.confusion / t)})"

    ok = [r for r in results if r.error is None]
    for r in results:
        if r.error:
            error = " ".join(r.error.split()).replace("|", "\\|")   # one table row
            lines.append(f"| {r.file.file_id} | {r.file.kind} | ERROR: {error} | | | | | | | |")
            continue
        refined = bool(r.refined)   # no refinement ran (pyannote): its cells are "-"
        lines.append(
            f"| {r.file.file_id} | {r.file.kind} | {pct(r.live[0.0].der)} | {split(r.live[0.5])} | "
            f"{pct(r.refined[0.0].der) if refined else '-'} | {split(r.refined[0.5]) if refined else '-'} | "
            f"{r.speakers_live}/{r.speakers_refined if refined else '-'}/{r.file.speakers} | "
            f"{'-' if r.wer is None else pct(r.wer)} | {r.processing_seconds / max(r.audio_seconds, 1e-9):.3f} | "
            f"{'-' if r.cpwer_live is None else pct(r.cpwer_live) + '/' + (pct(r.cpwer_refined) if refined else '-')} |")
    if ok:
        live0, live5 = pool([r.live[0.0] for r in ok]), pool([r.live[0.5] for r in ok])
        with_refined = [r for r in ok if r.refined]
        ref0, ref5 = pool([r.refined[0.0] for r in with_refined]), pool([r.refined[0.5] for r in with_refined])
        exact_l = sum(r.speakers_live == r.file.speakers for r in ok)
        exact_r = sum(r.speakers_refined == r.file.speakers for r in with_refined) if with_refined else "-"
        near_l = sum(abs(r.speakers_live - r.file.speakers) <= 1 for r in ok)
        near_r = sum(abs(r.speakers_refined - r.file.speakers) <= 1 for r in with_refined) if with_refined else "-"
        audio = sum(r.audio_seconds for r in ok)
        proc = sum(r.processing_seconds for r in ok)
        files = f"{len(ok)} file{'s' if len(ok) != 1 else ''}"
        lines.append(f"| **pooled ({files})** | | {pct(live0.der)} | {split(live5)} | "
                     f"{pct(ref0.der) if with_refined else '-'} | {split(ref5) if with_refined else '-'} | "
                     f"live/refined exact {exact_l}/{exact_r}, within ±1 {near_l}/{near_r}, "
                     f"of {len(ok)} | | {proc / audio:.3f} | |")
    return "\n".join(lines)
