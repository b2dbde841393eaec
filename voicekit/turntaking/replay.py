"""Run the ladder over a committed meeting: what ``voicekit replay --members … --explain`` calls.

Given the committed :class:`~voicekit.turns.SpeakerTurn` stream, each turn with its attribution
label, and the room's members, :func:`replay_room` decides every human turn and, when a client
is given, generates the members' replies (T11) so that later decisions see who spoke.
"""

from __future__ import annotations

import sys
import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping, Sequence, TextIO

from voicekit.attribution import Participant, SpeakerLabel, find_participant
from voicekit.outputs import clock
from voicekit.turns import SpeakerTurn
from voicekit.turntaking.clients import ModelClient
from voicekit.turntaking.director import Director
from voicekit.turntaking.generate import MemberReply, generate_replies
from voicekit.turntaking.ladder import Decision, TurnTaker
from voicekit.turntaking.members import AnswerOnly, Member, RoomConfig
from voicekit.turntaking.views import TranscriptEntry


@dataclass(frozen=True)
class ReplayStep:
    """One human turn of a replay and what the room did with it.

    Attributes:
        turn: the committed turn.
        label: its attribution label.
        decision: the ladder's decision.
        replies: the members' replies (empty without a client, or when nobody answers).
        shown: the label as the members see it (:meth:`TurnTaker.shown`: "Iris (a participant)"
            for a person named like the member Iris); the label's text when not given.
    """

    turn: SpeakerTurn
    label: SpeakerLabel
    decision: Decision
    replies: tuple[MemberReply, ...] = ()
    shown: str | None = None


def replay_room(
    turns: Iterable[tuple[SpeakerTurn, SpeakerLabel]],
    room: RoomConfig | TurnTaker,
    *,
    director: Director | None = None,
    client: ModelClient | Mapping[str, ModelClient] | None = None,
    window: int = 50,
    participants: Sequence[Participant] = (),
    notify: bool = True,
) -> Iterator[ReplayStep]:
    """Decide (and optionally answer) each human turn of a committed meeting, in order.

    Args:
        turns: ``(turn, label)`` pairs in meeting order.
        room: the members file's :class:`RoomConfig`, or a ready :class:`TurnTaker`.
        director: the T4 director when ``room`` is a config (ignored for a TurnTaker).
        client: the members' model client(s). Without one, the chosen responders are recorded
            as having spoken (a dry run), so T3 and the least-recent order behave as in a live
            meeting.
        window: how many transcript entries each member's view keeps (most recent).
        participants: the meeting's participant records. A turn comes from a registered
            participant (what ``answer_only(participants=[…])`` binds, T15) only when
            :func:`~voicekit.attribution.find_participant` names one by the turn's
            ``metadata["identity_id"]`` (an enrolled voice), or by its
            ``metadata["participant_id"]`` on a channel that participant is reached through
            (A5): a chat message that claims a participant's id elsewhere is not that participant.
        notify: False to keep the decisions from the TurnTaker's listeners and hooks
            (:meth:`TurnTaker.decide`): turns decided again only to rebuild the floor state.

    Yields:
        One :class:`ReplayStep` per turn.
    """
    taker = room if isinstance(room, TurnTaker) else TurnTaker(room, director=director)
    transcript: list[TranscriptEntry] = []
    for turn, label in turns:
        source = find_participant(turn, participants)
        decision = taker.decide(
            turn.text,
            label,
            participant_id=source.id if source is not None and source.registered else None,
            turn_id=turn.turn_id,
            notify=notify,
        )
        transcript.append(TranscriptEntry(text=turn.text, label=label))
        replies: tuple[MemberReply, ...] = ()
        if client is None:
            for name in decision.responders:
                taker.record_reply(name)
        elif decision.responders:
            replies = tuple(
                generate_replies(
                    decision,
                    members=taker.members,
                    transcript=transcript,
                    client=client,
                    turn_taker=taker,
                )
            )
        del transcript[:-window]
        yield ReplayStep(turn=turn, label=label, decision=decision, replies=replies, shown=taker.shown(label))


def format_step(step: ReplayStep, prefix: str = "") -> str:
    """A human-readable block for one step: the turn as its live line (``[00:00:01.6 → 00:00:03.8]
    Speaker A: text``, with the name the model sees), then its rung and the replies, indented;
    ``prefix`` (a LiveKit lane's channel) opens the first line, and the others are indented past it."""
    d = step.decision
    pad = " " * len(prefix) + " " * 4
    when = f"[{clock(step.turn.start, digits=1)} → {clock(step.turn.end, digits=1)}]"
    lines = [f"{prefix}{when} {step.shown or step.label.text}: {step.turn.text}", f"{pad}{d.explain()}"]
    for reply in step.replies:
        shown = reply.text if reply.error is None else f"(no reply: {reply.error})"
        lines.append(f"{pad}{reply.member}: {shown}")
    return "\n".join(lines)


def explain_replay(
    turns: Iterable[tuple[SpeakerTurn, SpeakerLabel]],
    room: RoomConfig | TurnTaker,
    *,
    director: Director | None = None,
    client: ModelClient | Mapping[str, ModelClient] | None = None,
    out: TextIO | None = None,
    participants: Sequence[Participant] = (),
) -> list[ReplayStep]:
    """Run :func:`replay_room`, print each step with its rung to ``out`` (default stdout), and a
    count of decisions per rung at the end. Returns the steps."""
    out = out or sys.stdout
    steps: list[ReplayStep] = []
    for step in replay_room(turns, room, director=director, client=client, participants=participants):
        steps.append(step)
        print(format_step(step), file=out)
    print(summarize_steps(steps, room.members), file=out)
    return steps


def summarize_steps(steps: Sequence[ReplayStep], members: Sequence[Member] = ()) -> str:
    """The closing line of ``--explain``: the decisions per rung, how many turns each member
    answered, and how many turns each member's speak policy refused (T15):
    ``12 turns decided: continuation=4, mention=8; answered: Iris 9, Elena 3; excluded by speak
    policy: Elena 2`` (``answered: nobody`` when no member was chosen; the last part only when
    a policy refused a turn). Given the room's ``members``, it also names each ``answer_only``
    name that no speaker of ``steps`` had (a typo, ``Dianne`` for ``Diane``, would otherwise
    silence its member without a word): ``; answer_only names nobody who spoke: Dianne (Elena);
    the speakers: Diane, Sheila``."""
    rungs = Counter(step.decision.decided_by.value for step in steps)
    answered = Counter(name for step in steps for name in step.decision.responders)
    excluded = Counter(name for step in steps for name in step.decision.excluded)
    summary = ", ".join(f"{k}={v}" for k, v in sorted(rungs.items()))
    line = (f"{len(steps)} turn{'' if len(steps) == 1 else 's'} decided: {summary or 'none'}; "
            f"answered: {_counts(answered) or 'nobody'}")
    if excluded:
        line += f"; excluded by speak policy: {_counts(excluded)}"
    spoke = list(dict.fromkeys(step.label.name.strip() for step in steps if step.label.name))
    heard = {unicodedata.normalize("NFC", s) for s in spoke}
    unheard = [f"{name} ({m.name})" for m in members if isinstance(m.speak_policy, AnswerOnly)
               for name in sorted(m.speak_policy.names) if name not in heard]
    if steps and unheard:
        line += f"; answer_only names nobody who spoke: {', '.join(unheard)}; the speakers: {', '.join(spoke) or 'none named'}"
    return line


def _counts(counter: Counter) -> str:
    """``Iris 9, Elena 3``: most first, ties in first-seen order."""
    return ", ".join(f"{name} {n}" for name, n in counter.most_common())


__all__ = ["ReplayStep", "explain_replay", "format_step", "replay_room", "summarize_steps"]
