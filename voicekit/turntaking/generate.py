"""T11: generate the chosen members' replies one after another.

Each member's view (T12) is built just before its call, so the second member sees the first
member's finished reply. Never in parallel.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Mapping, MutableSequence, Sequence

from voicekit.turntaking.clients import ModelClient, ModelClientError
from voicekit.turntaking.members import Member
from voicekit.turntaking.views import TranscriptEntry, build_view, strip_own_name

if TYPE_CHECKING:
    from voicekit.turntaking.ladder import Decision, TurnTaker

log = logging.getLogger("voicekit.turntaking")


@dataclass(frozen=True)
class MemberReply:
    """One member's reply.

    Attributes:
        member: the member's name.
        text: the reply after own-name stripping (T14); "" when the call failed.
        raw: the model's text as received ("" when the call failed).
        latency_s: seconds the model call took.
        error: why the call failed (``"ModelTimeoutError: …"``), else None.
    """

    member: str
    text: str
    raw: str
    latency_s: float
    error: str | None = None


def generate_replies(
    decision: "Decision",
    *,
    members: Sequence[Member],
    transcript: MutableSequence[TranscriptEntry],
    client: ModelClient | Mapping[str, ModelClient],
    turn_taker: "TurnTaker | None" = None,
    max_tokens: int | None = None,
    temperature: float | None = None,
    timeout_s: float | None = None,
) -> Iterator[MemberReply]:
    """Generate the replies of ``decision.responders``, sequentially (T11).

    For each responder in order: build its private view of ``transcript``, call its client,
    strip its own-name prefix, append the reply to ``transcript`` (so the next responder sees it)
    and record it with ``turn_taker`` (so T3 and the least-recent order know it spoke), then yield
    it. A generator: a caller that stops iterating stops the later calls.

    Args:
        decision: the ladder's decision; nothing is generated when it has no responders.
        members: every member of the room.
        transcript: the meeting window, oldest first, ending with the human turn being
            answered; replies are appended to it.
        client: one client for all members, or a mapping from member name to client.
        turn_taker: the room's ladder, told about each reply; optional.
        max_tokens, temperature, timeout_s: passed to each call (None: client defaults).

    Yields:
        :class:`MemberReply` per responder. A failed call (any exception of the client, not only
        ``ModelClientError``), a reply that is not a ``str`` or an empty one yields a reply with
        ``error`` set and empty text, is not appended, and does not stop the next member.

    Raises:
        KeyError: if a responder is not in ``members`` or has no client in the mapping.
    """
    by_name = {m.name: m for m in members}
    for name in decision.responders:
        member = by_name[name]
        member_client = client[name] if isinstance(client, Mapping) else client
        messages = build_view(member, members, transcript)
        t0 = time.perf_counter()
        try:
            raw = member_client.complete(
                messages, max_tokens=max_tokens, temperature=temperature, timeout_s=timeout_s
            )
        except Exception as exc:   # a client of the caller's may raise anything: the next member still answers
            latency = time.perf_counter() - t0
            if isinstance(exc, ModelClientError):
                log.warning("member %s: reply failed: %s", name, exc)
            else:
                log.warning("member %s: reply failed: %s: %s (a ModelClient raises ModelClientError or "
                            "ModelTimeoutError)", name, type(exc).__name__, exc)
            yield MemberReply(name, "", "", latency, f"{type(exc).__name__}: {exc}")
            continue
        latency = time.perf_counter() - t0
        if not isinstance(raw, str):
            log.warning("member %s: the client returned %s, not the reply's text", name, type(raw).__name__)
            yield MemberReply(name, "", "", latency, f"the client returned {type(raw).__name__}, not str")
            continue
        text = strip_own_name(raw, name, member.aliases).strip()
        if not text:
            yield MemberReply(name, "", raw, latency, "empty reply")
            continue
        transcript.append(TranscriptEntry(text=text, member=name))
        if turn_taker is not None:
            turn_taker.record_reply(name)
        yield MemberReply(name, text, raw, latency)
