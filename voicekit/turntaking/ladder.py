"""The decision ladder (T1–T5): which AI member answers a human turn, or nobody.

Cheapest rung first; the first that matches decides:

- T1 ``mention``: exactly one member named.
- T2 ``group_address``: several members named (answer in the order named), or the room addressed
  as a whole (everyone answers, least recently heard first).
- T3 ``continuation``: a short message right after a member spoke; that member continues.
- T4 ``director``: an optional model call (:mod:`voicekit.turntaking.director`).
- T5 ``fallback``: the least recently heard member answers alone; every T4 failure lands here.

T6 (names on Unicode-aware boundaries) is :class:`NameMatcher`; T8 (how a decision was made) is
the :class:`Decision` record, delivered to ``ON_SPEAK_DECISION`` listeners and logged; T9/T10 are
:class:`~voicekit.turntaking.members.Floor`; T15 speak policies are applied per member before the
ladder runs.
"""

from __future__ import annotations

import logging
import threading
import time
import unicodedata
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Sequence

import icu
import regex

from voicekit.attribution import SpeakerLabel
from voicekit.attribution.labels import check_label
from voicekit.turntaking.director import (
    DEFAULT_TIMEOUT_S,
    Director,
    DirectorRequest,
    member_keys,
    parse_director_output,
)
from voicekit.turntaking.members import (MAX_DIRECTOR_TIMEOUT_S, Floor, Member, RoomConfig, TurnSource, name_form,
                                        validate_members)

if TYPE_CHECKING:
    from voicekit.hooks import HookRunner, HookTrigger

log = logging.getLogger("voicekit.turntaking")

ON_SPEAK_DECISION = "on_speak_decision"
"""Hook event name: listeners get every :class:`Decision` as it is made. Equal to
``voicekit.hooks.HookTrigger.ON_SPEAK_DECISION.value``; see :meth:`TurnTaker.attach_hooks`."""


class DecidedBy(str, Enum):
    """How a decision was made (T8). Compares equal to its string value."""

    MENTION = "mention"
    GROUP_ADDRESS = "group_address"
    CONTINUATION = "continuation"
    DIRECTOR = "director"
    FALLBACK = "fallback"
    SILENCE = "silence"
    """Nobody answers: the T10 floor with no mention nor room address (the room's, or that of
    every member whose speak policy accepts the turn), a short turn right after a member that
    answers only when addressed, or every member's speak policy refused the turn. (The contract
    lists five tags; this sixth one names the no-answer outcome instead of overloading
    ``fallback``.)"""

    def __str__(self) -> str:
        return self.value


# --- T6: names ---------------------------------------------------------------------------------

_WORD_CHAR = r"[\p{L}\p{N}\p{M}]"
# Japanese writes honorifics and particles in hiragana right after a name in kanji or katakana
# ("美咲さん"); for such a name edge a hiragana neighbour is a boundary. Any other letter or digit
# of any script is not.
_WORD_CHAR_NOT_HIRAGANA = r"[[\p{L}\p{N}\p{M}]--\p{Hiragana}]"
# Chinese and Japanese put no space between words, so for a name edge in another script (Latin
# "Elena" in "Elenaさん", "问一下Elena吧") a neighbouring Han or kana character is a boundary.
_WORD_CHAR_NOT_CJK = r"[[\p{L}\p{N}\p{M}]--[\p{Han}\p{Hiragana}\p{Katakana}]]"
_IDEOGRAPHIC_EDGE = regex.compile(r"[\p{Han}\p{Katakana}]", regex.V1)
_CJK_EDGE = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}]", regex.V1)
_IS_WORD_CHAR = regex.compile(_WORD_CHAR, regex.V1)
#: Japanese honorifics that may follow any name directly ("さくらさん", "美咲様", "Elena先生").
_HONORIFICS = ("さん", "ちゃん", "くん", "さま", "様", "先生", "氏", "殿")


def _edge_class(ch: str) -> str:
    """The word characters that, next to a name's edge character ``ch``, join it (no boundary)."""
    if _IDEOGRAPHIC_EDGE.match(ch):
        return _WORD_CHAR_NOT_HIRAGANA
    if _CJK_EDGE.match(ch):   # hiragana
        return _WORD_CHAR
    return _WORD_CHAR_NOT_CJK


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _phrase_body(words: Sequence[str]) -> str:
    """Regex for words separated by whitespace; ' and ’ both match an apostrophe."""
    return r"\s+".join(regex.escape(w).replace("'", "['’]").replace("’", "['’]") for w in words)


def _name_body(words: Sequence[str]) -> str:
    """:func:`_phrase_body` for a name, where a word's closing period may be left out or the
    space after it (``Dr. Park`` is also called ``Dr Park`` and ``Dr.Park``)."""
    body = ""
    for i, w in enumerate(words):
        if i + 1 < len(words) and len(w) > 1 and w.endswith("."):
            body += _phrase_body([w[:-1]]) + r"(?:\.\s*|\s+)"
        elif len(w) > 1 and w.endswith("."):   # the last word: "Sam Jr." is called "Sam Jr, any risk?"
            body += _phrase_body([w[:-1]]) + r"\.?"
        else:
            body += _phrase_body([w]) + (r"\s+" if i + 1 < len(words) else "")
    return body


class _BoundedSearch:
    """Search alternatives (longest first) whose ends must sit on word boundaries.

    Each alternative is a literal-first pattern with a lookahead for its end; the start boundary
    is checked on the character before the match, which keeps the scan a fast literal search.
    """

    def __init__(self, bodies: Sequence[tuple[str, str, str]], allowed_after: Sequence[str] = ()) -> None:
        # bodies: (regex body, end-boundary class, start-boundary class); allowed_after: what may
        # follow the end whatever its class (honorifics)
        after_ok = "".join(f"|(?={regex.escape(a)})" for a in allowed_after)
        alternatives = [f"(?P<g{i}>{body}(?:(?!{after}){after_ok}))" for i, (body, after, _) in enumerate(bodies)]
        self.regex = regex.compile("|".join(alternatives), regex.V1 | regex.IGNORECASE)
        self._start_class = {f"g{i}": regex.compile(before, regex.V1) for i, (_, _, before) in enumerate(bodies)}

    def finditer(self, text: str) -> Iterator[regex.Match]:
        pos = 0
        search = self.regex.search
        while True:
            match = search(text, pos)
            if match is None:
                return
            start = match.start()
            if start:
                if self._start_class[match.lastgroup].match(text[start - 1]):
                    pos = start + 1
                    continue
            yield match
            pos = match.end()


class NameMatcher:
    """Finds members named in a message (T6).

    A name matches case-insensitively (full Unicode case folding, after NFKC, default-ignorable
    characters left out and ``İ`` read as ``I``: ``Ｉｒｉｓ``, ``I\u200bris`` and ``İris`` name
    Iris; a word's closing period may be left out, ``Dr Park`` names ``Dr. Park``) when it is not
    preceded nor followed by a letter, digit or combining mark of any script: ``Iris`` does not
    match ``irises``, ``Mei`` does not match ``Meiko``, ``Zoë`` and ``Anaïs`` match. Exceptions
    for Chinese and Japanese, written without spaces: a name that starts or ends in kanji or
    katakana treats a hiragana neighbour as a boundary (``美咲さん`` names 美咲); a name edge in
    another script treats a Han or kana neighbour as one (``Elenaさん``, ``问一下Elena吧``); a
    Japanese honorific (:data:`_HONORIFICS`) may follow any name (``さくらさん``). An apostrophe
    may be typed ' or ’ (``O’Brien`` names ``O'Brien``). Where two names overlap, the longer one
    wins.

    Args:
        members: the members; each one's ``call_names`` (name and aliases) are searched.

    Raises:
        ValueError: if a name is empty.
    """

    def __init__(self, members: Sequence[Member]) -> None:
        entries: list[tuple[str, str]] = []
        for m in members:
            for n in m.call_names:
                if not n.strip():
                    raise ValueError(f"member {m.name!r} has an empty name")
                entries.append((name_form(n.strip()), m.name))
        entries.sort(key=lambda e: -len(e[0]))
        bodies = []
        for name, _ in entries:
            parts = name.split()
            body = _name_body(parts)   # O'Brien is also O’Brien; Dr. Park is also Dr Park
            bodies.append((body, _edge_class(parts[-1][-1]), _edge_class(parts[0][0])))
        self._search = _BoundedSearch(bodies, _HONORIFICS)
        self._owner = {f"g{i}": owner for i, (_, owner) in enumerate(entries)}
        # Cheap prefilter: a name can only match where its case fold occurs in the text's.
        self._folded = tuple({n.casefold().replace("’", "'") for n, _ in entries})
        self._spaced = any(len(n.split()) > 1 for n, _ in entries)

    def find(self, text: str) -> tuple[str, ...]:
        """Member names mentioned in ``text``, each once, in order of first appearance."""
        text = name_form(text)
        if not self._spaced:
            folded = text.casefold().replace("’", "'")
            if not any(n.rstrip(".") in folded for n in self._folded):
                return ()
        found: list[str] = []
        for match in self._search.finditer(text):
            owner = self._owner[match.lastgroup]
            if owner not in found:
                found.append(owner)
        return tuple(found)


def word_count(text: str) -> int:
    """The words of ``text`` as Unicode word segmentation finds them (UAX #29 with ICU's
    dictionaries for the scripts written without spaces: ICU ``BreakIterator.createWordInstance``,
    counting the segments of letters, numbers, kana and ideographs). Whitespace alone would make
    a Chinese or Japanese paragraph, or ``budget/timeline/scope``, one word (T3 would take it for a
    short reply); here ``会議の議題について`` is 4 words and ``don't`` one."""
    words = icu.BreakIterator.createWordInstance(icu.Locale.getRoot())
    words.setText(text)
    count = 0
    for _ in words:
        if words.getRuleStatus() != _WORD_NONE:
            count += 1
    return count


_WORD_NONE = 0   # ICU's UBRK_WORD_NONE: a segment of spaces or punctuation


# --- T2: the room as a whole --------------------------------------------------------------------

DEFAULT_ROOM_PHRASES: tuple[str, ...] = (
    "you two", "you three", "you four", "you five", "you both",
    "both of you", "all of you", "each of you", "every one of you", "all two of you",
    "all three of you", "all four of you", "all five of you", "the two of you",
    "the three of you", "you all", "y'all",
    "you guys", "you folks", "you lot", "you people", "you gals",
)
"""Word sequences that address the whole room wherever they stand (case-insensitive, on the
same Unicode word boundaries as names, any whitespace between words, ' or ’ for an apostrophe).
Casual plurals count only with a "you" attached: "you guys", never a bare "guys"."""

DEFAULT_ROOM_VOCATIVES: tuple[str, ...] = ("everyone", "everybody")
"""Words that address the whole room only when the room is called by them (a vocative:
"Everyone, quick status?", "Thanks everyone.", "What do you think, everybody?", "Everybody
listen") or asked a question ("Does everyone agree?", "What does everyone think?"), not when they
are a statement's subject or object ("I told everyone yesterday", "Everybody knows that"): see
:class:`RoomAddress`."""

_VOCATIVE_OPENERS = frozenset((
    "hi", "hello", "hey", "morning", "afternoon", "evening", "welcome", "thanks", "thank",
    "okay", "ok", "alright", "right", "so", "well", "now", "sorry", "please", "yes", "yeah", "no",
))
"""Words that may open the clause a vocative stands in without a comma ("Hi everyone", "Thank
you very much everyone", "Okay everybody let's start"; not "you": "Did you tell everyone?"): one
of them among the at most
:data:`_OPENER_WORDS` words between the last punctuation mark and the vocative."""

_OPENER_WORDS = 4

_QUESTION_AUXILIARIES = frozenset((
    "do", "does", "did", "is", "are", "was", "were", "has", "have", "had", "can", "could", "will",
    "would", "shall", "should", "may", "might", "must",
))
"""Auxiliaries before which a vocative word is the subject of a question put to the room: "Does
everyone agree?", "What does everyone think?", "Can everybody see my screen?"."""

_QUESTION_OPENERS = frozenset((
    "what", "how", "why", "when", "where", "which", "so", "and", "okay", "ok", "well", "now", "then",
    "alright", "right",
))
"""Words that may stand before :data:`_QUESTION_AUXILIARIES` in such a question ("So what does
everyone think?")."""

_SENTENCE_END = regex.compile(r"[.!?\u3002\uff01\uff1f]")

_NOT_AFTER_VOCATIVE = frozenset((
    "is", "was", "are", "were", "has", "had", "have", "does", "did", "do", "can", "could", "will",
    "would", "shall", "should", "may", "might", "must", "else", "who", "that", "which", "here",
    "there", "in", "at", "on", "of", "from",
    # a relative clause or an exception: "everyone I talked to", "everyone we asked", "everyone but Bob"
    "i", "we", "they", "he", "she", "but", "except", "including",
    # the common irregular past tenses (a regular one ends in -ed): "everyone got a raise"
    "got", "went", "knew", "said", "thought", "took", "came", "saw", "made", "left", "felt", "told",
    "kept", "gave", "found", "brought", "bought", "sat", "stood", "ran", "won", "lost", "heard",
    "met", "paid", "sent", "spent", "wrote", "spoke", "chose", "ate", "forgot", "understood",
    "began", "became", "grew", "drove", "flew", "fell", "held", "meant", "read", "swore", "wore",
))
"""Words that make the word before them a sentence's subject, not a call to the room
("everyone is", "everybody else", "everyone who", "everybody here", "everyone I asked",
"everyone got"); so does any word in -ed ("everyone agreed") or in -s ("everyone gets",
"everybody knows") but those of :data:`_S_WORDS`, and a contraction ("everyone's")."""

_S_WORDS = frozenset(("thanks", "this", "yes", "us", "plus", "please", "always", "perhaps", "let's"))

DEFAULT_ROOM_EXCLUSIONS: tuple[str, ...] = ("you all right",)
"""Word sequences that look like a room address but are not ("are you all right?"); one cancels
a phrase that starts where it starts."""


class RoomAddress:
    """Detects a message addressed to the whole room (the second half of T2).

    A vocative (:data:`DEFAULT_ROOM_VOCATIVES`) addresses the room when it stands apart from the
    sentence around it: right after the start of the message or a punctuation mark, or after a
    short opening ("hi", "thanks", "thank you very much", "okay"…); and before the end, a
    punctuation mark or a word that does not make it the sentence's subject (not "is", "else",
    "here", a verb in -s or -ed, "'s"…). So "Everyone, thoughts?", "Hi everybody", "Welcome back
    everyone" and "Everybody listen" address the room; "I told everyone yesterday", "Everybody
    knows that" and "Everyone agreed" do not. So does a question whose subject it is, right
    after an auxiliary that opens it ("Does everyone agree?", "What does everyone think?", "Can
    everybody see my screen?": asked of the room, the AI members in it too, as T2 has it). A
    heuristic: an irregular past ("everybody left early") still reads as a call. (English
    defaults, a voicekit reading of T2's "everyone": a meeting says "everyone" about people far
    more often than to the AI members.)

    Args:
        phrases: word sequences that address the room wherever they stand (default
            :data:`DEFAULT_ROOM_PHRASES`).
        exclusions: word sequences that cancel a phrase starting at the same place (default
            :data:`DEFAULT_ROOM_EXCLUSIONS`).
        vocatives: word sequences that address the room only as a vocative (default
            :data:`DEFAULT_ROOM_VOCATIVES`).

    Raises:
        ValueError: if a phrase has no word.
    """

    def __init__(
        self,
        phrases: Iterable[str] = DEFAULT_ROOM_PHRASES,
        exclusions: Iterable[str] = DEFAULT_ROOM_EXCLUSIONS,
        vocatives: Iterable[str] = DEFAULT_ROOM_VOCATIVES,
    ) -> None:
        def bodies(items: Iterable[str]) -> list[tuple[str, str, str]]:
            out = []
            for phrase in sorted(items, key=len, reverse=True):
                words = _nfc(phrase).split()
                if not words:
                    raise ValueError(f"room phrase without words: {phrase!r}")
                out.append((_phrase_body(words), _edge_class(words[-1][-1]), _edge_class(words[0][0])))
            return out

        vocatives = [_nfc(v) for v in vocatives]
        phrases = list(phrases) + vocatives
        self._phrases = _BoundedSearch(bodies(phrases))
        self._vocative = {" ".join(v.casefold().split()) for v in vocatives}
        # Cheap prefilter: a phrase can only match where its longest word occurs (case-folded).
        anchors = set()
        for phrase in phrases:
            words = [w.replace("’", "'") for w in _nfc(phrase).casefold().split()]
            anchors.add(max(reversed(words), key=len))
        self._anchors = tuple(sorted(anchors))
        excl = bodies(exclusions)
        self._exclusions = _BoundedSearch(excl).regex if excl else None

    def __call__(self, text: str) -> bool:
        """True when ``text`` addresses the whole room."""
        text = _nfc(text)
        folded = text.casefold().replace("’", "'")
        if not any(a in folded for a in self._anchors):
            return False
        for match in self._phrases.finditer(text):
            if self._exclusions is not None and self._exclusions.match(text, match.start()) is not None:
                continue
            if " ".join(match.group().casefold().split()) in self._vocative and not _called(text, match):
                continue
            return True
        return False


_WORDS = regex.compile(r"[\p{L}\p{M}]+(?:['’][\p{L}\p{M}]+)*", regex.V1)
_NEXT = regex.compile(r"^\s*(?:$|([\p{P}--['’]])|(['’])|([\p{L}\p{M}]+))", regex.V1)


_LAST_PUNCTUATION = regex.compile(r"[\p{P}--['’]]", regex.V1 | regex.REVERSE)


def _clause_before(text: str, end: int) -> str:
    """The text between the last punctuation mark (not an apostrophe) before ``end`` and ``end``;
    or, where that clause is long, enough of its end to hold more than :data:`_OPENER_WORDS` whole
    words. Reads a window before ``end`` that grows only while it holds too few words, so that a
    long message costs time in its length, not its square (a vocative 'everyone' in every
    sentence of a 400 KB chat message took minutes)."""
    width = 64
    while True:
        start = max(0, end - width)
        found = _LAST_PUNCTUATION.search(text, start, end)
        if found is not None:
            return text[found.end():end]
        piece = text[start:end]
        if start == 0 or len(_WORDS.findall(piece)) > _OPENER_WORDS + 1:   # (its first word may be cut)
            return piece
        width *= 4


def _called(text: str, match: regex.Match) -> bool:
    """Whether the vocative ``match`` in ``text`` calls the room (see :class:`RoomAddress`)."""
    clause = _clause_before(text, match.start())   # the words since the last punctuation mark
    words = [w.casefold() for w in _WORDS.findall(clause)]
    if (words and words[-1] in _QUESTION_AUXILIARIES and len(words) <= 3
            and _QUESTION_OPENERS.issuperset(words[:-1])):      # "(What) does everyone …"
        end = _SENTENCE_END.search(text, match.end())
        return end is not None and end.group() in "?\uff1f"
    if words and (len(words) > _OPENER_WORDS or not _VOCATIVE_OPENERS.intersection(words)):
        return False
    nxt = _NEXT.match(text[match.end():])
    if nxt is None or nxt.group(2):          # a digit, a symbol, or "'s"
        return False
    word = (nxt.group(3) or "").casefold()
    if not word:
        return True
    if word == "else":   # "Everyone else, thoughts?" calls the rest of the room; "everyone else agrees" not
        after = _NEXT.match(text[match.end() + nxt.end():])
        return after is not None and not after.group(2) and not after.group(3)
    return word not in _NOT_AFTER_VOCATIVE and not word.endswith("ed") and (
        not word.endswith("s") or word in _S_WORDS)


# --- T8: the decision record --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Decision:
    """One turn-taking decision (T8).

    Attributes:
        responders: member names that answer, in the order they generate (empty: nobody).
        decided_by: the rung that decided (:class:`DecidedBy`).
        text: the human message decided on.
        speaker: the speaker's label text (``"Alice (2)"``), or None.
        mentioned: every member named in the message, in order of appearance (before speak
            policies).
        excluded: members whose speak policy refused this turn (T15).
        chime_in: True when the director let a second member react (T4).
        director_raw: the director's raw output, when it was called and answered.
        director_latency_s: seconds the director call took (up to the timeout), when called.
        director_error: why the director gave no decision (``"timeout after 5.0 s"``, an
            exception, ``"unparseable output"``), when it was called and failed.
        decide_s: seconds the whole decision took, director included.
        turn_id: the stored turn's id when the caller passed one.
    """

    responders: tuple[str, ...]
    decided_by: DecidedBy
    text: str
    speaker: str | None = None
    mentioned: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    chime_in: bool = False
    director_raw: str | None = None
    director_latency_s: float | None = None
    director_error: str | None = None
    decide_s: float = 0.0
    turn_id: int | None = None

    @property
    def refused_addressees(self) -> tuple[str, ...]:
        """The excluded members whose refusal shaped this decision: the mentioned ones; all of
        them when the turn addressed the room without naming anyone (T2), or when nobody
        answers."""
        if not self.mentioned and self.decided_by in (DecidedBy.GROUP_ADDRESS, DecidedBy.SILENCE):
            return self.excluded
        return tuple(name for name in self.excluded if name in self.mentioned)

    @property
    def director_called(self) -> bool:
        """True when the director was consulted for this decision."""
        return self.director_latency_s is not None

    def explain(self) -> str:
        """One line for logs and ``--explain``: rung, responders, director details. A member
        whose speak policy refused the turn is listed only where the turn addressed them (named
        them, or addressed the room): a member held to one person is refused on nearly every
        turn, and the count of refusals is in :func:`~voicekit.turntaking.replay.summarize_steps`."""
        who = ", ".join(self.responders) if self.responders else "nobody"
        parts = [f"[{self.decided_by.value}] -> {who}"]
        if self.chime_in:
            parts.append("(chime-in)")
        if addressed := self.refused_addressees:
            parts.append(f"({', '.join(addressed)} excluded by speak policy)")
        if self.director_called:
            parts.append(f"director {self.director_latency_s * 1000:.0f} ms")
            if self.director_error:
                parts.append(f"failed: {self.director_error}")
            if self.director_raw is not None:
                parts.append(f"raw={self.director_raw!r}")
        return " ".join(parts)


# --- floor bookkeeping -------------------------------------------------------------------------


class FloorState:
    """Who spoke when, as the ladder needs it (T3 and the least-recent order of T2/T5)."""

    def __init__(self) -> None:
        self._seq = 0
        self._last_spoke: dict[str, int] = {}
        self.last_member: str | None = None
        """The member who produced the room's latest turn, or None when it was a person's."""

    def record_member(self, name: str) -> None:
        """A member's reply was committed."""
        self._seq += 1
        self._last_spoke[name] = self._seq
        self.last_member = name

    def record_human(self) -> None:
        """A person's turn was committed."""
        self._seq += 1
        self.last_member = None

    def most_recent_member(self) -> str | None:
        """The member who spoke most recently, whoever spoke after; None if none spoke yet."""
        if not self._last_spoke:
            return None
        return max(self._last_spoke, key=self._last_spoke.__getitem__)

    def least_recent_first(self, members: Sequence[Member]) -> list[Member]:
        """``members`` ordered least recently heard first; never-heard members first of all, in
        their given (configured) order."""
        return sorted(members, key=lambda m: self._last_spoke.get(m.name, -1))


# --- the ladder ---------------------------------------------------------------------------------

Listener = Callable[[Decision], None]


class TurnTaker:
    """Runs the decision ladder for one room.

    Args:
        members: the AI members, in configured order: :class:`Member` records, or bare names
            (``["Iris", "Elena"]``, members with only a name); or a :class:`RoomConfig`, whose
            floor and thresholds then apply unless given here.
        director: the T4 director (a callable, :class:`~voicekit.turntaking.director.ModelDirector`
            for a model); None (the default) skips T4 (T9).
        floor: ``Floor.ALWAYS`` (default) or ``Floor.WHEN_ADDRESSED`` (T10): the room's floor, for
            every member without one of its own (``Member.floor``).
        continuation_max_chars: T3 threshold in characters (default 25).
        continuation_max_words: T3 threshold in words (default 3). A message continues when it
            is within either threshold.
        director_timeout_s: hard T4 timeout in seconds (default 5.0).
        room_phrases: word sequences addressing the room (default :data:`DEFAULT_ROOM_PHRASES`).
        room_exclusions: word sequences that are not (default :data:`DEFAULT_ROOM_EXCLUSIONS`).
        room_vocatives: words that address the room only as a vocative (default
            :data:`DEFAULT_ROOM_VOCATIVES`: "everyone", "everybody"; see :class:`RoomAddress`).

    Raises:
        MembersError: if the member list is invalid.
        TypeError: ``members`` is one string, or holds something other than members and names.
        ValueError: if a threshold or the timeout is negative.

    Not thread-safe: decide and record turns of one room from one thread (or under a lock).
    """

    def __init__(
        self,
        members: Sequence[Member] | RoomConfig,
        *,
        director: Director | None = None,
        floor: Floor | None = None,
        continuation_max_chars: int | None = None,
        continuation_max_words: int | None = None,
        director_timeout_s: float | None = None,
        room_phrases: Iterable[str] = DEFAULT_ROOM_PHRASES,
        room_exclusions: Iterable[str] = DEFAULT_ROOM_EXCLUSIONS,
        room_vocatives: Iterable[str] = DEFAULT_ROOM_VOCATIVES,
    ) -> None:
        if isinstance(members, str):
            raise TypeError(f"TurnTaker takes a list of members, not one string: TurnTaker([{members!r}])")
        if isinstance(members, RoomConfig):
            cfg = members
        else:   # a bare name is short for a member with only a name, as in members.yaml
            cfg = RoomConfig(members=validate_members([Member(m) if isinstance(m, str) else m for m in members]))
        self.members: tuple[Member, ...] = validate_members(list(cfg.members))
        self._by_name = {m.name: m for m in self.members}
        self._all_names = frozenset(self._by_name)
        self._reserved = tuple(name for m in self.members for name in m.call_names)
        self._any_policy = any(m.speak_policy is not None for m in self.members)
        self.director = director
        self.floor = Floor(floor if floor is not None else cfg.floor)
        self.continuation_max_chars = (
            cfg.continuation_max_chars if continuation_max_chars is None else continuation_max_chars
        )
        self.continuation_max_words = (
            cfg.continuation_max_words if continuation_max_words is None else continuation_max_words
        )
        self.director_timeout_s = float(
            cfg.director_timeout_s if director_timeout_s is None else director_timeout_s
        )
        if min(self.continuation_max_chars, self.continuation_max_words) < 0:
            raise ValueError("continuation thresholds must be >= 0")
        if not 0 <= self.director_timeout_s <= MAX_DIRECTOR_TIMEOUT_S:
            raise ValueError(f"director timeout must be 0 to {MAX_DIRECTOR_TIMEOUT_S:g} seconds, got "
                             f"{self.director_timeout_s}")
        self.names = NameMatcher(self.members)
        self.room_address = RoomAddress([*room_phrases, *cfg.room_phrases], [*room_exclusions, *cfg.room_exclusions],
                                        [*room_vocatives, *cfg.room_vocatives])
        self.state = FloorState()
        self._listeners: list[Listener] = []

    # hooks ---------------------------------------------------------------------------------

    def on(self, event: "str | HookTrigger", callback: Listener) -> None:
        """Register ``callback`` for ``event`` (only :data:`ON_SPEAK_DECISION` exists; the
        ``HookTrigger.ON_SPEAK_DECISION`` member is accepted too).

        Callbacks run synchronously after each decision, in registration order; an exception in
        one is logged and never reaches the room.

        Raises:
            ValueError: for an unknown event name.
        """
        if getattr(event, "value", event) != ON_SPEAK_DECISION:
            raise ValueError(f"unknown turn-taking event {event!r}")
        self._listeners.append(callback)

    def attach_hooks(self, runner: "HookRunner") -> None:
        """Deliver every decision to the ``HookTrigger.ON_SPEAK_DECISION`` hooks of ``runner``.

        Each decision goes through :meth:`HookRunner.emit`, synchronously, after the listeners
        registered before this call: each hook under the runner's timeout, a failing hook logged
        and recorded in ``runner.failures``, never raised to the room.
        """
        from voicekit.hooks import HookTrigger

        self.on(ON_SPEAK_DECISION, lambda d: runner.emit(HookTrigger.ON_SPEAK_DECISION, d))

    def _emit(self, decision: Decision) -> None:
        if log.isEnabledFor(logging.INFO):
            log.info("speak decision for %r: %s", decision.speaker, decision.explain())
        for callback in self._listeners:
            try:
                callback(decision)
            except Exception:  # a listener must not break the room
                log.exception("ON_SPEAK_DECISION listener %r failed", callback)

    # bookkeeping ---------------------------------------------------------------------------

    def record_reply(self, member: str) -> None:
        """Record that ``member`` replied (its reply was committed to the meeting).

        Raises:
            KeyError: if ``member`` is not a member of this room.
        """
        if member not in self._by_name:
            raise KeyError(f"unknown member {member!r}")
        self.state.record_member(member)

    def shown(self, label: SpeakerLabel) -> str:
        """``label`` as the members' views show it: a person whose name reads like a member's
        name or alias is marked ``(a participant)`` ("Iris (a participant)" beside the member
        Iris; A6, T12)."""
        return label.text_beside(self._reserved)

    def member(self, name: str) -> Member:
        """The member called ``name``.

        Raises:
            KeyError: if there is none.
        """
        return self._by_name[name]

    # the ladder ----------------------------------------------------------------------------

    def is_short(self, text: str) -> bool:
        """T3's test: at most ``continuation_max_chars`` characters or at most
        ``continuation_max_words`` words (after stripping), words counted by :func:`word_count`."""
        stripped = text.strip()
        return (
            len(stripped) <= self.continuation_max_chars
            or word_count(stripped) <= self.continuation_max_words
        )

    def decide(
        self,
        text: str,
        label: SpeakerLabel | None = None,
        *,
        participant_id: str | None = None,
        turn_id: int | None = None,
        notify: bool = True,
    ) -> Decision:
        """Decide who answers one human turn, record the turn, and notify listeners.

        Args:
            text: what the person said.
            label: the turn's attribution label (read by speak policies, shown to the director).
            participant_id: the id of the registered participant the turn came from, if any
                (T15): the one :func:`voicekit.attribution.find_participant` names, as
                :func:`~voicekit.turntaking.replay.replay_room` passes it; never the id a turn's
                metadata merely claims (a chat message that claims ``p-alice`` off Alice's
                channels is not Alice, A5).
            turn_id: the stored turn's id, copied into the decision.
            notify: False to decide without telling the listeners (and ``ON_SPEAK_DECISION``
                hooks): a resumed meeting's earlier turns, decided again to rebuild the floor
                state, were announced when they were first decided.

        Returns:
            The :class:`Decision`. A director failure is recorded in it, never raised.

        Raises:
            TypeError: when ``label`` is not a SpeakerLabel (a bare name, ``"Speaker B"``).
        """
        check_label(label)
        t0 = time.perf_counter()
        speaker = label.text if label is not None else None
        if self._any_policy:
            source = TurnSource(label=label, participant_id=participant_id)
            eligible = [m for m in self.members if m.accepts(source)]
            excluded = tuple(m.name for m in self.members if m.name not in {e.name for e in eligible})
            eligible_names = {m.name for m in eligible}
        else:
            eligible, excluded, eligible_names = list(self.members), (), self._all_names
        mentioned = self.names.find(text)
        last = self.state.last_member

        fields: dict = {}
        if mentioned:
            responders = tuple(n for n in mentioned if n in eligible_names)
            rung = DecidedBy.MENTION if len(mentioned) == 1 else DecidedBy.GROUP_ADDRESS
        elif self.room_address(text):
            responders = tuple(m.name for m in self.state.least_recent_first(eligible))
            rung = DecidedBy.GROUP_ADDRESS
        else:   # T3-T5 run among the members on an open floor (T10: the others wait to be named)
            open_floor = [m for m in eligible if self.floor_of(m) is Floor.ALWAYS]
            follows_last = last is not None and last in eligible_names and self.is_short(text)
            if follows_last and any(m.name == last for m in open_floor):
                responders, rung = (last,), DecidedBy.CONTINUATION
            elif follows_last or not open_floor:
                # a short turn right after a member who waits to be named is said to that member:
                # nobody else answers it
                responders, rung = (), DecidedBy.SILENCE
            else:
                responders, rung, fields = self._direct(text, label, open_floor)

        self.state.record_human()
        decision = Decision(
            responders=responders,
            decided_by=rung,
            text=text,
            speaker=speaker,
            mentioned=mentioned,
            excluded=excluded,
            decide_s=time.perf_counter() - t0,
            turn_id=turn_id,
            **fields,
        )
        if notify:
            self._emit(decision)
        return decision

    def floor_of(self, member: Member) -> Floor:
        """The floor ``member`` answers under: its own (``Member.floor``), else the room's."""
        return member.floor if member.floor is not None else self.floor

    def _fallback(self, eligible: Sequence[Member]) -> tuple[str, ...]:
        return (self.state.least_recent_first(eligible)[0].name,)

    def _direct(
        self, text: str, label: SpeakerLabel | None, eligible: Sequence[Member]
    ) -> tuple[tuple[str, ...], DecidedBy, dict]:
        """T4, then T5. Returns (responders, rung, director fields for the Decision). The director
        reads the speaker as the members' views show it: a person whose name reads like a
        member's name or alias is marked ``(a participant)`` (A6, T12)."""
        if self.director is None or len(eligible) < 2:
            return self._fallback(eligible), DecidedBy.FALLBACK, {}
        keys = member_keys(len(eligible))
        request = DirectorRequest(
            text=text,
            speaker=self.shown(label) if label is not None else None,
            candidates=tuple(eligible),
            keys=keys,
            last_member=self.state.most_recent_member(),
            timeout_s=self.director_timeout_s,
        )
        raw, latency, error = self._call_director(request)
        fields = {"director_raw": raw, "director_latency_s": latency, "director_error": error}
        verdict = parse_director_output(raw, keys) if error is None else None
        if verdict is None:
            if error is None:
                fields["director_error"] = "unparseable output"
            return self._fallback(eligible), DecidedBy.FALLBACK, fields
        by_key = dict(zip(keys, eligible))
        responders = [by_key[verdict.responder].name]
        chime = False
        if verdict.chime_in:
            if len(keys) == 2:
                second = next(k for k in keys if k != verdict.responder)
            else:
                second = verdict.ranking[1] if len(verdict.ranking) > 1 else None
            if second is not None:
                responders.append(by_key[second].name)
                chime = True
        fields["chime_in"] = chime
        return tuple(responders), DecidedBy.DIRECTOR, fields

    def _call_director(self, request: DirectorRequest) -> tuple[str | None, float, str | None]:
        """Run the director under a hard timeout: (raw output, latency in s, error or None)."""
        box: dict[str, object] = {}
        director = self.director
        assert director is not None

        def run() -> None:
            try:
                box["raw"] = director(request)
            except BaseException as exc:  # recorded, never raised to the room
                box["error"] = exc

        worker = threading.Thread(target=run, name="voicekit-director", daemon=True)
        t0 = time.perf_counter()
        worker.start()
        worker.join(self.director_timeout_s)
        latency = time.perf_counter() - t0
        if worker.is_alive():
            return None, latency, f"timeout after {self.director_timeout_s:g} s"
        if "error" in box:
            exc = box["error"]
            return None, latency, f"{type(exc).__name__}: {exc}"
        raw = box.get("raw")
        if not isinstance(raw, str):
            return None, latency, f"director returned {type(raw).__name__}, not text"
        return raw, latency, None


__all__ = [
    "DEFAULT_ROOM_EXCLUSIONS",
    "DEFAULT_ROOM_PHRASES",
    "DEFAULT_TIMEOUT_S",
    "ON_SPEAK_DECISION",
    "DecidedBy",
    "Decision",
    "FloorState",
    "NameMatcher",
    "RoomAddress",
    "TurnTaker",
]
