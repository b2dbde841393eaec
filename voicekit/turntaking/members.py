"""AI members of a meeting, their speak policies (T15), and loading ``members.yaml``.

A member is one AI participant with a name it answers to and its own instructions. A speak policy
decides, from the attribution label of a human turn, whether that member may answer the turn at
all (``answer_only``).
"""

from __future__ import annotations

import difflib
import functools
import json
import math
import re
import unicodedata
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from voicekit.attribution import SpeakerLabel
from voicekit.attribution._unicode import is_invisible, strip_ignorables


class MembersError(ValueError):
    """A member list or a ``members.yaml`` file is invalid (empty name, duplicate name…)."""


@dataclass(frozen=True)
class TurnSource:
    """What a speak policy sees of one human turn.

    Attributes:
        label: the turn's attribution label (name, rank, channel), or None when the caller has
            none (then only policies that accept everyone accept the turn).
        participant_id: the registered participant the turn came from (a LiveKit identity, an
            enrolled voice id), or None when the source is not a registered participant.
    """

    label: SpeakerLabel | None = None
    participant_id: str | None = None


SpeakPolicy = Callable[[TurnSource], bool]
"""A per-member predicate: True when the member may answer this human turn."""


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


@dataclass(frozen=True)
class AnswerOnly:
    """Speak policy: answer only the listed speakers (T15). Build it with :func:`answer_only`.

    Attributes:
        names: NFC-normalised names; a turn matches when its label's name without its rank
            (``SpeakerLabel.name``, the name the speaker gave), NFC-normalised, equals one of
            them exactly (case, script and invisible characters matter: ``"Alice"`` never
            matches ``ALICE (2)``, a Cyrillic ``Аlice``, ``Alice`` followed by a zero-width
            space, or ``@Alice``, although the last two are shown as ``Alice (2)``).
        participants: registered participant ids; a turn matches when it came from one of them.
    """

    names: frozenset[str] = frozenset()
    participants: frozenset[str] = frozenset()

    def __call__(self, source: TurnSource) -> bool:
        """Return True when ``source`` is one of the listed names or participants."""
        if self.participants and source.participant_id is not None:
            if source.participant_id in self.participants:
                return True
        label = source.label
        if self.names and label is not None and label.name is not None:
            # the name as given, not as shown: display_name drops invisible characters and "@",
            # which would let "Alice\u200b" (shown "Alice (2)") pass for Alice
            if _nfc(label.name.strip()) in self.names:
                return True
        return False


def answer_only(
    names: Iterable[str] | None = None, *, participants: Iterable[str] | None = None
) -> AnswerOnly:
    """Build a speak policy that answers only some speakers (T15).

    Args:
        names: display names; ``answer_only(["Alice"])`` answers turns labelled ``Alice`` and
            ``Alice (2)`` (a second person who gave the same name), never ``ALICE (2)`` nor a
            look-alike in another script. Compared after NFC, case-sensitively.
        participants: registered participant ids; the member answers turns from those sources
            whatever name they carry. Given with ``names``, either kind of match is enough.

    Returns:
        An :class:`AnswerOnly` policy (a callable ``TurnSource -> bool``).

    Raises:
        ValueError: if neither ``names`` nor ``participants`` lists anything, or a name is empty.
    """
    if isinstance(names, str):
        names = [names]
    if isinstance(participants, str):  # one id, not its characters
        participants = [participants]
    name_set = frozenset(_nfc(n.strip()) for n in (names or ()))
    if any(not n for n in name_set):
        raise ValueError("answer_only: empty name")
    part_set = frozenset(str(p) for p in (participants or ()))
    if not name_set and not part_set:
        raise ValueError("answer_only needs at least one name or participant")
    return AnswerOnly(names=name_set, participants=part_set)


class Floor(str, Enum):
    """When a member answers a human turn: the room's policy, or one member's.

    ``ALWAYS``: the full ladder T1–T5; some member answers every human turn (T9).
    ``WHEN_ADDRESSED``: T10 silence; only T1 and T2 run, nobody answers otherwise. Set on one
    member (``Member.floor``), that member answers only when it is named or the room is
    addressed, and the others keep the room's floor.
    """

    ALWAYS = "always"
    WHEN_ADDRESSED = "when_addressed"


@dataclass(frozen=True)
class Member:
    """One AI member of the meeting.

    Attributes:
        name: the name it answers to and is shown under (``"Iris"``); unique in a room,
            compared case-insensitively after NFC.
        instructions: its own instructions (persona, task); voicekit appends the prompt rules
            of T13 when it builds the member's view.
        aliases: other names it answers to when mentioned (``"Dr. Park"``); matched like ``name``.
        speak_policy: who it may answer (T15); None answers everyone.
        floor: this member's own floor (:class:`Floor`, or its value ``"when_addressed"``);
            None (the default) takes the room's. ``WHEN_ADDRESSED``: the member answers only a
            turn that names it or addresses the room (T1, T2, as T10 for the whole room), and
            a short turn right after it spoke (T3's continuation) gets no answer at all
            rather than one from another member. ``ALWAYS`` in a ``when_addressed`` room: the
            member answers open turns (T3–T5) while the others wait to be named.

    Raises:
        MembersError: (a ValueError) ``floor`` is not one of :class:`Floor`'s values.
    """

    name: str
    instructions: str = ""
    aliases: tuple[str, ...] = ()
    speak_policy: SpeakPolicy | None = field(default=None, compare=False)
    floor: Floor | None = None

    def __post_init__(self) -> None:
        if isinstance(self.aliases, str):  # Member("Iris", aliases="Doc"): one alias, not "D", "o", "c"
            object.__setattr__(self, "aliases", (self.aliases,))
        else:
            object.__setattr__(self, "aliases", tuple(self.aliases))
        if self.floor is not None:
            object.__setattr__(self, "floor", _floor(self.floor, f"member {self.name!r}: floor"))

    @property
    def call_names(self) -> tuple[str, ...]:
        """The name followed by the aliases: every string a mention can use."""
        return (self.name, *self.aliases)

    def accepts(self, source: TurnSource) -> bool:
        """True when this member may answer a turn from ``source`` (no policy: always)."""
        return True if self.speak_policy is None else bool(self.speak_policy(source))


@dataclass(frozen=True)
class RoomConfig:
    """What ``members.yaml`` describes: the members and the room's floor settings.

    Attributes:
        members: the members in their configured order (the order T5 uses for members that
            never spoke).
        floor: the room policy (:class:`Floor`), for each member that sets none of its own.
        continuation_max_chars: T3 threshold in characters (default 25).
        continuation_max_words: T3 threshold in words (default 3; ICU word segmentation).
        director_timeout_s: T4 hard timeout in seconds (default 5.0).
        room_phrases / room_vocatives / room_exclusions: word sequences added to the English
            defaults of T2's room address (``room: {phrases, vocatives, exclusions}`` in
            members.yaml: ``hallo zusammen``, ``à tous``, ``大家``).
    """

    members: tuple[Member, ...]
    floor: Floor = Floor.ALWAYS
    continuation_max_chars: int = 25
    continuation_max_words: int = 3
    director_timeout_s: float = 5.0
    room_phrases: tuple[str, ...] = ()
    room_vocatives: tuple[str, ...] = ()
    room_exclusions: tuple[str, ...] = ()


MAX_DIRECTOR_TIMEOUT_S = 600.0
"""Longest director timeout accepted (seconds; T4). A director slower than this has missed the
turn anyway, and a wait past ``threading.TIMEOUT_MAX`` would raise instead of timing out."""

#: Turkish dotted capital I: its full case fold is two characters (``i`` and a combining dot), so a
#: case-insensitive search never matched ``İris`` (how Turkish writes Iris) to ``Iris``.
_DOTTED_I = {0x130: "I"}


def name_form(text: str) -> str:
    """A text as names are searched in it (T6): default-ignorable characters (zero-width spaces,
    soft hyphens) removed, NFKC (``Ｉｒｉｓ`` is ``Iris``), ``İ`` read as ``I``."""
    if text.isascii():   # none of that changes ASCII (every message is read so: keep it cheap)
        return text
    return unicodedata.normalize("NFKC", strip_ignorables(text)).translate(_DOTTED_I)


def _call_key(name: str) -> str:
    """What makes two call names one for a mention (T6): :func:`name_form`, case folded, a
    closing period left out (``Dr. Park`` is called ``Dr Park``, ``Jr.`` ``Jr``)."""
    return " ".join(w.rstrip(".") if len(w) > 1 else w for w in name_form(name).casefold().split())


# punctuation that a transcript never holds inside a spoken name (a name word may end in "." as in
# "Dr. Park", and hold ' or - as in "O'Neil", "Jean-Luc")
_UNSAID = frozenset(',;:!?()[]{}<>"“”«»')
_RANK = re.compile(r"\(\d+\)\s*$")   # attribution's rank of a second person of a name, "Iris (2)"


def _floor(value: Any, where: str) -> Floor:
    """``value`` as a :class:`Floor`; :class:`MembersError` (a ValueError) naming the values."""
    try:
        return Floor(value if isinstance(value, Floor) else str(value))
    except ValueError:
        raise MembersError(f"{where}: unknown floor {value!r} (always | when_addressed)") from None


def validate_members(members: Sequence[Member]) -> tuple[Member, ...]:
    """Check a member list and return it as a tuple.

    Raises:
        TypeError: an entry that is not a :class:`Member`.
        MembersError: if the list is empty, a name or alias is blank, two members share a name
            or alias (case-insensitive, after NFC, as mentions match: T6), two members' names
            read alike (attribution A11's look-alike keys: case, NFKC, confusables, so ``Iris``
            and ``Іris`` with a Cyrillic І; the views show a member by its name), or a member's
            name could pass for something attribution writes: a role a model knows (``User``,
            ``Assistant``…, attribution A7), a channel label (a leading ``@``, A6) or a
            diarization label (``Speaker B`` in any case or look-alike spelling, ``SPEAKER_01``:
            :func:`voicekit.turns.label_read_in`), or a name or alias holding punctuation that
            speech-to-text does not write inside a name (``Scribe (AI)``, ``Scribe,``: a mention
            must say the whole of it, so it would never be named).
    """
    from voicekit.attribution import display_name, reads_alike, reads_like_role
    from voicekit.turns import label_read_in

    if not members:
        raise MembersError("a room needs at least one member")
    for m in members:
        if not isinstance(m, Member):
            raise TypeError(f"a member is a voicekit.turntaking.Member (Member('Iris', instructions=…)), "
                            f"not {type(m).__name__} {m!r}")
    seen: list[tuple[str, int]] = []   # (a call name, the index of its member)
    for i, m in enumerate(members):
        for n in m.call_names:   # first: "Scribe: AI" is refused for its colon, not as a role
            unsaid = sorted(set(n) & _UNSAID)
            if unsaid and not _RANK.search(n):   # "Iris (2)" is refused below, as a rank
                what = "name" if n == m.name else f"alias {n!r}"
                plain = " ".join(re.sub(f"[{re.escape(''.join(_UNSAID))}]", " ", n).split())
                fix = f"write {plain!r} (say what the member is in its instructions)" if plain else "use words"
                raise MembersError(f"member {m.name!r}: the {what} holds {' '.join(unsaid)}, which speech-to-text "
                                   f"does not write inside a name, and a mention must say the whole {what.split()[0]}, "
                                   f"so it would never be named: {fix}")
        if label_read_in(m.name) is not None:   # "Speaker B", "Spеaker B", "SPEAKER_01"; not "Speaker Bob"
            raise MembersError(f"member {m.name!r}: the name reads like the diarization label of a person in "
                               "the room (Speaker A, Speaker B…), which the transcript and --explain show beside "
                               "the members' names; give the member a person-like name")
        odd = [c for c in dict.fromkeys(m.name.strip()) if c not in " \t"
               and (unicodedata.category(c) in ("Zs", "Zl", "Zp", "Cc", "Cf") or is_invisible(c))]
        if odd:   # pasted from a web page: "Mei\u00a0Ling", "Iris\u00ad"
            held = ", ".join(f"U+{ord(c):04X} ({unicodedata.name(c, 'a control character').lower()})" for c in odd)
            raise MembersError(f"member {m.name!r}: the name holds {held}, which shows as a blank or not at all: "
                               "retype the name with plain spaces")
        # a run of spaces is no role
        if reads_like_role(m.name) or display_name(m.name) != _nfc(re.sub(r"[ \t]+", " ", m.name.strip())):
            raise MembersError(f"member {m.name!r}: the name reads like a role or a label that other members' "
                               "views use (User, Assistant, System, You, @channel, a rank such as '(2)'); "
                               "give the member a person-like name")
        for n in m.call_names:
            if not n or not n.strip():
                raise MembersError(f"member {m.name!r}: empty name or alias")
            for other, j in seen:
                if j == i:
                    continue
                if n == m.name and other == members[j].name and reads_alike(n.strip(), other):
                    # the views show a member by its name: two that read alike would be one label
                    same = "the same name" if _nfc(n.strip()) == _nfc(other) else "names that read alike"
                    raise MembersError(f"members #{j + 1} {other!r} and #{i + 1} {n!r} have {same}: "
                                       "give each member a name of its own")
                if _call_key(n) == _call_key(other):   # a mention (T6) would call both
                    raise MembersError(f"name {n!r} is used by both {members[j].name!r} and {m.name!r}")
            seen.append((n.strip(), i))
    return tuple(members)


def _as_str_list(value: Any, what: str) -> list[str]:
    """``value`` (one string, or a list of strings and numbers) as a list of strings.

    Raises:
        MembersError: for YAML booleans, other types, and one string holding a comma: YAML reads
            ``answer_only: Diane, Sheila`` as the one name "Diane, Sheila", which nobody has (a
            name with a comma in it is written as a list item, ``["Smith, Jo"]``).
    """
    if value is None:
        return []
    if isinstance(value, str):
        if "," in value:
            items = ", ".join(v.strip() for v in value.split(",") if v.strip())
            raise MembersError(f"{what}: {value!r} is one string, read as one name: write a list, [{items}] "
                               f"(a name that holds a comma goes in quotes in a list: [\"{value.strip()}\"])")
        return [value]
    if isinstance(value, bool) or (isinstance(value, list) and any(isinstance(v, bool) for v in value)):
        # YAML 1.1 reads yes/no/on/off/true/false unquoted as booleans: "Yes" would become "True"
        raise MembersError(f"{what}: YAML read a bare yes/no/on/off/true/false as a boolean; "
                           "quote the word (\"Yes\") to mean the word")
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    if isinstance(value, list) and (numbers := [v for v in value if isinstance(v, (int, float))]):
        # YAML reads 0042 as 34 (octal), 12:30 as 750 (base 60), 1_000 as 1000: the text is lost
        raise MembersError(f"{what}: YAML read {numbers[0]!r} as a number, which may not be the text written "
                           "(0042 reads 34, 12:30 reads 750): quote each name or id, e.g. [\"0042\"]")
    raise MembersError(f"{what} must be a string or a list of strings")


_ROOM_KEYS = ("members", "floor", "continuation", "director", "room")
_ROOM_ADDRESS_KEYS = ("phrases", "vocatives", "exclusions")
_MEMBER_KEYS = ("name", "instructions", "aliases", "answer_only", "answer_only_participants", "floor")
_CONTINUATION_KEYS = ("max_chars", "max_words")
_DIRECTOR_KEYS = ("timeout_s",)


_EXAMPLE = ("a members file is YAML (or JSON), e.g. 'members: [{name: Iris}, {name: Scribe, floor: when_addressed}]' "
            "(docs/turn-taking.md shows one with each key)")


def _check_keys(mapping: Mapping, known: Sequence[str], where: str) -> None:
    """Raise :class:`MembersError` for a key of ``mapping`` not in ``known`` (a typo would
    otherwise be ignored without a word), naming the closest known key."""
    for key in mapping:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise MembersError(f"{where}: unknown key {key!r} ({hint}known: {', '.join(known)})")


# a member's key written with its colon left out ("name Elena"), run into its value ("name:Elena")
# or written "name=Elena": YAML reads the whole line as a string, the shorthand of a member's name
_KEY_TYPO = re.compile(rf"^\s*({'|'.join(sorted(_MEMBER_KEYS, key=len, reverse=True))})(\s*[:=]\s*|\s+)(\S.*?)?\s*$",
                       re.IGNORECASE | re.DOTALL)


def _check_not_a_key_typo(text: str, where: str) -> None:
    """Raise :class:`MembersError` when a bare-string member reads as a member key with its
    colon missing (``name Elena``), or run into its value (``name:Elena``, ``name=Elena``):
    YAML made the line one string, which would become a member named "name Elena"."""
    m = _KEY_TYPO.match(text)
    if m is None or (not m.group(2).strip() and m.group(1) != m.group(1).lower()):
        return   # (a capital and a blank: a name, "Name Tag Bot"; YAML's keys are lowercase)
    key, sep, value = m.group(1).lower(), m.group(2), (m.group(3) or "").strip()
    if ":" in sep:
        what = "with no blank after its colon" if not sep[-1].isspace() else "written as one string"
    elif "=" in sep:
        what = "with '=' for its colon"
    else:
        what = "without its colon"
    raise MembersError(f"{where}: {text.strip()!r} reads as the key '{key}' {what}: write `{key}: "
                       f"{value or '…'}` (a bare `- Elena` is short for `- name: Elena`; to name a member "
                       f"{text.strip()!r}, write `- name: \"{text.strip()}\"`)")


def parse_members(data: Any) -> RoomConfig:
    """Build a :class:`RoomConfig` from parsed YAML/JSON data.

    Accepted shapes: a list of member mappings, or a mapping with ``members:`` (that list) and
    optional ``floor:`` (``always`` | ``when_addressed``), ``continuation: {max_chars,
    max_words}``, ``director: {timeout_s}`` and ``room: {phrases, vocatives, exclusions}`` (word
    sequences added to T2's English defaults). A member mapping has ``name`` (required),
    ``instructions``, ``aliases``, ``answer_only`` (names), ``answer_only_participants`` and
    ``floor`` (the member's own: ``when_addressed`` for one that waits to be named); a
    bare string is short for a mapping of its ``name`` alone (``- Iris`` is ``- name: Iris``).

    Raises:
        MembersError: on a missing or wrongly typed field, an unknown key (a typo such as
            ``instruction:``), a bare string that reads as a member key with its colon missing
            (``- name Elena``, ``- name:Elena``), an unknown floor, or bad names.
    """
    if isinstance(data, list):
        data = {"members": data}
    if not isinstance(data, Mapping):
        raise MembersError(f"members file: expected a list or a mapping with 'members'; {_EXAMPLE}")
    by_name = data.get("members", data)
    if isinstance(by_name, Mapping) and by_name and all(isinstance(v, Mapping) for v in by_name.values()) \
            and not set(by_name) & set(_ROOM_KEYS):
        # "members: {Scribe: {instructions: …}}", or the same without "members:"
        first = next(iter(by_name))
        raise MembersError(f"members file: the members are a mapping of names ({first}: …); write them as a list, "
                           f"one '- name: …' item each: members:, then '  - name: {first}' and its keys under it "
                           f"(in JSON: \"members\": [{{\"name\": \"{first}\", …}}])")
    _check_keys(data, _ROOM_KEYS, "members file")
    raw_members = data.get("members")
    if raw_members is None:
        raise MembersError(f"members file: no 'members' list; {_EXAMPLE}")
    if not isinstance(raw_members, list):
        raise MembersError(f"members file: 'members' must be a list, not {type(raw_members).__name__}; {_EXAMPLE}")
    members: list[Member] = []
    for i, raw in enumerate(raw_members):
        if isinstance(raw, str):   # "- Iris", short for "- name: Iris"
            _check_not_a_key_typo(raw, f"member #{i + 1}")
            raw = {"name": raw}
        if not isinstance(raw, Mapping):
            raise MembersError(f"member #{i + 1}: expected a mapping")
        if len(raw) == 1 and (key := next(iter(raw))) not in _MEMBER_KEYS and isinstance(key, str) \
                and not difflib.get_close_matches(key, _MEMBER_KEYS, n=1):
            # "- Iris: You are Iris, the designer." (a misspelt "nmae: Iris" is named by _check_keys)
            raise MembersError(f"member #{i + 1}: '- {key}: …' reads {key!r} as a key: write '- name: {key}' "
                               "and its keys under it, '  instructions: …'")
        name = raw.get("name")
        if isinstance(name, bool):
            word = "yes/on/true" if name else "no/off/false"
            raise MembersError(f"member #{i + 1}: YAML read the name as the boolean {name} (an unquoted {word}, "
                               f"any case): quote it, e.g. name: \"{'Yes' if name else 'No'}\"")
        if name is None:   # a misspelt 'name:' is the likelier cause than a member left unnamed
            _check_keys(raw, _MEMBER_KEYS, f"member #{i + 1}")
            raise MembersError(f"member #{i + 1}: 'name' is required")
        if not isinstance(name, str):
            raise MembersError(f"member #{i + 1}: 'name' must be text, got {name!r}: quote it, e.g. "
                               f"name: \"{name}\"")
        if not name.strip():
            raise MembersError(f"member #{i + 1}: 'name' is empty: give the member a name")
        _check_keys(raw, _MEMBER_KEYS, f"member {name.strip()!r}")
        instructions = raw.get("instructions", "") or ""
        if not isinstance(instructions, str):
            raise MembersError(f"member {name!r}: 'instructions' must be text")
        names = _as_str_list(raw.get("answer_only"), f"member {name!r}: answer_only")
        parts = _as_str_list(
            raw.get("answer_only_participants"), f"member {name!r}: answer_only_participants"
        )
        given = [key for key in ("answer_only", "answer_only_participants") if raw.get(key) is not None]
        if given and not (names or parts):
            # an empty list would leave no policy at all: the member would answer everyone
            raise MembersError(f"member {name!r}: {' and '.join(given)} lists nobody; list the names (or "
                               "participant ids) it may answer, or remove the key to let it answer everyone")
        policy = answer_only(names, participants=parts) if (names or parts) else None
        aliases = tuple(_as_str_list(raw.get("aliases"), f"member {name!r}: aliases"))
        member_floor = raw.get("floor")
        members.append(
            Member(
                name=name.strip(),
                instructions=instructions.strip(),
                aliases=tuple(a.strip() for a in aliases),
                speak_policy=policy,
                floor=None if member_floor is None else _floor(member_floor, f"member {name.strip()!r}"),
            )
        )
    floor = _floor(data.get("floor", Floor.ALWAYS.value), "members file")
    cont = _section(data, "continuation", "continuation: {max_chars: 25, max_words: 3} "
                    "({max_chars: 0, max_words: 0} turns the continuation rule T3 off)")
    director = _section(data, "director", "director: {timeout_s: 5}")
    _check_keys(cont, _CONTINUATION_KEYS, "continuation")
    _check_keys(director, _DIRECTOR_KEYS, "director")
    max_chars = _number(cont, "max_chars", 25, "continuation", "a whole number of characters")
    max_words = _number(cont, "max_words", 3, "continuation", "a whole number of words")
    timeout_s = float(_number(director, "timeout_s", 5.0, "director", "a number of seconds"))
    if min(max_chars, max_words) < 0:
        raise MembersError(f"continuation: max_chars and max_words must be 0 or more, got {max_chars} and "
                           f"{max_words}")
    if not (math.isfinite(timeout_s) and 0 <= timeout_s <= MAX_DIRECTOR_TIMEOUT_S):
        raise MembersError(f"director: timeout_s must be a number of seconds from 0 to {MAX_DIRECTOR_TIMEOUT_S:g}, "
                           f"got {timeout_s}")
    room = _section(data, "room", "room: {phrases: [hallo zusammen, à tous]}")
    _check_keys(room, _ROOM_ADDRESS_KEYS, "room")
    extra = {key: tuple(p.strip() for p in _as_str_list(room.get(key), f"room: {key}")) for key in _ROOM_ADDRESS_KEYS}
    for key, phrases in extra.items():
        if any(not p for p in phrases):
            raise MembersError(f"room: {key} holds an empty phrase")
    return RoomConfig(
        members=validate_members(members),
        floor=floor,
        continuation_max_chars=max_chars,
        continuation_max_words=max_words,
        director_timeout_s=timeout_s,
        room_phrases=extra["phrases"],
        room_vocatives=extra["vocatives"],
        room_exclusions=extra["exclusions"],
    )


def _section(data: Mapping, key: str, example: str) -> Mapping:
    """``data[key]``, a mapping; ``{}`` when the key is absent or null.

    Raises:
        MembersError: for any other value, naming the key: ``continuation: off`` or ``0`` would
            otherwise read as absent and leave the defaults on without a word.
    """
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise MembersError(f"'{key}' must be a mapping, got {value!r}: {example}")
    return value


def _number(mapping: Mapping, key: str, default: int | float, where: str, what: str) -> Any:
    """``mapping[key]`` (``default`` when absent), a YAML number: an int where ``default`` is an
    int, an int or a float where it is a float.

    Raises:
        MembersError: for a boolean (YAML's ``true`` would count as 1), a string (``"5s"``,
            ``"25"``) or, for a whole number, a fraction (``25.5`` would lose its ``.5``; ``25.0``
            is 25).
    """
    value = mapping.get(key, default)
    whole = isinstance(default, int)
    if whole and isinstance(value, float) and value.is_integer():   # 25.0 is 25
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)):
        hint = " (a YAML boolean)" if isinstance(value, bool) else ""
        if isinstance(value, str):
            hint = " (text: write the number without quotes or a unit)"
        raise MembersError(f"{where}: {key} must be {what}, 0 or more, got {value!r}{hint}")
    return value


def load_members(path: str | Path) -> RoomConfig:
    """Read a ``members.yaml`` file (see :func:`parse_members` for its shape).

    Raises:
        OSError: if the file cannot be read.
        MembersError: if it is not UTF-8 text (a byte-order mark is allowed) or its content is not
            a valid member list (YAML errors included).
    """
    import yaml  # PyYAML; imported here so the ladder itself does not need it

    kind = {".toml": "TOML", ".py": "Python", ".ini": "INI", ".cfg": "INI"}.get(Path(path).suffix.lower())
    if kind is not None:
        raise MembersError(f"{Path(path).name} is a {kind} file; {_EXAMPLE}")
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise MembersError(f"not UTF-8 text ({exc.reason} at byte {exc.start}): save it as UTF-8") from None
    json_file = Path(path).suffix.lower() == ".json"
    if json_file or text.lstrip()[:1] in ("{", "["):
        try:   # JSON's own reader: YAML refuses JSON indented with tabs and splits "\ud83c\udf38" in two
            return parse_members(json.loads(text, object_pairs_hook=_json_object))
        except json.JSONDecodeError as exc:
            if json_file:
                raise MembersError(f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg} "
                                   f"({_EXAMPLE})") from None
            # YAML's flow style ("[{name: Iris}]") is no JSON: read as YAML below
    try:
        data = yaml.load(text, Loader=_unique_key_loader())   # a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise MembersError(f"not valid YAML{where}: {problem} ({_EXAMPLE})") from None
    _check_no_key_folded(text)
    return parse_members(data)


def _json_object(pairs: list[tuple[str, Any]]) -> dict:
    """A JSON object as a dict; :class:`MembersError` for a key given twice (JSON readers keep
    the last value without a word: a second "members" would drop the first list)."""
    keys = [key for key, _ in pairs]
    twice = next((key for key in keys if keys.count(key) > 1), None)
    if twice is not None:
        raise MembersError(f"the key {twice!r} is given twice in one object, and only the last would count: "
                           "remove or merge one")
    return dict(pairs)


@functools.cache
def _unique_key_loader() -> type:
    """PyYAML's SafeLoader, refusing a mapping key given twice (it keeps the last value without a
    word: a second ``members:`` list, ``instructions:`` or ``name:`` would replace the first)."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):  # noqa: ANN001, ANN202 - PyYAML's signature
            first: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":   # "<<: *defaults"
                    continue
                key = self.construct_object(key_node, deep=deep)
                try:
                    if key in first:
                        raise MembersError(f"line {key_node.start_mark.line + 1}: the key {key!r} is given again "
                                           f"(first at line {first[key]}), and YAML would keep only the last: "
                                           "remove or merge one")
                    first[key] = key_node.start_mark.line + 1
                except TypeError:   # an unhashable key: PyYAML's own error follows
                    continue
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


def _check_no_key_folded(text: str) -> None:
    """Raise :class:`MembersError` when a line that reads as a member key with its colon missing
    (``instructions Be brief``), or a list item (``- Elena``), sits indented under another
    key's value or item: YAML folds it into that plain (unquoted) value, so ``name: Ada`` would
    become a member named "Ada instructions Be brief", and ``- Iris`` over a deeper ``- Elena``
    one member named "Iris - Elena". Instructions, and quoted or block (``|``, ``>``) values, may hold such lines: prose
    wraps at will."""
    import yaml

    stack = [yaml.compose(text, Loader=yaml.SafeLoader)]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.ScalarNode):
            if node.style is None and node.end_mark.line > node.start_mark.line:
                source = text[node.start_mark.index:node.end_mark.index].splitlines()
                for n, line in enumerate(source[1:], start=node.start_mark.line + 2):
                    if line.lstrip().startswith("- "):   # a list item indented deeper than the one above
                        raise MembersError(
                            f"line {n}: {line.strip()!r} was read as part of the value above it "
                            f"({source[0].strip()!r} became {node.value!r}): give each '- ' item of a "
                            f"list the same indent")
                    m = _KEY_TYPO.match(line)
                    if m is not None and m.group(1).islower():
                        raise MembersError(
                            f"line {n}: {line.strip()!r} was read as part of the value above it "
                            f"({source[0].strip()!r} became {node.value!r}): a key needs its colon and a "
                            f"blank, `{m.group(1)}: {(m.group(3) or '…').strip()}`")
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            # instructions are prose, wrapped over lines at will ("Be brief,\n name the speaker")
            stack.extend(v for key, value in node.value
                         for v in ((key,) if getattr(key, "value", None) == "instructions" else (key, value)))
