"""Records every stage shares: words and speaker turns.

Times are seconds from the start of the meeting, as float. Records are immutable
(``dataclasses.replace`` makes a changed copy), in the manner of faster-whisper's
``Word``/``Segment``.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import string
import threading
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Word:
    """One recognised word.

    Attributes:
        start: start time in seconds from the start of the meeting.
        end: end time in seconds.
        text: the word as Whisper wrote it, with its leading space when it has one.
        probability: Whisper's word probability in [0, 1].
        speaker: the speaker label of this word ("Speaker A"), or None before diarization.
    """

    start: float
    end: float
    text: str
    probability: float
    speaker: str | None = None


@dataclass(frozen=True)
class SpeakerTurn:
    """One message per speaker turn: an utterance, or a piece of one split at a speaker change.

    Attributes:
        speaker: the diarization label, "Speaker A", "Speaker B"… in order of first appearance.
            It never changes once the turn has been emitted.
        text: the turn's text (words joined, stripped).
        start: start time in seconds: its first word's start, or earlier where the VAD heard
            its speech begin (a turn is widened to its speech, never past a neighbour's).
        end: end time in seconds: its last word's end, or later where the VAD heard its speech
            go on.
        words: the words with their times and probabilities.
        channel: where the audio came from: ``"replay"`` for a replayed file, ``"mic"``, or a
            LiveKit lane such as ``"room1/2"``.
        metadata: free-form metadata; ``metadata["sender_name"]`` is the display name of the
            speaker, stamped with the speaker label at ingress and changed by hooks (renames).
        turn_id: the store's id once committed, else None.
        emitted_at: the meeting time (seconds) at which the turn was emitted; turn latency is
            ``emitted_at - end``.
    """

    speaker: str
    text: str
    start: float
    end: float
    words: tuple[Word, ...] = ()
    channel: str = "replay"
    metadata: dict[str, Any] = field(default_factory=dict)
    turn_id: int | None = None
    emitted_at: float | None = None

    @property
    def sender_name(self) -> str:
        """The name shown for this turn: ``metadata["sender_name"]`` or the speaker label."""
        name = str(self.metadata.get("sender_name") or "").strip()
        return name or self.speaker

    @property
    def confidence(self) -> float:
        """Mean word probability in [0, 1]; 0.0 for a turn without words."""
        if not self.words:
            return 0.0
        return sum(w.probability for w in self.words) / len(self.words)

    def replace(self, **changes: Any) -> "SpeakerTurn":
        """Return a copy with ``changes`` applied (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)


# A channel id as the meeting addresses it (attribution A6: a nameless source reads ``@<channel>``):
# ASCII letters and digits, ``.``, ``_``, ``-`` and ``/`` (a LiveKit lane: ``room1/2``), at most
# 64 characters. Nothing in it can end the label or open a quoted part (``:``, ``"``, a line
# break), nor read as another channel with look-alike letters (``ｍic``).
_CHANNEL = re.compile(r"[A-Za-z0-9._/-]{1,64}")


def channel_problem(channel: object) -> str | None:
    """Why ``channel`` cannot be a turn's channel id, or None when it can.

    A channel id is 1 to 64 ASCII letters, digits, ``.``, ``_``, ``-`` or ``/`` (``"mic"``,
    ``"replay"``, ``"room1/2"``): a nameless speaker is labelled ``@<channel>`` in what a model
    receives (attribution A6), so a channel cannot hold a colon, a quote, a line break or a
    look-alike letter that would let the label read as another line or another channel.
    """
    if not isinstance(channel, str) or not _CHANNEL.fullmatch(channel):
        return (f"the channel {channel!r} is not a channel id: use 1 to 64 ASCII letters, digits, '.', '_', '-' "
                "or '/' (such as 'mic' or 'room1/2')")
    return None


def channel_id(name: str, default: str = "room") -> str:
    """``name`` (a LiveKit room's name, which may hold any text) made a channel id
    (:func:`channel_problem`): NFKD, then each run of other characters one ``_``, cut to 60
    characters; ``default`` when nothing is left. ``"Réunion d'équipe"`` → ``"Reunion_d_equipe"``."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", ascii_name).strip("_")[:60]
    return safe or default


def metadata_json(metadata: dict[str, Any]) -> str:
    """A turn's metadata as the store keeps it: strict JSON text, without ``sender_name`` (kept in
    a column of its own); a value JSON has no type for is written as its ``str()``.

    Raises:
        TypeError: a key that is not a str (nor an int, float, bool or None, which JSON writes as
            a str).
        ValueError: a NaN or infinite number (not JSON), or a dict or list that holds itself.
    """
    return json.dumps({k: v for k, v in metadata.items() if k != "sender_name"}, ensure_ascii=False,
                      default=str, allow_nan=False)


def speaker_label(index: int) -> str:
    """Label of the ``index``-th speaker (0-based) in order of first appearance.

    ``0 -> "Speaker A"``, ``25 -> "Speaker Z"``, ``26 -> "Speaker AA"``, ``27 -> "Speaker AB"``.

    Raises:
        ValueError: if ``index`` is negative.
    """
    if index < 0:
        raise ValueError(f"speaker index must be >= 0, got {index}")
    letters = string.ascii_uppercase
    name = ""
    n = index
    while True:
        name = letters[n % 26] + name
        n = n // 26 - 1
        if n < 0:
            break
    return f"Speaker {name}"


def is_speaker_label(text: str) -> bool:
    """True when ``text`` is a label :func:`speaker_label` gives ("Speaker A", "Speaker AB"…)."""
    return speaker_index(text) is not None


# how a name that reads as a label is written once read in ASCII: "Speaker B", "speaker_b",
# "Speaker-B", "SpeakerB" (run together only in capitals: "Speakers" is a word); two letters in one
# case ("Speaker AB"), so "Speaker Ed" is a name
_LABEL_READ = re.compile(r"speaker([\s_.\-]*)([a-z]|[A-Z]{2})", re.IGNORECASE)
_BRACKETED_TAIL = re.compile(r"\s*[(\[{<][^()\[\]{}<>]*[)\]}>]$")
_ENCLOSED = re.compile(r"[(\[{<](.*)[)\]}>]")


def _label_core(seen: str) -> str:
    """``seen`` without what a reader skips around a label: whitespace, punctuation and symbols
    at either end, enclosing brackets, bracketed parts at the end (``(Speaker A).`` and
    ``Speaker A (2)`` leave ``Speaker A``)."""
    while True:
        core = seen.strip()
        while core and core[0] not in "([{<" and unicodedata.category(core[0])[0] in "PSZ":
            core = core[1:].lstrip()
        while core and core[-1] not in ")]}>" and unicodedata.category(core[-1])[0] in "PSZ":
            core = core[:-1].rstrip()
        if m := _ENCLOSED.fullmatch(core):
            core = m.group(1)
        elif (tail := _BRACKETED_TAIL.search(core)) and tail.start() > 0:
            core = core[: tail.start()]
        if core == seen:
            return core
        seen = core


_PYANNOTE_READ = re.compile(r"speaker[\s_.\-]*(\d{1,3})", re.IGNORECASE)   # pyannote's SPEAKER_00


def label_read_in(name: str | None) -> str | None:
    """The diarization label ``name`` reads as (``Speaker B``, ``SPEAKER_01``), else None.

    Read as a person would: invisible characters dropped, accents dropped (NFKD without combining
    marks), then each character by its ASCII reading (NFKC, else its UTS #39 skeleton:
    :func:`voicekit.attribution._unicode.ascii_reading`), so that ``Spеaker B`` with a Cyrillic
    ``е``, ``Spéaker B``, ``Ｓｐｅａｋｅｒ Ｂ``, ``speaker_b``, ``Speaker-B`` and ``SpeakerB`` all read
    ``Speaker B``; two letters read as a label only in capitals (``Speaker AB``, not ``Speaker
    Ed``). Punctuation at either end and bracketed parts at the end are not read (``Speaker A.``,
    ``Speaker A:``, ``(Speaker A)``, ``Speaker A (2)`` and ``Speaker A [bot]`` read ``Speaker A``). A name that reads as a label cannot be given to a person: the outputs, which show names
    in place of labels, would show two speakers as one.
    """
    from voicekit.attribution._unicode import ascii_reading, strip_ignorables

    bare = "".join(c for c in unicodedata.normalize("NFKD", strip_ignorables(name or ""))
                   if not unicodedata.combining(c))
    seen = "".join(map(ascii_reading, bare)).strip()
    seen = _label_core(seen)
    if m := _LABEL_READ.fullmatch(seen):
        apart, letters = m.group(1), m.group(2)
        if (apart or letters.isupper()) and (len(letters) == 1 or letters.isupper() or letters.islower()):
            return f"Speaker {letters.upper()}"
    if m := _PYANNOTE_READ.fullmatch(seen):
        return f"SPEAKER_{m.group(1)}"
    return None


def speaker_index(label: str) -> int | None:
    """The inverse of :func:`speaker_label`: ``"Speaker A" -> 0``, ``"Speaker AA" -> 26``; None
    for any other text (a participant's name)."""
    letters = label[len("Speaker "):] if label.startswith("Speaker ") else ""
    if not letters or any(c not in string.ascii_uppercase for c in letters):
        return None
    n = 0
    for c in letters:
        n = n * 26 + ord(c) - ord("A") + 1
    return n - 1


def next_speaker_index(labels: Iterable[str]) -> int:
    """The index of the first label after every "Speaker X" label in ``labels`` (0 when none):
    where a resumed meeting's new speakers start."""
    return max((i for i in map(speaker_index, labels) if i is not None), default=-1) + 1


_LOOK_ALIKE_LETTERS = ("L", "RN")   # "Speaker L" reads as "Speaker I", "Speaker RN" as "Speaker M" (A11)


def reads_like_another(label: str) -> bool:
    """True for a "Speaker X" label that attribution A11 would read as another label: one with
    the letter L or the letters RN (see :class:`SpeakerLabels`). Never given to a speaker."""
    letters = label[len("Speaker "):] if label.startswith("Speaker ") else ""
    return any(c in letters for c in _LOOK_ALIKE_LETTERS)


def free_labels(used: Iterable[str]) -> Iterator[str]:
    """The "Speaker X" labels not in ``used``, in order from "Speaker A", skipping those that
    :func:`reads_like_another`: where a refinement names a cluster that matches no live speaker."""
    used = set(used)
    return (label for label in map(speaker_label, itertools.count())
            if label not in used and not reads_like_another(label))


class SpeakerLabels:
    """Hands out "Speaker A", "Speaker B"… in order of first appearance, to one diarizer or to
    every diarizer of one meeting (a LiveKit room with two room microphones: one allocator for
    both lanes, so that two voices never share a label in the transcript, the store or what the
    model receives). Thread-safe: each lane diarizes in its own thread.

    No label with the letter L or the letters RN is given: ICU's confusables give capital I and
    lowercase l one skeleton, and "rn" the skeleton of "m", so "Speaker L" reads as "Speaker I"
    and "Speaker RN" as "Speaker M" under attribution A11, which would rank the second of two
    different voices "(2)". No other two labels read alike (``tests/test_attribution_names.py``
    checks the first 3000).

    Args:
        taken: labels already used (a resumed meeting's live and refined labels): new labels come
            after every "Speaker X" among them.
    """

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._next = next_speaker_index(taken)
        self._returned: list[str] = []   # given back by a rolled-back utterance: given first

    def reserve(self, labels: Iterable[str]) -> None:
        """Never give ``labels``, nor any "Speaker X" before the last of them, again."""
        with self._lock:
            self._next = max(self._next, next_speaker_index(labels))

    def give_back(self, labels: Iterable[str]) -> None:
        """Take back labels a diarizer took for an utterance it rolled back (Ctrl-C inside it):
        :meth:`take` gives them first, lowest first, so no letter is skipped."""
        with self._lock:
            self._returned = sorted({*self._returned, *labels}, key=speaker_index)

    def take(self) -> str:
        """The next free label (none with an L or RN: see the class)."""
        with self._lock:
            if self._returned:
                return self._returned.pop(0)
            while reads_like_another(speaker_label(self._next)):
                self._next += 1
            label = speaker_label(self._next)
            self._next += 1
            return label


def join_words(words: tuple[Word, ...] | list[Word]) -> str:
    """Join Whisper words (each with its own leading space) into clean text."""
    return "".join(w.text for w in words).strip()


def words_to_turns(words: list[Word], channel: str = "replay", emitted_at: float | None = None) -> list[SpeakerTurn]:
    """Split diarized words into speaker turns: a new turn wherever the speaker changes.

    Args:
        words: the words of one utterance in time order, each with ``speaker`` set.
        channel: the turns' channel.
        emitted_at: meeting time in seconds at which the turns are emitted.

    Returns:
        one :class:`SpeakerTurn` per run of words of the same speaker, with
        ``metadata["sender_name"]`` stamped with the speaker label.

    Raises:
        ValueError: if a word has no speaker.
    """
    turns: list[SpeakerTurn] = []
    run: list[Word] = []

    def close() -> None:
        if run:
            spk = run[0].speaker
            turns.append(SpeakerTurn(speaker=spk, text=join_words(run), start=run[0].start,
                                     end=run[-1].end, words=tuple(run), channel=channel,
                                     metadata={"sender_name": spk}, emitted_at=emitted_at))

    for w in words:
        if w.speaker is None:
            raise ValueError(f"word {w.text!r} at {w.start:.2f} s has no speaker; diarize first")
        if run and w.speaker != run[-1].speaker:
            close()
            run = []
        run.append(w)
    close()
    return [t for t in turns if t.text]


def extend_to_speech(turns: list[SpeakerTurn], speech_span) -> list[SpeakerTurn]:
    """Widen each turn of one utterance to the VAD speech around its words.

    Whisper's word times are often a few hundred ms inside the speech, and it skips mumbles and
    back-channels the VAD heard. Between two turns the gap is shared at its middle; the first
    and last turn reach out to the utterance bounds. Turns never overlap.

    Args:
        turns: the turns of one utterance, in time order.
        speech_span: ``(lo, hi) -> (first, last) | None``, the VAD speech inside ``[lo, hi]``
            in seconds (:meth:`voicekit.vad.Utterance.speech_span`).
    """
    out = []
    for i, t in enumerate(turns):
        lo = (turns[i - 1].end + t.start) / 2 if i > 0 else float("-inf")
        hi = (t.end + turns[i + 1].start) / 2 if i + 1 < len(turns) else float("inf")
        span = speech_span(lo, hi)
        if span is None:
            out.append(t)
            continue
        out.append(t.replace(start=round(min(t.start, max(span[0], lo)), 3), end=round(max(t.end, min(span[1], hi)), 3)))
    return out


def split_by_labels(turn: SpeakerTurn, labels: list[str], names: dict[str, str] | None = None) -> list[SpeakerTurn]:
    """Relabel a turn's words and split it where the labels change (the refined view of a turn).

    Args:
        turn: a committed turn.
        labels: one speaker label per word of ``turn``.
        names: persistent names, label -> name; a piece moved to another speaker carries that
            speaker's name (else its label) and ``metadata["moved_from"]``. A piece that stays
            with its speaker keeps the turn's name, unless the turn carried its bare label (it
            was committed before the speaker was named): then it carries the speaker's name.

    Returns:
        the pieces in time order (``[turn]`` when nothing changes or the lengths differ). A turn
        whose text a hook edited (it is no longer its words joined) cannot be cut at its words'
        times without undoing the edit: it stays whole, with its text, under the label of most of
        its words (:func:`majority_label`).
    """
    names = names or {}
    if turn.sender_name == turn.speaker and turn.speaker in names:
        turn = turn.replace(metadata={**turn.metadata, "sender_name": names[turn.speaker]})
    if len(labels) != len(turn.words) or not labels:
        return [turn]
    edited = turn.text != join_words(turn.words)
    if edited:
        labels = [majority_label(labels, turn.speaker)] * len(labels)
    if all(label == turn.speaker for label in labels):
        return [turn]
    runs: list[list[Word]] = []
    for w, label in zip(turn.words, labels):
        if not runs or label != runs[-1][-1].speaker:
            runs.append([])
        runs[-1].append(Word(w.start, w.end, w.text, w.probability, label))
    # the turn's span is kept; inner boundaries fall in the middle of the gap between two words
    cuts = [turn.start] + [round((a[-1].end + b[0].start) / 2, 3) for a, b in zip(runs, runs[1:])] + [turn.end]
    pieces = [_relabelled_piece(turn, run, names, cuts[i], cuts[i + 1]) for i, run in enumerate(runs)]
    return [pieces[0].replace(text=turn.text)] if edited else pieces   # edited: one piece, its text kept


def inherited_names(pieces: Sequence[SpeakerTurn], names: dict[str, str]) -> dict[str, str]:
    """Names a refined view passes on: a named live label that keeps no piece (refinement moved
    all its words to other speakers) gives its name to the label that took most of its seconds,
    when that label has no name of its own. The person was named; refinement found their speech
    under another label. Two emptied labels bound for one label give it neither name.

    Args:
        pieces: the refined view before :func:`join_touching` (:func:`split_by_labels` of every
            turn; a moved piece carries ``metadata["moved_from"]``).
        names: the persistent names, label -> name.

    Returns:
        label -> name for the labels that inherit a name (empty when none does).
    """
    kept = {p.speaker for p in pieces}
    seconds: dict[str, dict[str, float]] = {}   # emptied label -> label that took its words -> seconds
    for p in pieces:
        source = p.metadata.get("moved_from")
        if source in names and source not in kept:
            took = seconds.setdefault(source, {})
            took[p.speaker] = took.get(p.speaker, 0.0) + p.end - p.start
    heirs: dict[str, list[str]] = {}
    for source, took in seconds.items():
        heir = max(sorted(took), key=took.__getitem__)
        if heir not in names:
            heirs.setdefault(heir, []).append(names[source])
    return {heir: given[0] for heir, given in heirs.items() if len(given) == 1}


def rename_turns(turns: Sequence[SpeakerTurn], names: dict[str, str], keep_emitted: bool = True
                 ) -> list[SpeakerTurn]:
    """The turns with the names given after the meeting (``voicekit export --speaker-names``):
    every turn whose ``speaker`` label is in ``names`` carries that name, whatever name it was
    emitted with (its bare label, a hook's rename, a known voice's name).

    Args:
        turns: committed turns (or the refined view's).
        names: label -> name.
        keep_emitted: a turn whose name changes keeps the name it carried in
            ``metadata["emitted_name"]`` (the live view: the name it was emitted with).

    Returns:
        the turns in the same order, renamed ones replaced.
    """
    out = []
    for t in turns:
        name = names.get(t.speaker)
        if name is None or name == t.sender_name:
            out.append(t)
            continue
        meta = {**t.metadata, "sender_name": name}
        if keep_emitted:
            meta["emitted_name"] = t.sender_name
        out.append(t.replace(metadata=meta))
    return out


def majority_label(labels: Sequence[str], live: str) -> str:
    """The label most of a turn's words carry; a tie keeps the live label (else the first in
    alphabetical order). ``labels`` must not be empty."""
    return max(sorted(set(labels)), key=lambda x: (labels.count(x), x == live))


CONTINUOUS_GAP = 0.1
"""Seconds between two turns below which the speech ran on: the pipeline cut it (a speaker change
inside an utterance, or an utterance closed at its maximum length), no pause ended it (a pause
that closes an utterance lasts the endpointer's hangover, 0.6 s by default)."""


def join_touching(turns: Sequence[SpeakerTurn]) -> list[SpeakerTurn]:
    """Join consecutive turns of continuous speech that carry the same speaker (the refined view).

    The live diarizer may cut continuous speech into turns at a change that refinement undoes
    ("C: … It" | "D: opens a menu." both become E), and the endpointer cuts a long one at its
    maximum length: one speaker's stretch is then one turn again. Two turns are joined when they
    touch (less than :data:`CONTINUOUS_GAP` seconds apart) and have the same channel, label and
    name. The joined turn keeps the first one's ``turn_id`` and metadata, the latest
    ``emitted_at`` of its turns (when all its words were out: the last turn in time need not
    have gone out last), in ``metadata["live_ids"]`` the ids of every
    live turn it holds words of, in order, and in ``metadata["moved_from"]`` the live labels it
    was moved from, in order, joined by ", " (absent when none). Its text is its words
    joined, or the turns' texts joined by a space when a hook edited one of them (the edit is kept).

    Args:
        turns: turns in time order.

    Returns:
        the turns, with touching same-speaker neighbours joined.
    """
    out: list[list[SpeakerTurn]] = []
    for t in turns:
        last = out[-1][-1] if out else None
        if (last is not None and t.start - last.end < CONTINUOUS_GAP and t.channel == last.channel
                and t.speaker == last.speaker and t.sender_name == last.sender_name):
            out[-1].append(t)
        else:
            out.append([t])
    joined = []
    for group in out:
        if len(group) == 1:
            joined.append(group[0])
            continue
        words = tuple(w for t in group for w in t.words)
        edited = any(t.text != join_words(t.words) for t in group)   # a hook's edit is kept
        text = " ".join(t.text for t in group) if edited else join_words(words)
        moved = list(dict.fromkeys(t.metadata["moved_from"] for t in group if "moved_from" in t.metadata))
        meta = {k: v for k, v in group[0].metadata.items() if k != "moved_from"}
        meta["live_ids"] = list(dict.fromkeys(t.turn_id for t in group))
        if moved:
            meta["moved_from"] = ", ".join(moved)
        joined.append(group[0].replace(text=text, end=group[-1].end, words=words, metadata=meta,
                                       emitted_at=max((t.emitted_at for t in group if t.emitted_at is not None),
                                                      default=None)))
    return joined


def _relabelled_piece(turn: SpeakerTurn, words: list[Word], names: dict[str, str], start: float,
                      end: float) -> SpeakerTurn:
    speaker = words[0].speaker
    meta = dict(turn.metadata)
    if speaker != turn.speaker:
        meta["moved_from"] = turn.speaker
        meta["sender_name"] = names.get(speaker, speaker)
    return turn.replace(speaker=speaker, text=join_words(words), start=start, end=end,
                        words=tuple(words), metadata=meta)
