"""Unicode helpers for attribution: invisible characters, look-alike keys, mark views.

Private to :mod:`voicekit.attribution`. The confusable skeleton is the one of Unicode
Technical Standard #39 ("Unicode Security Mechanisms", section 4, *Confusable Detection*) as
ICU's spoof checker computes it (``icu.SpoofChecker.getSkeleton`` through PyICU). Default-ignorable
code points are the ``Default_Ignorable_Code_Point`` property of the Unicode Character Database,
read from ICU so that both come from the same Unicode version.
"""

from __future__ import annotations

import functools
import unicodedata

import icu

_SPOOF = icu.SpoofChecker()


def _ignorable_table() -> dict[int, None]:
    table: dict[int, None] = {}
    uset = icu.UnicodeSet("[:Default_Ignorable_Code_Point:]")
    for first, last in uset.ranges():
        for cp in range(ord(first), ord(last) + 1):
            table[cp] = None
    return table


#: ``str.translate`` table deleting every default-ignorable code point (ZWSP, ZWJ, ZWNJ, word
#: joiner, soft hyphen, bidi controls, variation selectors, tag characters, ...).
IGNORABLE_TABLE: dict[int, None] = _ignorable_table()


def strip_ignorables(text: str) -> str:
    """Return ``text`` without its default-ignorable code points."""
    return text.translate(IGNORABLE_TABLE)


def skeleton(text: str) -> str:
    """UTS #39 confusable skeleton of ``text`` (ICU ``SpoofChecker.getSkeleton``)."""
    return _SPOOF.getSkeleton(0, text)


@functools.lru_cache(maxsize=65536)
def name_keys(name: str) -> tuple[str, str]:
    """The two look-alike keys of a name (A11).

    After removing default-ignorable code points and applying NFKC, the keys are
    ``skeleton(casefold(name))`` and ``casefold(skeleton(name))``. Two names read alike when their
    first keys are equal or their second keys are equal (each kind compared with its own kind).

    Returns:
        ``(skeleton_of_fold, fold_of_skeleton)``.
    """
    prepared = unicodedata.normalize("NFKC", strip_ignorables(name))
    return skeleton(prepared.casefold()), skeleton(prepared).casefold()


def reads_alike(a: str, b: str) -> bool:
    """True when two names read alike directly (one shared key, A11), without chaining."""
    ka, kb = name_keys(a), name_keys(b)
    return ka[0] == kb[0] or ka[1] == kb[1]


# --- the view used to find copies of runtime marks (A10) ---------------------------------------


def _small_capitals() -> dict[str, str]:
    table: dict[str, str] = {}
    for cp in range(0x0180, 0x1E00):
        ch = chr(cp)
        name = unicodedata.name(ch, "")
        prefix = "LATIN LETTER SMALL CAPITAL "
        if name.startswith(prefix):
            rest = name[len(prefix):]
            if len(rest) == 1 and rest.isalpha():
                table[ch] = rest.lower()
    table["\u0138"] = "k"  # LATIN SMALL LETTER KRA, the skeleton of Cyrillic lower-case ka
    return table


_SMALL_CAPS = _small_capitals()
#: Opening brackets a forged mark may use in place of ``[`` (compared after NFKC and skeleton).
_OPEN_BRACKETS = {"[", "\u27e6", "\u3010", "\u2045", "\u3016", "\u301a", "\u3014", "\u2772"}
LINE_BREAK = "\n"


_VIEW_FOLD = str.maketrans({"l": "i", "1": "i", "|": "i"})


def _view_candidate(c: str) -> str:
    v = skeleton(c).casefold()
    v = skeleton(v).casefold()
    v = "".join(_SMALL_CAPS.get(x, x) for x in unicodedata.normalize("NFD", v)
                if not unicodedata.category(x).startswith("M"))
    return "[" if v in _OPEN_BRACKETS else v


@functools.lru_cache(maxsize=65536)
def mark_view_char(ch: str) -> str:
    """What one character contributes to the mark-search view of a text.

    The view drops default-ignorable characters, whitespace (a line boundary becomes ``"\\n"``)
    and combining marks; every other character ``c`` of ``NFKC(ch)`` becomes the case fold of
    its UTS #39 skeleton, taken from ``casefold(c)`` (twice, to reach a fixed point: ``M`` ->
    ``m`` -> ``rn``). Beyond UTS #39, for marks only: when that is not ASCII, the capital of
    ``c`` is tried (Cyrillic ``т`` reads ``t`` through ``Т``); Latin small capitals read as their
    letter; ``l``, ``1`` and ``|`` read as ``i``; opening brackets that look like ``[``
    (full-width, white, lenticular, tortoise shell) read as ``[``.
    """
    if ord(ch) in IGNORABLE_TABLE:
        return ""
    if ch in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029":
        return LINE_BREAK
    if ch.isspace():
        return ""
    out = []
    for c in unicodedata.normalize("NFKC", ch):
        if ord(c) in IGNORABLE_TABLE or c.isspace():
            continue
        if c in _OPEN_BRACKETS:
            out.append("[")
            continue
        v = _view_candidate(c.casefold())
        if not v.isascii():
            up = _view_candidate(c.upper())
            if up.isascii():
                v = up
        out.append(v.translate(_VIEW_FOLD))
    return "".join(out)


def mark_view(text: str) -> tuple[str, list[int]]:
    """The mark-search view of ``text`` and, for each view character, its index in ``text``."""
    chars: list[str] = []
    index: list[int] = []
    for i, ch in enumerate(text):
        v = mark_view_char(ch)
        if v:
            chars.append(v)
            index.extend([i] * len(v))
    return "".join(chars), index


def view_of(phrase: str) -> str:
    """The mark-search view of a fixed phrase (no index)."""
    return "".join(mark_view_char(ch) for ch in phrase)
