"""T4 director: an optional small model call that picks who answers an ambiguous message.

The director is any callable ``DirectorRequest -> str`` returning the model's raw output; the
ladder enforces the hard timeout, measures latency, and parses the output defensively (T7) with
:func:`parse_director_output`. :class:`ModelDirector` is the standard implementation over a
:class:`~voicekit.turntaking.clients.ModelClient`.

Two members are keyed ``A`` and ``B`` and answer ``{"responder": "A"|"B", "chime_in": bool}``
(30 output tokens). More members are keyed ``A``, ``B``, ``C``… and answer
``{"scores": {"A": 0.0-1.0, …}, "chime_in": bool}`` (12 tokens plus 8 per member).
"""

from __future__ import annotations

import json
import math
import string
from dataclasses import dataclass
from typing import Callable, Sequence

from voicekit.attribution import label_lines, replace_mark_copies
from voicekit.turntaking.clients import ChatMessage, ModelClient
from voicekit.turntaking.members import Member

DEFAULT_TIMEOUT_S = 5.0
"""The contract's hard director timeout, in seconds."""


def member_keys(n: int) -> tuple[str, ...]:
    """Keys for ``n`` members: ``A``, ``B``, … ``Z``, ``AA``, ``AB``…

    Raises:
        ValueError: if ``n`` is negative.
    """
    if n < 0:
        raise ValueError(f"member count must be >= 0, got {n}")
    keys = []
    for i in range(n):
        name, k = "", i
        while True:
            name = string.ascii_uppercase[k % 26] + name
            k = k // 26 - 1
            if k < 0:
                break
        keys.append(name)
    return tuple(keys)


def output_budget(n_members: int) -> int:
    """Output token budget for a director call over ``n_members`` candidates.

    30 for two members (the ``responder`` form), ``12 + 8 * n`` for more (the ``scores`` form).
    """
    return 30 if n_members <= 2 else 12 + 8 * n_members


@dataclass(frozen=True)
class DirectorRequest:
    """What the director is asked about one human message.

    Attributes:
        text: the message.
        speaker: the speaker's attribution label text as the members' views show it
            (``"Alice (2)"``, ``"@mic"``, ``"Iris (a participant)"`` for a person named like a
            member: ``SpeakerLabel.text_beside``), or None.
        candidates: the members that may answer, in configured order (two or more).
        keys: the key of each candidate, same order (``("A", "B")``).
        last_member: the name of the member who spoke most recently, or None.
        timeout_s: the hard timeout the ladder enforces, in seconds (pass it to the client so
            its own call ends too).
    """

    text: str
    speaker: str | None
    candidates: tuple[Member, ...]
    keys: tuple[str, ...]
    last_member: str | None
    timeout_s: float = DEFAULT_TIMEOUT_S

    def key_of(self, name: str) -> str | None:
        """The key of the candidate named ``name``, or None."""
        for key, member in zip(self.keys, self.candidates):
            if member.name == name:
                return key
        return None


Director = Callable[[DirectorRequest], str]
"""A pluggable director: takes the request, returns the model's raw output text. May raise."""


@dataclass(frozen=True)
class DirectorVerdict:
    """A parsed director answer.

    Attributes:
        ranking: candidate keys, best first: one key for the ``responder`` form; for the
            ``scores`` form, every scored key by descending score (ties keep key order).
        chime_in: True only when the output held a real JSON ``true``.
    """

    ranking: tuple[str, ...]
    chime_in: bool

    @property
    def responder(self) -> str:
        """The key of the member who answers."""
        return self.ranking[0]


def first_json_object(raw: str) -> dict | None:
    """The first ``{...}`` object in ``raw``, or None when it does not decode as one (T7).

    Prose and code fences before the object and any text after it are ignored. Only the first
    ``{`` is tried: a malformed object is no decision, never a later or nested object that
    happens to decode (``{"responder": "A", "chime_in": maybe, "alt": {"responder": "B"}}`` and
    ``I pick {A}. {"responder": "B"}`` both give None).
    """
    start = raw.find("{")
    if start == -1:
        return None
    try:
        obj, _ = json.JSONDecoder().raw_decode(raw, start)
    except (ValueError, RecursionError):  # RecursionError: about 1,000 nested brackets
        return None
    return obj if isinstance(obj, dict) else None


def _is_score(value: object) -> bool:
    """A real number in [0, 1]: not a bool, not NaN, and no integer too large for a float (JSON
    allows ``1000…0`` with hundreds of digits; converting it raises OverflowError)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value in (0, 1)
    return isinstance(value, float) and math.isfinite(value) and 0.0 <= value <= 1.0


def parse_director_output(raw: str | None, keys: Sequence[str]) -> DirectorVerdict | None:
    """Parse a director's output defensively (T7).

    Takes the first ``{...}`` object. With two keys the object must hold ``"responder"`` equal to
    one of ``keys`` (exactly, as a string); with more it must hold ``"scores"``, a mapping whose
    keys are all in ``keys`` and whose values are numbers in [0, 1] (at least one). ``chime_in``,
    when present, must be a real JSON boolean: ``"true"``, ``1`` or ``null`` reject the answer
    (T7: "accept chime-in only on a real boolean; anything else → no decision"); absent, it is
    False.

    Returns:
        The verdict, or None when the output gives no valid decision (the ladder then falls to
        T5). Never raises.
    """
    if not raw or not keys:
        return None
    obj = first_json_object(raw)
    if obj is None:
        return None
    chime = obj.get("chime_in", False)
    if not isinstance(chime, bool):
        return None
    if len(keys) <= 2:
        responder = obj.get("responder")
        if not isinstance(responder, str) or responder not in keys:
            return None
        return DirectorVerdict(ranking=(responder,), chime_in=chime)
    scores = obj.get("scores")
    if not isinstance(scores, dict) or not scores:
        return None
    if any(k not in keys or not _is_score(v) for k, v in scores.items()):
        return None
    order = {k: i for i, k in enumerate(keys)}
    ranking = tuple(sorted(scores, key=lambda k: (-float(scores[k]), order[k])))
    return DirectorVerdict(ranking=ranking, chime_in=chime)


def _persona(member: Member, limit: int = 200) -> str:
    text = " ".join(member.instructions.split())
    if not text:
        return member.name
    return text if len(text) <= limit else text[: limit - 1] + "…"


def director_messages(request: DirectorRequest) -> list[ChatMessage]:
    """The chat request the standard director sends for ``request``.

    The system message says what to do and fixes the output to one JSON object; the user message
    lists the keyed members, who spoke last, and the message in the attribution line format
    (copies of the runtime's marks in it replaced, A10).
    """
    n = len(request.candidates)
    lines = [f"{key}: {m.name}: {_persona(m)}" for key, m in zip(request.keys, request.candidates)]
    last_key = request.key_of(request.last_member) if request.last_member else None
    if last_key is not None:
        last = f"{last_key} ({request.last_member})"
    elif request.last_member:
        last = f"{request.last_member} (not a candidate)"
    else:
        last = "no member yet"
    speaker = request.speaker or "Someone"
    said = label_lines(speaker, replace_mark_copies(request.text)) if request.text else f'{speaker}: ""'
    key_list = ", ".join(request.keys)
    if n <= 2:
        shape = (
            '{"responder": "A" or "B", "chime_in": true or false}. '
            "responder is the member this message is mainly for. chime_in is true when the "
            "other member would naturally react too, unasked; that is about one message in "
            "three, so it is false most of the time."
        )
    else:
        shape = (
            '{"scores": {' + ", ".join(f'"{k}": 0.0-1.0' for k in request.keys) + '}, '
            '"chime_in": true or false}. Each score says how much the message is for that '
            "member (1.0 clearly theirs, 0.0 not at all). The highest score answers; chime_in "
            "true lets the second highest react too, which fits about one message in three, "
            "so it is false most of the time."
        )
    system = (
        "You decide which AI member of a meeting answers a message. "
        f"Members are keyed {key_list}. Reply with exactly one JSON object and nothing else."
    )
    user = (
        "Members:\n" + "\n".join(lines) + f"\n\nMember who spoke last: {last}.\n\n"
        f"Message:\n{said}\n\nAnswer with {shape}"
    )
    return [ChatMessage("system", system), ChatMessage("user", user)]


class ModelDirector:
    """The standard director: one small chat call at temperature 0.

    Args:
        client: the model client (a small, fast model is enough).
        temperature: sampling temperature (default 0.0, per T4).

    Calling it returns the raw output text; errors of the client (timeout, provider down)
    propagate to the ladder, which records them and falls to T5.
    """

    def __init__(self, client: ModelClient, *, temperature: float = 0.0) -> None:
        self.client = client
        self.temperature = temperature

    def __call__(self, request: DirectorRequest) -> str:
        """Ask the model about ``request``; return its raw output.

        Raises:
            ModelClientError: whatever the client raises.
        """
        return self.client.complete(
            director_messages(request),
            max_tokens=output_budget(len(request.candidates)),
            temperature=self.temperature,
            timeout_s=request.timeout_s,
        )
