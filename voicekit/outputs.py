"""Writers for a meeting's turns: JSON, RTTM, SRT, WebVTT and plain text.

Every writer takes the committed turns (time order) and writes one file. The JSON schema is
documented in ``docs/transcript-format.md``.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import textwrap
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from voicekit.turns import SpeakerTurn, Word, join_words

FORMATS = ("json", "rttm", "srt", "vtt", "txt")
REFINED_SUFFIX = ".refined"  # <stem>.refined.<ext>: the outputs of the re-clustered meeting


class OutputError(Exception):
    """Output files cannot be written. The message names each file and the reason.

    Attributes:
        failures: each file that was not written, with the ``OSError`` that stopped it.
        written: the files written all the same (each output is written on its own).
    """

    def __init__(self, message: str, failures: Sequence[tuple[Path, OSError]] = (),
                 written: Sequence[Path] = ()) -> None:
        super().__init__(message)
        self.failures = list(failures)
        self.written = list(written)

    @property
    def remedy(self) -> str:
        """What makes the failed files writable, by their errno: ``free space`` (ENOSPC, EDQUOT);
        ``OUT/x.srt is a folder: remove or rename it`` (EISDIR, or a folder in its place); ``make
        the folder OUT writable`` (EACCES, EPERM; ``make x.srt, x.txt in OUT writable`` when the
        folder is writable); ``mount the file system of OUT read-write`` (EROFS); else ``fix
        that`` (the reason is in the message). Distinct ones are joined with ``; ``."""
        remedies: dict[str, None] = {}
        unwritable = []   # files in a writable folder that are not writable themselves: one remedy for all
        for path, exc in self.failures:
            remedy = _remedy(path, exc)
            if remedy is None:
                unwritable.append(path)
            else:
                remedies[remedy] = None
        if unwritable:
            remedies[f"make {_files(unwritable, unwritable[0].parent)} writable"] = None
        return "; ".join(remedies) or "fix that"


def _files(paths: Sequence[Path], out_dir: Path) -> str:
    """``OUT/x.srt`` for one file, ``x.json, x.srt in OUT`` for several."""
    return str(paths[0]) if len(paths) == 1 else f"{', '.join(p.name for p in paths)} in {out_dir}"


def _remedy(path: Path, exc: OSError) -> str | None:
    """What makes ``path`` writable after ``exc`` (:attr:`OutputError.remedy`); None for a file
    that may not be written in a folder that may."""
    import errno
    import os

    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "free space"
    if exc.errno == errno.EISDIR or path.is_dir():   # EEXIST / ENOTEMPTY: a folder too, not a file
        return f"{path} is a folder: remove or rename it"
    if exc.errno == errno.EROFS:
        return f"mount the file system of {path.parent} read-write"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"make the folder {path.parent} writable" if not os.access(path.parent, os.W_OK) else None
    return "fix that"


JSON_SCHEMA_VERSION = 1


def clock(seconds: float, sep: str = ".", digits: int = 3) -> str:
    """Format seconds as ``HH:MM:SS.mmm`` (``sep`` before the fraction, ``digits`` of it)."""
    seconds = max(0.0, seconds)
    scale = 10 ** digits
    total = int(round(seconds * scale))
    h, rest = divmod(total, 3600 * scale)
    m, rest = divmod(rest, 60 * scale)
    s, frac = divmod(rest, scale)
    return f"{h:02d}:{m:02d}:{s:02d}{sep}{frac:0{digits}d}"


def format_line(turn: SpeakerTurn) -> str:
    """The live line for a turn: ``[00:00:03.1 → 00:00:07.9] Speaker A: text``."""
    return f"[{clock(turn.start, digits=1)} → {clock(turn.end, digits=1)}] {turn.sender_name}: {turn.text}"


def to_json(turns: Sequence[SpeakerTurn], meta: dict | None = None, names: dict[str, str] | None = None) -> dict:
    """The transcript as a JSON-serialisable dict (schema in ``docs/transcript-format.md``).

    ``speakers`` lists each label in order of first appearance with its name
    (:func:`speaker_names`: the persistent ``names`` when given, label -> name)."""
    return {
        "version": JSON_SCHEMA_VERSION,
        "meeting": meta or {},
        "speakers": [{"label": k, "name": v} for k, v in speaker_names(turns, names).items()],
        "turns": [
            {
                "id": t.turn_id,
                "speaker": t.speaker,
                "name": t.sender_name,
                **({"emitted_name": t.metadata["emitted_name"]} if "emitted_name" in t.metadata else {}),
                "channel": t.channel,
                "start": round(t.start, 3),
                "end": round(t.end, 3),
                "text": t.text,
                "confidence": round(t.confidence, 4),
                "emitted_at": None if t.emitted_at is None else round(t.emitted_at, 3),
                **({"language": t.metadata["language"]} if "language" in t.metadata else {}),
                **({"participant_id": t.metadata["participant_id"]} if "participant_id" in t.metadata else {}),
                **({"moved_from": t.metadata["moved_from"]} if "moved_from" in t.metadata else {}),
                **({"live_ids": t.metadata["live_ids"]} if "live_ids" in t.metadata else {}),
                "words": [{"start": round(w.start, 3), "end": round(w.end, 3), "word": w.text,
                           "probability": round(w.probability, 4)} for w in t.words],
            }
            for t in turns
        ],
    }


def speaker_names(turns: Sequence[SpeakerTurn], names: dict[str, str] | None = None) -> dict[str, str]:
    """Each speaker label, in order of first appearance, with the speaker's name.

    Args:
        turns: the turns.
        names: the meeting's persistent names, label -> name (a known voice matched, a hook's
            rename, ``export --speaker-names``: what the meeting store records). When given, a
            label without one is named by itself: a name a hook gave one turn only
            (``HookResult(name=…)``) is not the speaker's. When None (no store), the name the
            label's latest turn carries.
    """
    speakers: dict[str, str] = {}
    for t in turns:
        speakers[t.speaker] = t.sender_name  # a dict keeps the order of first insertion
    if names is not None:
        return {label: names.get(label, label) for label in speakers}
    return speakers


def json_text(doc: dict) -> str:
    """The transcript JSON as text: the meeting header indented, then one turn per line.

    Each turn goes through the C JSON encoder (``json.dumps`` without ``indent``; with it, the
    encoder is pure Python and a 50,000-turn meeting takes tens of seconds).

    Raises:
        ValueError: a NaN or infinite number anywhere in ``doc``: strict JSON has none (Python
            would write ``NaN``/``Infinity``, which other readers refuse). What reaches the
            outputs is finite: a hook's result is checked (``voicekit.hooks``), the store's times
            too; this is the last guard.
    """
    head = {k: v for k, v in doc.items() if k != "turns"}
    lines = json.dumps(head, ensure_ascii=False, indent=2, allow_nan=False)[:-2]  # drop the closing "\n}"
    turns = ",\n".join("    " + json.dumps(t, ensure_ascii=False, allow_nan=False) for t in doc.get("turns", []))
    return f'{lines},\n  "turns": [\n{turns}\n  ]\n}}\n' if turns else f'{lines},\n  "turns": []\n}}\n'


def to_rttm(turns: Sequence[SpeakerTurn], file_id: str, names: dict[str, str] | None = None) -> str:
    """RTTM lines ``SPEAKER <file> 1 <start> <dur> <NA> <NA> <name> <NA> <NA>``; spaces in names
    become ``_`` (RTTM fields are space-separated).

    RTTM is scored per speaker name, so one speaker keeps one name: a turn that still carried
    its bare label (``Speaker A``, before a hook or a known voice named the speaker from a later
    turn on) is written under the speaker's name (:func:`speaker_names` with the persistent
    ``names``, the JSON's ``speakers[].name``); a turn given a name of its own keeps it. Two names that only
    their spaces tell apart (``Ana María``, ``Ana_María``) would be one speaker in RTTM: the
    second one written takes ``_2`` (``Ana_María_2``)."""
    latest = speaker_names(turns, names)
    fields: dict[str, str] = {}   # shown name -> its RTTM field, one field per name
    lines = []
    for t in turns:
        shown = latest[t.speaker] if t.sender_name == t.speaker else t.sender_name
        if shown not in fields:
            name, n = "_".join(shown.split()), 1
            while name in fields.values():
                n += 1
                name = f"{'_'.join(shown.split())}_{n}"
            fields[shown] = name
        name = fields[shown]
        fid = "_".join(file_id.split())
        lines.append(f"SPEAKER {fid} 1 {t.start:.3f} {max(0.0, t.end - t.start):.3f} <NA> <NA> {name} <NA> <NA>")
    return "\n".join(lines) + ("\n" if lines else "")


# Subtitle limits, from the Netflix Timed Text Style Guide (English): at most 42 characters a line,
# at most 2 lines an event, an event on screen 5/6 s to 7 s. openai-whisper's SRT/VTT writers take
# the same kind of limits (``max_line_width``, ``max_line_count``).
MAX_LINE_CHARS = 42
"""Columns per subtitle line (Netflix: 42 characters for English). A wide character (Chinese,
Japanese, full-width forms: East Asian Width W or F) takes two columns, so a line holds 21 of
them (Netflix asks 16 for Chinese, 13 for Japanese)."""
MAX_CUE_LINES = 2
"""Lines per subtitle cue (Netflix: 2)."""
MAX_CUE_SECONDS = 7.0
"""Longest cue in seconds, unless a single word lasts longer (Netflix: 7 s)."""
MIN_CUE_SECONDS = 5 / 6
"""Shortest cue in seconds where the pause before the next cue allows (Netflix: 5/6 s)."""
MAX_READING_CPS = 20.0
"""Characters per second a cue is given time to be read in where the pause after it allows
(Netflix, adult English programs: at most 20). The captions are verbatim and timed to the speech:
fast speech with no pause after it still reads faster."""
CLAUSE_END = (".", "?", "!", ",", ";", "。", "？", "！", "，", "、", "；")
"""A cue that must break prefers to end after a word ending with one of these."""
# Characters a line may not start with (closing brackets and punctuation, small kana, the
# prolonged sound mark) and may not end with (opening brackets): a subset of the line-breaking
# rules of JIS X 4051 (kinsoku shori), which Chinese typesetting shares for punctuation.
_NO_LINE_START = frozenset("、。，．・：；？！）」』】〕〉》］｝〙〗”’ゝゞーぁぃぅぇぉっゃゅょゎァィゥェォッャュョヮヵヶ…‥),.:;!?]}")
_NO_LINE_END = frozenset("（「『【〔〈《［｛〘〖“‘([{")


@dataclass(frozen=True)
class Cue:
    """One subtitle cue.

    Attributes:
        start: start time in seconds from the start of the meeting.
        end: end time in seconds.
        lines: the text lines shown, the first starting with the caller's prefix.
    """

    start: float
    end: float
    lines: tuple[str, ...]


def _is_wide(c: str) -> bool:
    return unicodedata.east_asian_width(c) in ("W", "F")


_ARROW = re.compile(r"-{2,}>")


def _width(text: str) -> int:
    """Columns ``text`` takes on screen: two for a wide character, none for a combining mark."""
    return sum(2 if _is_wide(c) else 0 if unicodedata.combining(c) else 1 for c in text)


def _units(text: str) -> list[tuple[str, bool]]:
    """``text`` as the pieces a line may break between, each with whether a space goes before it:
    its space-separated words, and inside a word that holds wide characters (Chinese, Japanese:
    no spaces between words) each wide character, a run of other characters staying whole and the
    line-breaking rules kept (``、`` stays with the character before it, ``「`` with the one after).
    A character is a user-perceived one, an extended grapheme cluster (``regex``'s ``\\X``): an
    emoji stays whole with its skin tone, its joiners and the emoji it joins (``👍🏽``, ``👨‍👩‍👧``)."""
    import regex

    units: list[tuple[str, bool]] = []
    for i, word in enumerate(text.split()):
        if not any(_is_wide(c) for c in word):
            units.append((word, i > 0))
            continue
        pieces: list[str] = []
        last = ""   # the grapheme cluster that ends pieces[-1]
        for c in regex.findall(r"\X", word):
            glue = bool(pieces) and (c in _NO_LINE_START or last in _NO_LINE_END
                                     or not (_is_wide(c[0]) or _is_wide(last[0])))
            if glue:
                pieces[-1] += c
            else:
                pieces.append(c)
            last = c
        units.extend((piece, i > 0 and j == 0) for j, piece in enumerate(pieces))
    return units


def _wrap(text: str, prefix: str, width: int) -> list[str]:
    """``prefix + text`` wrapped into lines of at most ``width`` columns (the prefix counts on the
    first line; :func:`_width`): at spaces, and between the characters of Chinese and Japanese
    (:func:`_units`); a piece longer than the line stays whole on a line of its own (a first one
    that does not fit after the prefix starts the second line: the prefix is then alone)."""
    if _width(prefix) + _width(text) <= width and text.isprintable():
        return [prefix + text]  # what textwrap gives, without its cost (50,000 short turns)
    first = _units(text)[0][0] if text.split() else ""
    if prefix.strip() and _width(prefix) + _width(first) > width >= _width(prefix):
        return [prefix.rstrip()] + _wrap(text, "", width)   # a word too long to follow the name: on the next line
    if not any(_is_wide(c) for c in text):
        return textwrap.wrap(text, width, initial_indent=prefix, break_long_words=False, break_on_hyphens=False)
    lines: list[str] = []
    line, empty = prefix, True
    for unit, spaced in _units(text):
        joined = line + (" " if spaced and not empty else "") + unit
        if not empty and _width(joined) > width:
            lines.append(line)
            line = unit
        else:
            line = joined
        empty = False
    return lines + [line]


def _timed_words(turn: SpeakerTurn) -> tuple[Word, ...]:
    """The turn's words; when it has none, or a hook rewrote its text so that they no longer
    spell it, the text's words spread over the turn in proportion to their length."""
    if turn.words and join_words(turn.words).split() == turn.text.split():
        return tuple(w for w in turn.words if w.text.strip())
    tokens = _units(turn.text)
    total = sum(len(t) for t, _ in tokens) or 1
    per_char = max(0.0, turn.end - turn.start) / total
    words, t = [], turn.start
    for token, spaced in tokens:
        words.append(Word(t, t + per_char * len(token), (" " if spaced or not words else "") + token, 0.0,
                          turn.speaker))
        t += per_char * len(token)
    return tuple(words)


def subtitle_cues(turn: SpeakerTurn, prefix: str = "", max_line_chars: int = MAX_LINE_CHARS,
                  max_lines: int = MAX_CUE_LINES, max_seconds: float = MAX_CUE_SECONDS,
                  min_seconds: float = MIN_CUE_SECONDS) -> list[Cue]:
    """Split one speaker turn into subtitle cues by its word timestamps.

    Each cue takes as many whole words as fit in ``max_lines`` lines of ``max_line_chars``
    characters (``prefix``, e.g. ``"Speaker A: "``, counted on each cue's first line) and
    ``max_seconds``; when it must break, it ends after the last word ending a clause (``. ? ! , ;``)
    in its second half, if there is one; a turn's last cue shorter than ``min_seconds`` after a full
    one is avoided by breaking the last two again (:func:`_rebalanced_tail`). Lines are wrapped at
    spaces and balanced. A cue runs from
    its first word's start to its last word's end, the first cue from the turn's start and the
    last to the turn's end, so that the cues cover the turn in time order without overlap; a cue
    shorter than ``min_seconds`` is held on screen into the pause before the next one. A cue never
    breaks before a word written without a leading space (the rest of the word before it), but
    between Chinese or Japanese words (wide characters, written without spaces), keeping the
    line-breaking rules (no line or cue opens on ``、`` or ``。``). Widths are in columns, a wide
    character taking two (:data:`MAX_LINE_CHARS`).

    Args:
        turn: the speaker turn; times in seconds. Without words (or with words a hook's text no
            longer matches), its text's words are spread over the turn by length.
        prefix: text put before the first line of every cue, counted in its width.
        max_line_chars, max_lines, max_seconds, min_seconds: the limits (defaults: the module
            constants, from the Netflix Timed Text Style Guide).

    Returns:
        the cues in time order; none for a turn whose text is empty.
    """
    text = turn.text.strip()
    if not text:
        return []
    if turn.end - turn.start <= max_seconds and len(whole := _wrap(text, prefix, max_line_chars)) == 1:
        return [Cue(turn.start, turn.end, tuple(whole))]  # the usual short turn: one line
    words = _timed_words(turn)
    n = len(words)
    texts = [w.text for w in words]
    most = max_lines * max_line_chars + max_lines - 1  # longest text that can fit, spaces between lines

    def start_of(a: int) -> float:
        return turn.start if a == 0 else words[a].start

    def end_of(b: int) -> float:
        return turn.end if b == n - 1 else words[b].end

    def text_of(a: int, b: int) -> str:
        return "".join(texts[a:b + 1]).strip()

    def fits(a: int, b: int) -> bool:
        line = text_of(a, b)
        if end_of(b) - start_of(a) > max_seconds or _width(prefix) + _width(line) > most:
            return False
        return len(_wrap(line, prefix, max_line_chars)) <= max_lines

    def breakable(k: int) -> bool:  # a cue may end after word k: the next one starts a word
        if k == n - 1 or texts[k + 1][:1].isspace():
            return True
        after, before = texts[k + 1][:1], texts[k].rstrip()[-1:]
        return bool(after) and bool(before) and (_is_wide(after) or _is_wide(before)) \
            and after not in _NO_LINE_START and before not in _NO_LINE_END

    spans, a = [], 0
    while a < n:
        b = a
        while b + 1 < n and fits(a, b + 1):
            b += 1
        if b < n - 1:
            half = _width(text_of(a, b)) / 2
            ends = [k for k in range(a, b + 1) if breakable(k)]
            clauses = [k for k in ends if texts[k].rstrip().endswith(CLAUSE_END)
                       and _width(text_of(a, k)) >= half]
            b = clauses[-1] if clauses else ends[-1] if ends else next(k for k in range(b, n) if breakable(k))
        spans.append((a, b))
        a = b + 1
    if len(spans) > 1 and end_of(n - 1) - start_of(spans[-1][0]) < min_seconds:
        spans[-2:] = _rebalanced_tail(spans[-2][0], n - 1, start_of, end_of, fits, breakable,
                                      lambda k: texts[k].rstrip().endswith(CLAUSE_END), min_seconds) or spans[-2:]

    cues: list[Cue] = []
    for i, (a, b) in enumerate(spans):
        text = text_of(a, b)
        lines, width = _wrap(text, prefix, max_line_chars), max_line_chars
        # (narrower, never so narrow that the name is left alone on its line when it was not)
        while len(lines) > 1 and width > 1 and len(balanced := _wrap(text, prefix, width - 1)) == len(lines) \
                and (balanced[0] == prefix.rstrip()) == (lines[0] == prefix.rstrip()):
            lines, width = balanced, width - 1
        start = min(max(start_of(a), cues[-1].end if cues else turn.start), turn.end)
        end = min(max(end_of(b), start), turn.end)
        if i + 1 < len(spans) and end - start < min_seconds:
            end = max(end, min(start + min_seconds, words[spans[i + 1][0]].start, turn.end))
        cues.append(Cue(start, end, tuple(lines)))
    return cues


def _rebalanced_tail(a: int, d: int, start_of, end_of, fits, breakable, clause_end, min_seconds: float  # noqa: ANN001
                     ) -> list[tuple[int, int]] | None:
    """The last two cues of a turn (words ``a``..``d``) broken again so that the last is not a
    short tail ("Speaker B: in the world.", 0.7 s, after a full cue): at the last clause end that
    leaves both cues within the limits and each at least ``min_seconds`` on screen, else where the
    shorter of the two lasts longest. None when no other break fits."""
    options = [k for k in range(a, d) if breakable(k) and fits(a, k) and fits(k + 1, d)]
    if not options:
        return None

    def shorter(k: int) -> float:
        return min(end_of(k) - start_of(a), end_of(d) - start_of(k + 1))

    clauses = [k for k in options if clause_end(k) and shorter(k) >= min_seconds]
    k = clauses[-1] if clauses else max(options, key=shorter)
    return [(a, k), (k + 1, d)]


def to_srt(turns: Sequence[SpeakerTurn], until: float | None = None) -> str:
    """SubRip subtitles: each turn split into cues (:func:`subtitle_cues`), each cue's first line
    starting with the speaker's name, ``Speaker A: text`` (the name counts in the line width; a
    long one is cut: :func:`cue_names`). SRT has no escaping: a ``-->`` in a text is written ``->``,
    and markup a hook writes (``<i>``) is shown as players show SRT markup. ``until``: the meeting's
    duration in seconds, past which no cue is held (:func:`_cues_in_time_order`)."""
    blocks = []
    for i, (_t, cue) in enumerate(_cues_in_time_order(turns, named=True, until=until), start=1):
        # SRT has no escape: "-->" in a text (a hook's) is written "->", never read as a timing line;
        # every run of dashes at once, or "--->" would become "-->"
        text = "\n".join(_ARROW.sub("->", line) for line in cue.lines)
        blocks.append(f"{i}\n{clock(cue.start, ',')} --> {clock(cue.end, ',')}\n{text}\n")
    return "\n".join(blocks)


def _cues_in_time_order(turns: Sequence[SpeakerTurn], named: bool, until: float | None = None
                        ) -> list[tuple[SpeakerTurn, Cue]]:
    """Every turn's cues, sorted by start time (stable): turns that overlap (two channels, two
    people at once) interleave their cues, and SRT and WebVTT players expect cue start times that
    never go backwards. ``named``: each cue's first line starts with ``Name: `` (:func:`cue_names`).

    A cue shorter than it takes to read (:data:`MIN_CUE_SECONDS`, :data:`MAX_READING_CPS`) stays up
    into the pause after it, up to the next cue's start (the last cue: up to ``until``, the
    meeting's duration in seconds, when given) and :data:`MAX_CUE_SECONDS`: a one-word turn
    ("Yes.", 0.32 s) followed by 2 s of silence was gone before it could be read. Every cue lasts
    at least a millisecond (WebVTT: a cue's end is after its start): a word Whisper timed at the
    end of its utterance has no length, and a cue at the same start as the next one has no room."""
    names = cue_names(t.sender_name for t in turns) if named else {}
    cues = sorted(((t, cue) for t in turns
                   for cue in subtitle_cues(t, prefix=f"{names[t.sender_name]}: " if named else "")),
                  key=lambda tc: tc[1].start)
    # each cue's next later start, in one backward pass (a scan from each cue was quadratic: a
    # 50,000-turn export took three times as long)
    later: list[float | None] = [None] * len(cues)
    for i in range(len(cues) - 2, -1, -1):
        following = cues[i + 1][1].start
        later[i] = following if following > cues[i][1].start else later[i + 1]
    out = []
    for i, (t, cue) in enumerate(cues):
        chars = len(" ".join(cue.lines)) - (len(names[t.sender_name]) + 2 if named else 0)
        wanted = min(max(MIN_CUE_SECONDS, chars / MAX_READING_CPS), MAX_CUE_SECONDS)
        limit = later[i] if later[i] is not None else math.inf if until is None else until
        if cue.end - cue.start < wanted and limit > cue.end:
            cue = Cue(cue.start, min(cue.start + wanted, limit), cue.lines)
        if cue.end < cue.start + 0.001:
            cue = Cue(cue.start, cue.start + 0.001, cue.lines)
        out.append((t, cue))
    return out


MAX_CUE_NAME = 20
"""Columns of a speaker's name at the start of an SRT cue; a longer name is cut, with ``…``."""


def cue_names(names: Iterable[str], width: int = MAX_CUE_NAME) -> dict[str, str]:
    """Each name as SRT cues start with it: cut to ``width`` columns with ``…`` (a 260-character
    LiveKit display name made every cue one word and every line 250 characters: a LiveKit trial);
    names that one cut would make alike are cut further on until they differ
    ("Councilmember Maria G…", "Councilmember Maria C…": a captioner's trial found two people
    shown as one), so two speakers never share a cue name. Past ``width`` + 10 columns, names
    still alike keep their start and the end that tells them apart instead, ``width`` columns in
    all ("Councilmember…ict 3", "Councilmember…ict 4"): a wider name left no room for words on
    a 42-column line.

    Args:
        names: speaker names (repeats are fine).
        width: columns of a cut name, ``…`` included.

    Returns:
        name -> the name as cues show it.
    """
    out: dict[str, str] = {}

    def settle(pending: list[str], cut: Callable[[str], str]) -> list[str]:
        """Give each name whose cut no other pending name shares that cut; the others, pending."""
        by_cut: dict[str, list[str]] = {}
        for name in pending:
            by_cut.setdefault(cut(name), []).append(name)
        out.update((group[0], shown) for shown, group in by_cut.items() if len(group) == 1)
        return [name for group in by_cut.values() if len(group) > 1 for name in group]

    pending, cols = sorted(set(names)), width
    while pending and cols <= width + 10:   # two names alike once cut: both wider (a name that fits is whole)
        pending, cols = settle(pending, lambda name: _cut(name, cols)), cols + 1
    for tail in range(1, width - 2):
        if not pending:
            break
        pending = settle(pending, lambda name: _cut_middle(name, width, tail))
    while pending:   # alike at the start and at the end: wider again
        pending, cols = settle(pending, lambda name: _cut(name, cols)), cols + 1
    return out


def _cut_middle(name: str, width: int, tail: int) -> str:
    """``name``'s start, ``…``, and its last ``tail`` columns: ``width`` columns in all."""
    kept, used = [], 0
    for c in reversed(name):
        used += _width(c)
        if used > tail:
            break
        kept.append(c)
    end = "".join(reversed(kept))
    return _cut(name, width - _width(end)) + end.lstrip()


def _cut(name: str, width: int) -> str:
    """``name`` cut to ``width`` columns, ``…`` included (the name itself when it fits)."""
    if _width(name) <= width:
        return name
    cut, used = [], 0
    for c in name:
        used += _width(c)
        if used > width - 1:
            break
        cut.append(c)
    return "".join(cut).rstrip() + "…"


def to_vtt(turns: Sequence[SpeakerTurn], until: float | None = None) -> str:
    """WebVTT: each turn split into cues (:func:`subtitle_cues`), each cue in a voice tag,
    ``<v Speaker A>text`` (players do not show the tag's name by default: it is not counted in
    the line width). ``until``: as :func:`to_srt`'s."""
    def esc(s: str) -> str:
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

    blocks = ["WEBVTT\n"]
    for t, cue in _cues_in_time_order(turns, named=False, until=until):
        text = "\n".join(esc(line) for line in cue.lines)
        blocks.append(f"{clock(cue.start)} --> {clock(cue.end)}\n<v {esc(t.sender_name)}>{text}\n")
    return "\n".join(blocks)


def to_text(turns: Sequence[SpeakerTurn]) -> str:
    """Plain text, one live line per turn."""
    return "".join(format_line(t) + "\n" for t in turns)


def output_path(out_dir: str | Path, stem: str, ext: str, suffix: str = "") -> Path:
    """Where :func:`write_all` writes format ``ext``: ``out_dir/<stem><suffix>.<ext>``."""
    return Path(out_dir) / f"{stem}{suffix}.{ext}"


def output_paths(out_dir: str | Path, stem: str) -> list[Path]:
    """Every file :func:`write_all` may write for ``stem``, live and refined (``<stem>.<ext>``,
    ``<stem>.refined.<ext>`` for every format in :data:`FORMATS`), whether it exists or not."""
    return [output_path(out_dir, stem, ext, suffix) for suffix in ("", REFINED_SUFFIX) for ext in FORMATS]


def render_all(turns: Sequence[SpeakerTurn], stem: str, meta: dict | None = None,
               names: dict[str, str] | None = None) -> dict[str, str]:
    """Every format's text, by extension (:data:`FORMATS`): what :func:`write_all` writes.
    ``names``: the persistent names, label -> name (:func:`speaker_names`)."""
    duration = (meta or {}).get("duration")   # no cue is held past the end of the meeting
    duration = float(duration) if isinstance(duration, (int, float)) and not isinstance(duration, bool) else None
    return {
        "json": json_text(to_json(turns, meta, names)),
        "rttm": to_rttm(turns, stem, names),
        "srt": to_srt(turns, until=duration),
        "vtt": to_vtt(turns, until=duration),
        "txt": to_text(turns),
    }


def write_all(turns: Sequence[SpeakerTurn], out_dir: str | Path, stem: str, meta: dict | None = None,
              suffix: str = "", names: dict[str, str] | None = None) -> list[Path]:
    """Write every format to ``out_dir/<stem><suffix>.<ext>`` atomically (write, then rename):
    :func:`write_texts` of :func:`render_all`.

    A file is replaced only once its new content is fully written: a full disk or a read-only
    directory leaves every earlier output as it was, and no partial ``.tmp`` file. Each file is
    written on its own: one that cannot be written (a folder in its place, the disk full) does
    not stop the others.

    Returns:
        the paths written.

    Raises:
        OutputError: once every file was tried, when some could not be written (disk full, a
            folder in the way, permissions): the message names each with its reason, and the
            error holds them (``failures``), the files written (``written``) and the fix
            (``remedy``).
    """
    return write_texts(render_all(turns, stem, meta, names), out_dir, stem, suffix)


def write_texts(contents: dict[str, str], out_dir: str | Path, stem: str, suffix: str = "") -> list[Path]:
    """Write each ``{ext: text}`` of :func:`render_all` to ``out_dir/<stem><suffix>.<ext>`` (UTF-8)
    atomically, as :func:`write_all` says.

    Raises:
        OutputError: as :func:`write_all`.
    """
    out_dir = Path(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create the output directory {out_dir} ({exc.strerror or exc})",
                          [(out_dir, exc)]) from exc
    written: list[Path] = []
    failures: list[tuple[Path, OSError]] = []
    for ext, text in contents.items():
        path = output_path(out_dir, stem, ext, suffix)
        tmp = path.with_name(path.name + ".tmp")
        try:
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            failures.append((path, exc))
            continue
        written.append(path)
    if failures:
        by_reason: dict[str, list[Path]] = {}
        for path, exc in failures:
            by_reason.setdefault(str(exc.strerror or exc), []).append(path)
        message = "; ".join(f"cannot write {_files(paths, out_dir)} ({reason})" for reason, paths in by_reason.items())
        raise OutputError(message, failures, written) from failures[0][1]
    return written
