"""Labels: the A8 line format, speaker labels, participants and name resolution (A4–A8)."""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from voicekit.attribution._unicode import (BLANK_SYMBOLS, DOUBLE_QUOTE_MARKS, INVISIBLE_TABLE, _uset_chars, ascii_reading, is_invisible,
                                           mark_view, mark_view_char, name_keys, reads_alike, skeleton,
                                           strip_ignorables)
from voicekit.attribution.note import replace_mark_copies
from voicekit.turns import SpeakerTurn, channel_id, channel_problem

# --- A8: the line format ---------------------------------------------------------------------

#: Double quote marks other than ``"`` that A8 turns into ``'`` before JSON-encoding a line: the
#: contract's twelve and every other one (``ʺ``, ``״``, ``〃``, ``❝``, ``⹂``...: ``DOUBLE_QUOTE_MARKS``).
OTHER_QUOTE_MARKS = DOUBLE_QUOTE_MARKS
_QUOTE_TABLE = {ord(c): "'" for c in OTHER_QUOTE_MARKS}


def replace_quote_marks(text: str) -> str:
    """Replace every A8 double quote mark other than ``"`` by ``'``."""
    return text.translate(_QUOTE_TABLE)


def quote_line(text: str) -> str:
    """The JSON-string part of one A8 line.

    Every double quote mark other than ``"`` (U+201C/D/E/F, U+2033, U+2036, U+301D/E/F, U+FF02,
    U+00AB, U+00BB, and the others of :data:`OTHER_QUOTE_MARKS`: ``ʺ``, ``״``, ``〃``, ``❝``…)
    becomes ``'``, then the line is encoded with
    ``json.dumps(line, ensure_ascii=False)``, so ``"`` and ``\\`` are escaped as JSON escapes them.

    Args:
        text: one line (the caller splits lines; a line boundary inside would be JSON-escaped).

    Returns:
        The quoted line, opening and closing with ``"``.
    """
    return json.dumps(replace_quote_marks(text), ensure_ascii=False)


def label_lines(label: str, text: str) -> str:
    """``label: "line"`` for every line of ``text``, joined with ``"\\n"`` (A8).

    Lines are split with ``str.splitlines()`` (``\\r\\n``, ``\\u2028``, ``\\x85``…), so every
    visual line opens with the label. An empty text gives one empty line: ``label: ""``.

    A mark copy that neither part holds alone but the line does (a name ``[Speaker labels``
    before a text ``from the runtime: …``) cannot form either (A10): the label's opening
    brackets (whatever reads as ``[``) are then written ``(`` (:func:`defuse_brackets`). Copies
    inside the text are the caller's to replace (:func:`replace_mark_copies`), as the views do.

    Args:
        label: the label text (see :attr:`SpeakerLabel.text`).
        text: the turn's text, raw.
    """
    lines = text.splitlines() or [""]
    out = "\n".join(f"{label}: {quote_line(line)}" for line in lines)
    if ("[" in mark_view(label)[0] and replace_mark_copies(out) != out
            and replace_mark_copies(text) == text and replace_mark_copies(label) == label):
        label = defuse_brackets(label)
        out = "\n".join(f"{label}: {quote_line(line)}" for line in lines)
    return out


def defuse_brackets(label: str) -> str:
    """``label`` with every character that reads as ``[`` in a runtime mark written ``(``."""
    return "".join("(" if mark_view_char(ch) == "[" else ch for ch in label)


# --- names shown in labels -------------------------------------------------------------------

_AT_SIGNS = "@\uff20\ufe6b"
#: The roles a model knows (A7), and the tag of the previous summary in a summarizer's
#: transcript (A15: a person named "[summary so far]" read like that tag; a red-team trial).
_ROLE_WORDS = ("assistant", "user", "system", "you", "summary so far")
#: The A11 keys of the role words in lower case, upper case and capitalised: ``SYSTEМ``
#: (Cyrillic ``М``) shares a key with ``SYSTEM`` only, not with ``system``.
_ROLE_KEYS = [name_keys(v) for w in _ROLE_WORDS for v in (w, w.upper(), w.capitalize())]
_ROLE_FOLD_SKELETONS = frozenset(k[0] for k in _ROLE_KEYS)  # skeleton(casefold(word))
_ROLE_SKELETON_FOLDS = frozenset(k[1] for k in _ROLE_KEYS)  # casefold(skeleton(word))
#: A rank-like ``(n)`` or ``(a participant)`` at the end of a name, matched on its NFKC form.
_TRAILING_MARKER = re.compile(r"\s*\(\s*(\d+|a participant)\s*\)\s*$", re.IGNORECASE)
PARTICIPANT_MARKER = " (a participant)"


def _is_mark(c: str) -> bool:
    return unicodedata.category(c)[0] == "M"


@functools.lru_cache(maxsize=4096)   # pure, and asked of the same few names at every turn (turn-taking's decide)
def reads_like_role(name: str) -> bool:
    """True when a name reads like a role a model knows: assistant, user, system, you (A7).

    Compared by the look-alike keys of A11 with the role words in lower case, upper case and
    capitalised, and the name's upper case with them, so ``USER``, ``Ｕｓｅｒ``, ``Uѕer`` (Cyrillic
    ``ѕ``), ``SYSTEМ`` (Cyrillic ``М``) and ``ѕуѕтем`` (all Cyrillic) count too; also by the
    skeleton of the name before NFKC, so that a look-alike NFKC breaks up (``ass˛stant`` with
    U+02DB OGONEK for ``i``) counts; by each character's ASCII reading, so that Latin small
    capitals (``ᴜsᴇʀ``), which have no skeleton, count; with the punctuation and symbols at
    its ends removed (``[assistant]``, ``«User»``); and by its :func:`name_core`, so
    that a role word beside a bracketed part counts (``Assistant (AI)``, ``System [admin]``,
    ``Assistant (2)``).
    """
    name = name.strip()
    raw = strip_ignorables(name)  # not NFKC
    # the name's upper case too: Cyrillic lower-case т and м have no Latin skeleton, Т and М do
    keys = (name_keys(name), name_keys(name.upper()), (skeleton(raw.casefold()), skeleton(raw).casefold()))
    if any(k0 in _ROLE_FOLD_SKELETONS or k1 in _ROLE_SKELETON_FOLDS for k0, k1 in keys):
        return True
    if "".join(map(ascii_reading, raw)).casefold() in _ROLE_WORDS:  # small capitals: ᴜsᴇʀ
        return True
    # a role word in brackets or quotes is a role tag: [assistant] is how a summary marks the agent
    inner = name.strip(_ENCLOSING)
    if inner != name and bool(inner) and reads_like_role(inner):
        return True
    # a role word with a bracketed part or a rank beside it: ``Assistant (AI)``, ``System [admin]``,
    # ``Assistant (2)`` (a name shows its brackets as ``[2]``, which a model reads as the assistant's)
    core = name_core(name)
    return bool(core) and core != " ".join(name.split()) and reads_like_role(core)


#: What may enclose a role word at the ends of a name (``[assistant]``, ``«User»``, ``<system>``):
#: every character of the punctuation and symbol categories, whitespace and the invisible ones.
_ENCLOSING = "".join(_uset_chars("[[:P:][:S:][:Z:]]")) + "".join(map(chr, INVISIBLE_TABLE))


def _rank_like_tail(s: str) -> tuple[int, str] | None:
    """Where a rank-like ``(n)`` / ``(a participant)`` ends ``s``, and its inner text (A7, A11).

    Matched on each character's ASCII reading (NFKC, else its UTS #39 skeleton:
    :func:`~voicekit.attribution._unicode.ascii_reading`), with invisible characters and
    combining marks left out, so that any decimal digit and any bracket that reads as a
    parenthesis count: ``(𝟐)``, ``⑵``, ``﹙2﹚``, ``₍₂₎``, ``（２）``, ``❨2❩``, ``(Ƨ)``, ``(a
    partiсipant)`` with a Cyrillic ``с``. Returns ``(start index in s, inner)``, the start
    including invisible characters just before the match.
    """
    view: list[str] = []
    index: list[int] = []
    for i, ch in enumerate(s):
        if is_invisible(ch) or _is_mark(ch):
            continue
        v = ascii_reading(ch)
        view.append(v)
        index.extend([i] * len(v))
    m = _TRAILING_MARKER.search("".join(view))
    if not m:
        return None
    start = index[m.start()]
    while start and is_invisible(s[start - 1]):  # left out of the view: part of the tail
        start -= 1
    return start, m.group(1)


_BRACKETED = re.compile(r"\([^()]*\)|\[[^\[\]]*\]|\{[^{}]*\}|<[^<>]*>")


@functools.lru_cache(maxsize=4096)
def name_core(name: str) -> str:
    """What a reader takes for the name itself: ``name`` without its bracketed parts (read by
    their ASCII reading: ``(AI)``, ``［bot］``, ``⑵``) and with every punctuation mark and symbol a
    space, whitespace collapsed: ``Elena (AI)`` → ``Elena``, ``Dr. Park`` → ``Dr Park``,
    ``Elena.`` → ``Elena``. Empty when nothing is left."""
    read = "".join(ascii_reading(c) if unicodedata.category(c)[0] in "PS" else c
                   for c in strip_ignorables(unicodedata.normalize("NFKC", name)))
    while (cut := _BRACKETED.sub(" ", read)) != read:
        read = cut
    return " ".join("".join(" " if unicodedata.category(c)[0] in "PS" else c for c in read).split())


def one_line(name: str) -> str:
    """``name`` as one line of plain text, as a terminal or a transcript file may show it: NFC;
    default-ignorable and format characters removed (U+200B, the bidi overrides U+202A-202E…);
    every control character (``\\n``, ``\\r``, ESC…), line or paragraph separator and blank symbol
    (U+2800 BRAILLE PATTERN BLANK, which shows as a space) a space; runs of whitespace one space;
    no blank at either end. The first steps of :func:`display_name`, for a
    name that comes from outside (a LiveKit participant's display name)."""
    s = strip_ignorables(unicodedata.normalize("NFC", name))
    s = "".join(" " if (unicodedata.category(c) in ("Cc", "Zl", "Zp") or c.isspace() or c in BLANK_SYMBOLS)
                else c for c in s)
    return " ".join(s.split())


@functools.lru_cache(maxsize=4096)   # pure: a meeting's labels show the same few names at every turn
def display_name(name: str) -> str:
    """The form a resolved name takes in a label (empty when nothing is left).

    In order: NFC; default-ignorable characters removed; every control, line or paragraph
    separator becomes a space and runs of whitespace one space; double quote marks become ``'``
    (a name cannot open a quoted part); copies of runtime marks replaced (A10); every colon and
    look-alike (``：``, ``꞉``, ``∶``...) a space (a name cannot end a label and start another:
    ``Bob: 'I approve' Alice`` reads ``Bob 'I approve' Alice``); leading ``@``
    signs and their look-alikes removed (A6), with any combining marks, format characters and
    blank symbols (U+2800...) before or between them; a trailing rank-like ``(n)`` or
    ``(a participant)``, in any form that reads as it (``⑵``, ``(𝟐)``, ``﹙2﹚``, ``❨2❩``), shown
    as ``[n]`` / ``[a participant]`` so that it cannot pass for what the runtime places (A7, A11),
    also when it is the whole name (``(2)`` reads ``[2]``).
    """
    s = one_line(name)
    s = s.replace('"', "'")
    s = replace_quote_marks(s)
    s = replace_mark_copies(s)
    s = " ".join("".join(" " if mark_view_char(c) == ":" else c for c in s).split())
    while s and (s[0] in _AT_SIGNS or s[0].isspace() or is_invisible(s[0]) or _is_mark(s[0])):
        s = s[1:]
    tail: list[str] = []
    while True:
        found = _rank_like_tail(s)
        if found is None:
            break
        tail.insert(0, f"[{found[1]}]")
        s = s[: found[0]]
    return " ".join([s.strip()] + tail).strip()


@dataclass(frozen=True)
class SpeakerLabel:
    """Who a turn is attributed to, as the model reads it.

    Attributes:
        name: the resolved name (A4), or None for a nameless source.
        rank: the look-alike rank (A11): None (or 1) for the source that keeps the bare name,
            2, 3… for later sources whose names read alike.
        channel: the channel the turn came through, as the meeting addresses it (``"mic"``,
            ``"room1/2"``, ``"ai2"``).
    """

    name: str | None
    rank: int | None
    channel: str

    def __post_init__(self) -> None:
        if self.rank is not None and self.rank < 1:
            raise ValueError(f"rank must be None or >= 1, got {self.rank}")

    @property
    def base_name(self) -> str | None:
        """The name as shown, without rank or role marker; None for a nameless source."""
        if self.name is None:
            return None
        shown = display_name(self.name)
        return shown or None

    @property
    def text(self) -> str:
        """The label: ``Alice``, ``Alice (2)``, ``User (a participant) (2)`` or ``@mic``."""
        return self.text_beside(())

    def text_beside(self, reserved: Iterable[str]) -> str:
        """:attr:`text`, also marked ``(a participant)`` when the name reads alike one of
        ``reserved`` (A11's look-alike keys): in an AI member's view the other members' names
        are reserved, so a person who gives the name "Iris" reads ``Iris (a participant)`` beside
        the member Iris (turn-taking T12). Compared as they are and by their :func:`name_core`, so
        that ``Iris.``, ``Iris (AI)`` and ``Dr Park`` read alike ``Iris`` and ``Dr. Park``."""
        base = self.base_name
        if base is None:
            return "@" + self.shown_channel
        core = name_core(base)
        if reads_like_role(base) or any(reads_alike(base, name) or (core and reads_alike(core, name_core(name)))
                                         for name in reserved):
            base += PARTICIPANT_MARKER
        if self.rank is not None and self.rank > 1:
            base += f" ({self.rank})"
        return base

    @property
    def shown_channel(self) -> str:
        """The channel as its label shows it: the channel id, or, for a channel that is not one
        (:func:`voicekit.turns.channel_problem`: a turn built by hand with ``channel='x: "y"'``),
        its :func:`voicekit.turns.channel_id` form, so that no channel can end the label or open a
        quoted part (A6, A8)."""
        if channel_problem(self.channel) is None:
            return self.channel
        return channel_id(self.channel, default="channel")

    @property
    def speaker_key(self) -> tuple[str, str, int]:
        """What A1 counts: one speaker per (name, rank), one per channel for nameless sources."""
        base = self.base_name
        if base is None:
            return ("channel", self.channel, 0)
        return ("name", base, self.rank or 1)


# --- participants and resolution (A4, A5, A6) --------------------------------------------------


@dataclass(frozen=True)
class Participant:
    """A participant record of a meeting.

    Attributes:
        id: the participant's id on the channels they are reached through (a LiveKit identity,
            a chat sender id).
        display_name: the name people know them by, or None.
        identity_id: the id an identity step resolved them to (an enrolled voice), or None. It
            names them on every channel (A5).
        channels: the channels they are reached through; their ``id`` names them only there.
        registered: True for a participant the meeting registered (an enrolled voice, a LiveKit
            identity): such a participant keeps the bare name against look-alikes (A11).
        kind: ``"person"`` or ``"agent"`` (another AI member).
    """

    id: str
    display_name: str | None = None
    identity_id: str | None = None
    channels: tuple[str, ...] = ()
    registered: bool = True
    kind: str = "person"

    @property
    def source_key(self) -> str:
        """The source this participant is in the register (before salting)."""
        return "participant:" + self.id


# Turn roles, read from ``turn.metadata["role"]``.
ROLE_KEY = "role"
PERSON = "user"          #: a person's turn (the default)
ASSISTANT = "assistant"  #: this assistant's own reply
AGENT = "agent"          #: another AI member's reply
INSTRUCTION = "instruction"  #: an instruction from the application
EVENT = "event"          #: a runtime system event
_ROLES = (PERSON, ASSISTANT, AGENT, INSTRUCTION, EVENT)


def turn_role(turn: SpeakerTurn, assistant_id: str | None = None) -> str:
    """The role of a turn: ``"user"``, ``"assistant"``, ``"agent"``, ``"instruction"``, ``"event"``.

    Read from ``turn.metadata["role"]`` (default ``"user"``). With ``assistant_id``, an
    ``"agent"`` or ``"assistant"`` turn whose ``metadata["agent_id"]`` equals it is this
    assistant's own (``"assistant"``) and any other agent's turn is ``"agent"`` (turn-taking T12).

    Raises:
        ValueError: for an unknown role.
    """
    role = str(turn.metadata.get(ROLE_KEY) or PERSON)
    if role not in _ROLES:
        raise ValueError(f"unknown turn role {role!r}; expected one of {_ROLES}")
    if assistant_id is not None and role in (ASSISTANT, AGENT):
        agent = turn.metadata.get("agent_id")
        if agent is not None:
            return ASSISTANT if str(agent) == assistant_id else AGENT
    return role


def agent_of(turn: SpeakerTurn) -> str | None:
    """The ``metadata["agent_id"]`` of an AI member's turn (role ``assistant`` or ``agent``), or
    None: the turn of a person, an instruction, an event, or an agent turn that names no agent.
    Such a turn is the assistant's own in its own view and another agent's in every other
    (:func:`turn_role`), so the register keeps its name whichever view commits it."""
    if str(turn.metadata.get(ROLE_KEY) or PERSON) not in (ASSISTANT, AGENT):
        return None
    return _meta_str(turn, "agent_id")


def is_speaker_turn(role: str) -> bool:
    """True for the roles that carry a label and count as speakers (people and other agents)."""
    return role in (PERSON, AGENT)


def _meta_str(turn: SpeakerTurn, key: str) -> str | None:
    value = turn.metadata.get(key)
    if value is None:
        return None
    value = str(value).strip()
    return value or None


def find_participant(turn: SpeakerTurn, participants: Iterable[Participant]) -> Participant | None:
    """The participant record that names a turn's source, or None (A4, A5).

    ``metadata["identity_id"]`` (set by an identity step) matches a participant's ``id`` or
    ``identity_id`` on any channel. ``metadata["participant_id"]`` matches a participant's
    ``identity_id`` on any channel, and their ``id`` only when the turn's channel is one of the
    participant's ``channels``.
    """
    ident = _meta_str(turn, "identity_id")
    pid = _meta_str(turn, "participant_id")
    if ident is None and pid is None:
        return None
    by_id: Participant | None = None
    for p in participants:
        if ident is not None and (p.id == ident or p.identity_id == ident):
            return p
        if pid is not None:
            if p.identity_id is not None and p.identity_id == pid:
                return p
            if by_id is None and p.id == pid and turn.channel in p.channels:
                by_id = p
    return by_id


def resolve_name(turn: SpeakerTurn, participants: Iterable[Participant] = ()) -> str | None:
    """The name of a turn's speaker, or None (A4).

    In order: ``metadata["sender_name"]`` with whitespace stripped (empty means absent); the
    ``display_name`` of the participant :func:`find_participant` returns; otherwise None. A name
    that is empty once shown (:func:`display_name`, e.g. only ``@`` signs or invisible
    characters) counts as absent: a ``sender_name`` of ``@`` falls back to the participant record.
    """
    name = _meta_str(turn, "sender_name")
    if name is not None and not display_name(name):
        name = None
    if name is None:
        p = find_participant(turn, participants)
        if p is not None and p.display_name is not None:
            name = p.display_name.strip() or None
    if name is not None and not display_name(name):
        return None
    return name


def source_key(turn: SpeakerTurn, participants: Iterable[Participant] = ()) -> str:
    """Who produced a turn, as a key for the register (salted before it is stored).

    ``metadata["source_id"]`` when set; else the participant that :func:`find_participant`
    returns; else a resolved identity; else the participant id on its channel; else the
    pipeline speaker on its channel. An AI member's turn that names its agent (:func:`agent_of`)
    and no participant is that agent's, on any channel.
    """
    explicit = _meta_str(turn, "source_id")
    if explicit is not None:
        return "source:" + explicit
    p = find_participant(turn, participants)
    if p is not None:
        return p.source_key
    agent = agent_of(turn)
    if agent is not None:
        return "agent:" + agent
    ident = _meta_str(turn, "identity_id")
    if ident is not None:
        return "identity:" + ident
    pid = _meta_str(turn, "participant_id")
    if pid is not None:
        return f"channel-participant:{turn.channel}\x00{pid}"
    return f"speaker:{turn.channel}\x00{turn.speaker}"


def distinct_speakers(labels: Iterable[SpeakerLabel | None]) -> set[tuple[str, str, int]]:
    """The A1 speaker keys of the given labels (None entries are ignored)."""
    return {lab.speaker_key for lab in labels if lab is not None}


def check_label(label: Any) -> None:
    """Raise a TypeError that names the fix when ``label`` is neither a :class:`SpeakerLabel`
    nor None (a bare name, ``"Alice"``)."""
    if label is not None and not isinstance(label, SpeakerLabel):
        bare = f"; for a bare name: SpeakerLabel({label!r}, None, 'mic')" if isinstance(label, str) else ""
        raise TypeError(f"a label must be a voicekit.attribution.SpeakerLabel (name, rank, channel), such as "
                        f"MeetingStore.labels(turns) gives, or None, not {type(label).__name__} {label!r}{bare}")


def check_labels(labels: Sequence[SpeakerLabel | None], n: int) -> Sequence[SpeakerLabel | None]:
    """Check that ``labels`` has one :class:`SpeakerLabel` (or None) per turn.

    Raises:
        ValueError: when the lengths differ.
        TypeError: an entry that is not a label (:func:`check_label`).
    """
    if len(labels) != n:
        raise ValueError(f"expected {n} labels (one per turn), got {len(labels)}")
    for label in labels:
        check_label(label)
    return labels


def check_participants(participants: Iterable[Any]) -> None:
    """Raise a TypeError that names the fix for an entry that is not a :class:`Participant`
    (a bare name, ``"Diane"``, which would name nobody, silently)."""
    for p in participants:
        if not isinstance(p, Participant):
            raise TypeError(f"participants are voicekit.attribution.Participant records (Participant(id='p-diane', "
                            f"display_name='Diane')), not {type(p).__name__} {p!r}")


__all__ = [
    "OTHER_QUOTE_MARKS", "replace_quote_marks", "quote_line", "label_lines", "reads_like_role",
    "display_name", "SpeakerLabel", "Participant", "ROLE_KEY", "PERSON", "ASSISTANT", "AGENT",
    "INSTRUCTION", "EVENT", "turn_role", "agent_of", "is_speaker_turn", "find_participant", "resolve_name",
    "source_key", "distinct_speakers", "check_label", "check_labels", "check_participants",
]
