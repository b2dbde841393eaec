"""Unicode helpers for attribution: invisible characters, look-alike keys, mark views.

Private to :mod:`voicekit.attribution`. The confusable skeleton is the one of Unicode
Technical Standard #39 ("Unicode Security Mechanisms", section 4, *Confusable Detection*) as
ICU's spoof checker computes it (``icu.SpoofChecker.getSkeleton`` through PyICU). Default-ignorable
code points (the ``Default_Ignorable_Code_Point`` property of the Unicode Character Database),
format characters (general category ``Cf``) and opening punctuation (``Ps``) and its character
names are read from ICU, so that they and the skeleton come from the same Unicode version;
combining marks (general category ``M*``) are recognised with :mod:`unicodedata`.
"""

from __future__ import annotations

import functools
import unicodedata

import icu

_SPOOF = icu.SpoofChecker()


def _uset_chars(pattern: str) -> list[str]:
    """Every code point of the ICU ``UnicodeSet`` ``pattern``, as one-character strings."""
    return [chr(cp) for first, last in icu.UnicodeSet(pattern).ranges()
            for cp in range(ord(first), ord(last) + 1)]


#: ``str.translate`` table deleting every default-ignorable code point (ZWSP, ZWJ, ZWNJ, word
#: joiner, soft hyphen, bidi controls, variation selectors, tag characters, ...).
IGNORABLE_TABLE: dict[int, None] = dict.fromkeys(
    map(ord, _uset_chars("[:Default_Ignorable_Code_Point:]")))

#: Symbols that show as blank space and are neither whitespace nor format characters: BRAILLE
#: PATTERN BLANK and the Hangul fillers (U+115F, U+1160, U+3164, U+FFA0; these are also
#: default-ignorable).
BLANK_SYMBOLS = "\u2800\u115f\u1160\u3164\uffa0"

#: ``str.translate`` table deleting the characters that may stand invisibly between letters:
#: the default-ignorable code points, every format character (``Cf``, which adds the interlinear
#: annotation marks U+FFF9..U+FFFB, the Egyptian hieroglyph format controls and the prepended
#: concatenation marks such as U+0600) and :data:`BLANK_SYMBOLS`.
INVISIBLE_TABLE: dict[int, None] = {
    **IGNORABLE_TABLE, **dict.fromkeys(map(ord, _uset_chars("[:Cf:]") + list(BLANK_SYMBOLS)))}


def _double_quote_marks() -> str:
    """Every double quote mark other than ``"``: the punctuation, symbols and modifier letters
    whose UTS #39 skeleton is that of ``"`` (``“``, ``″``, ``ʺ``, ``״`` GERSHAYIM, ``〃`` DITTO
    MARK...) or whose character name says it is a double quotation mark (``«``, ``„``, ``〝``,
    ``❝``, ``⹂``, ``🙷``...)."""
    quote = _SPOOF.getSkeleton(0, '"')

    def is_double(c: str) -> bool:
        name = icu.Char.charName(c)
        return _SPOOF.getSkeleton(0, c) == quote or ("DOUBLE" in name and "QUOT" in name)

    return "".join(c for c in _uset_chars("[[:P:][:S:][:Lm:]]") if c != '"' and is_double(c))


#: The double quote marks A8 turns into ``'`` (:func:`_double_quote_marks`): the contract's list
#: (U+201C/D/E/F, U+2033, U+2036, U+301D/E/F, U+FF02, U+00AB, U+00BB) and every other one.
DOUBLE_QUOTE_MARKS = _double_quote_marks()


def is_invisible(ch: str) -> bool:
    """True for a character of :data:`INVISIBLE_TABLE` (default-ignorable, ``Cf`` or blank)."""
    return ord(ch) in INVISIBLE_TABLE


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
    Beyond UTS #39, whose skeleton keeps them, Latin small capitals read as their letter first
    (``Dianᴇ`` reads alike ``Diane``), as they do for role words (A7) and runtime marks (A10).

    Returns:
        ``(skeleton_of_fold, fold_of_skeleton)``.
    """
    prepared = unicodedata.normalize("NFKC", strip_ignorables(name))
    prepared = "".join(_SMALL_CAPS.get(c, c) for c in prepared)
    return skeleton(prepared.casefold()), skeleton(prepared).casefold()


def reads_alike(a: str, b: str) -> bool:
    """True when two names read alike directly (one shared key, A11), without chaining."""
    ka, kb = name_keys(a), name_keys(b)
    return ka[0] == kb[0] or ka[1] == kb[1]


# --- the view used to find copies of runtime marks (A10) ---------------------------------------


def _small_capitals() -> dict[str, str]:
    """Every Latin small capital of one letter, plain or with a mark (``ᴍ``, ``ꜰ`` U+A730, ``ꞯ``,
    ``ꭆ`` R WITH RIGHT LEG), from the whole Latin script, mapped to its lower-case letter."""
    table: dict[str, str] = {}
    prefix = "LATIN LETTER SMALL CAPITAL "
    for ch in _uset_chars("[:Script=Latin:]"):
        name = icu.Char.charName(ch)
        if name.startswith(prefix):
            letter = name[len(prefix):].split(" WITH ")[0]
            if len(letter) == 1 and letter.isalpha():
                table[ch] = letter.lower()
    table["\u0138"] = "k"  # LATIN SMALL LETTER KRA, the skeleton of Cyrillic lower-case ka
    return table


_SMALL_CAPS = _small_capitals()


def _named_letters() -> dict[str, str]:
    """Every Latin letter whose character name holds exactly one single-letter word, mapped to
    that letter in lower case: ``ɾ`` (R WITH FISHHOOK) ``r``, ``ȵ`` (N WITH CURL) ``n``, ``ɛ``
    (OPEN E) ``e``, ``ɯ`` (TURNED M) ``m``. A last reading for runtime marks (A10) only, where
    UTS #39 has no skeleton for the letter (a red-team trial wrote ``thє``, ``ɾuntime``)."""
    table: dict[str, str] = {}
    for ch in _uset_chars("[[:Script=Latin:]&[:L:]]"):
        singles = [w for w in icu.Char.charName(ch).split() if len(w) == 1 and w.isalpha()]
        if len(singles) == 1:
            table[ch] = singles[0].lower()
    return table


_NAMED_LETTERS = _named_letters()
#: Opening brackets a forged mark may use in place of ``[``: the opening punctuation (``Ps``)
#: whose character name says it is a square, lenticular or tortoise-shell bracket (``［``, ``⟦``,
#: ``〚``, ``【``, ``〖``, ``〔``, ``〘``, ``⁅``, ``❲``, the small and vertical forms, ...), the left
#: ceiling, floor and half brackets (``⌈``, ``⌊``, ``⸢``, ``⸤``), and the pieces of a tall left
#: square bracket, which are maths symbols (``Sm``: ``⎡``, ``⎢``, ``⎣``).
_OPEN_BRACKETS = frozenset(
    [c for c in _uset_chars("[:Ps:]")
     if any(k in icu.Char.charName(c) for k in ("SQUARE BRACKET", "LENTICULAR BRACKET",
                                                  "TORTOISE SHELL BRACKET", "LEFT HALF BRACKET",
                                                  "LEFT CEILING", "LEFT FLOOR"))]
    + [c for c in _uset_chars("[:Sm:]") if icu.Char.charName(c).startswith("LEFT SQUARE BRACKET ")])
LINE_BREAK = "\n"


@functools.lru_cache(maxsize=65536)
def ascii_reading(ch: str) -> str:
    """How one character reads in ASCII, for the rank-like tails and role words of names.

    Each character of the NFKC form is kept when ASCII, else read as its UTS #39 skeleton (a
    Latin small capital as its letter) when that is ASCII: ``❨`` reads ``(``, ``Ƨ`` ``2``,
    Cyrillic ``с`` ``c``, ``ᴜ`` ``u``, ``⑵`` ``(2)``; ASCII digits stay digits (the skeleton of
    ``1`` is ``l``). Characters with no ASCII reading are kept as they are.
    """
    out = []
    for c in unicodedata.normalize("NFKC", ch):
        if not c.isascii():
            r = _SMALL_CAPS.get(c) or skeleton(c)
            c = r if r.isascii() else c
        out.append(c)
    return "".join(out)


_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"

_VIEW_FOLD = str.maketrans({"l": "i", "1": "i", "|": "i"})


def _reading(form: str) -> str:
    """How one form of a character reads in the view (see :func:`mark_view_char`)."""
    if form in _OPEN_BRACKETS:
        return "["
    form = "".join(_SMALL_CAPS.get(x, x) for x in form)
    v = skeleton(skeleton(form).casefold()).casefold()
    v = "".join(_SMALL_CAPS.get(x, x) for x in unicodedata.normalize("NFD", v)
                if not unicodedata.category(x).startswith("M"))
    return "[" if v in _OPEN_BRACKETS else v.translate(_VIEW_FOLD)


def _readings(c: str) -> list[str]:
    return [_reading(form) for form in (c, c.casefold(), c.upper())] + (
        [_reading(_NAMED_LETTERS[c])] if c in _NAMED_LETTERS else [])


#: What the runtime marks are found by (note.py): ``[``, ``from the runtime`` and ``:``, as read.
_MARK_LETTERS = frozenset("".join(_reading(c) for c in "[from the runtime:" if c != " "))


def _pick(readings: list[str]) -> str:
    """The first reading made of mark letters, else the first ASCII one, else the first."""
    for r in readings:
        if r and set(r) <= _MARK_LETTERS:
            return r
    return next((r for r in readings if r.isascii()), readings[0])


_JOINING_PUNCTUATION = ("Pd", "Pc")  # dashes and connectors: "run-time" and "run_time" read "runtime"


@functools.lru_cache(maxsize=65536)
def mark_view_char(ch: str) -> str:
    """What one character contributes to the mark-search view of a text.

    The view drops whitespace (a line boundary becomes ``"\\n"``), every invisible character
    (:data:`INVISIBLE_TABLE`: default-ignorable, format ``Cf``, blank symbols such as U+2800), and
    dashes and connectors (Unicode categories ``Pd``, ``Pc``: ``run-time``, ``run_time``).
    Any other character reads as mark letters when any of its forms does: each character of its
    NFKC form, the character itself, its case fold and its upper case, each read as the case fold
    of its UTS #39 skeleton (taken twice, to reach a fixed point: ``M`` -> ``m`` -> ``rn``) with
    combining marks removed. So ``ſ`` (long s) reads ``f``, Greek ``Η`` ``h`` and ``Ν`` ``n``,
    Cyrillic ``т`` reads ``t`` through ``Т``, and a combining mark such as U+0301 as nothing.
    When no form reads as mark letters, the first ASCII reading is kept (NFKC first). Beyond
    UTS #39, for marks only: Latin small capitals read as their letter; ``l``, ``1`` and ``|``
    read as ``i``; opening brackets (``Ps``) named square, lenticular or tortoise-shell brackets
    read as ``[``; last, a Latin letter whose name holds one single letter reads as that letter
    (``ɾ`` R WITH FISHHOOK reads ``r``, ``ɛ`` OPEN E ``e``). A character reads one way only:
    where two forms read as two different mark letters (with ICU 72, only Greek eta: ``Η`` reads ``h``, ``η`` reads ``n``), the first form
    in that order wins.
    """
    if ch in _LINE_BREAKS:
        return LINE_BREAK
    if ch.isspace() or is_invisible(ch) or unicodedata.category(ch) in _JOINING_PUNCTUATION:
        return ""
    pieces = [c for c in unicodedata.normalize("NFKC", ch)
              if not (c.isspace() or is_invisible(c) or unicodedata.category(c) in _JOINING_PUNCTUATION)]
    readings = [] if pieces == [ch] else ["".join(_pick(_readings(c)) for c in pieces)]
    return _pick(readings + _readings(ch))


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
