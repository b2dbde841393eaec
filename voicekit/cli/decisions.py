"""``--members`` / ``--explain`` of ``voicekit replay``, ``mic`` and ``livekit``: the turn-taking
ladder (docs/turn-taking.md) on every committed turn, its decisions printed or handed to the
``ON_SPEAK_DECISION`` hooks, and their count at the end of the meeting."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from voicekit.cli.common import CliError, _chain

if TYPE_CHECKING:
    from voicekit.attribution import Participant, SpeakerLabel
    from voicekit.hooks import HookRunner
    from voicekit.turns import SpeakerTurn
    from voicekit.turntaking import RoomConfig


def speak_decisions(members: "str | Path | RoomConfig", *, explain: bool = False, out: TextIO | None = None,
                    channels: bool = False, hooks: "HookRunner | None" = None,
                    participants: "Callable[[], Sequence[Participant]] | None" = None,
                    ) -> "Callable[[SpeakerTurn], None]":
    """An ``on_turn`` callback that runs the turn-taking ladder on every committed turn.

    Each turn is labelled as the store labels it (``voicekit.attribution``): the speaker's name is
    ``metadata["sender_name"]`` (a rename from ``--speaker-names`` or a hook, else the diarization
    label ``Speaker A`` that the pipeline stamps; an unnamed LiveKit participant has none and reads
    as its channel label), the channel ``turn.channel``, and the rank against look-alike names is fixed
    in an in-memory author register when the turn arrives (A11, A12). The turn and its label go
    through :func:`voicekit.turntaking.replay.replay_room` with one :class:`TurnTaker` for the
    whole meeting and no director or model (T9: T4 is skipped; the chosen members are recorded
    as having answered, so continuation and least-recent order behave as in a meeting).

    Args:
        members: a ``members.yaml`` file (see ``docs/turn-taking.md``), or the room it holds
            (:func:`voicekit.turntaking.load_members`).
        explain: print each turn with its decision and rung (``format_step``) to ``out``.
        out: where ``explain`` prints (default: stdout at call time).
        channels: open each printed block with the turn's channel (``voicekit livekit``, whose
            plain lines do: ``standup/2  [00:00:12.3 → 00:00:14.0] Speaker A: …``).
        hooks: a runner whose ``ON_SPEAK_DECISION`` hooks receive every decision.
        participants: called with each turn for the meeting's registered participants so far
            (``Pipeline.participants``: the enrolled voices matched), which keep their bare names
            in the register (A11) and are the sources ``answer_only(participants=[…])`` binds
            (T15). None: no registered participant.

    Returns:
        The callback. Its ``steps`` attribute lists the :class:`ReplayStep` of every turn so far,
        its ``summary()`` gives the count line (``3 turns decided: fallback=1, mention=2; answered: Iris 3``),
        its ``seed(turns)`` takes in a resumed meeting's stored turns first (ranks and floor
        state; nothing printed, counted or sent to hooks).

    Raises:
        CliError: when the members file cannot be read or is invalid.
    """
    import itertools
    import sqlite3
    import threading

    from voicekit.attribution import AuthorRegister, meeting_lock
    from voicekit.turntaking import MembersError, RoomConfig, TurnTaker, load_members
    from voicekit.turntaking.replay import format_step, replay_room, summarize_steps

    try:
        room = members if isinstance(members, RoomConfig) else load_members(members)
    except OSError as exc:
        raise CliError(f"--members {members}: cannot read it ({exc.strerror or exc})") from exc
    except MembersError as exc:
        raise CliError(f"--members {members}: {exc}") from exc
    taker = TurnTaker(room)
    if hooks is not None:
        taker.attach_hooks(hooks)
    conn = sqlite3.connect(":memory:", check_same_thread=False)
    AuthorRegister.ensure_schema(conn)
    register = AuthorRegister("replay")
    lock = threading.Lock()
    steps: list = []
    register_ids = itertools.count(1)  # every committed turn joins the register (A12), a person's or not

    def record(turn: "SpeakerTurn", known: tuple) -> "SpeakerLabel | None":
        # the turn as the store commits it: one without a sender_name (an unnamed LiveKit
        # participant) reads as its channel label, never as a name (A4, A6)
        with meeting_lock(conn):
            return register.record_turn(conn, next(register_ids), turn, known)

    def seed(earlier: "Sequence[SpeakerTurn]") -> None:
        """Take in a resumed meeting's stored turns (``--append``) before its first new one: they
        are ranked first, so a look-alike name reads as the store and the model read it (A11),
        and decided again in silence (no step, no print, no hook), so the floor state (who
        answered last, T3; least recent first, T2/T5) goes on from where the meeting stopped.
        The turn-taking is a deterministic dry run (no director, T9): with the same members file
        and the same known voices (``participants`` when this is called) the earlier sessions'
        decisions come out as they were."""
        with lock:
            known = tuple(participants()) if participants is not None else ()
            pairs = [(turn, label) for turn in earlier if (label := record(turn, known)) is not None]
            for _ in replay_room(pairs, taker, participants=known, notify=False):
                pass

    def on_turn(turn: "SpeakerTurn") -> None:
        with lock:
            known = tuple(participants()) if participants is not None else ()
            label = record(turn, known)
            if label is None:  # not a person's turn (an assistant reply, an instruction)
                return
            for step in replay_room([(turn, label)], taker, participants=known):
                steps.append(step)
                if explain:
                    print(format_step(step, f"{turn.channel}  " if channels else ""), file=out or sys.stdout,
                          flush=True)

    on_turn.seed = seed  # type: ignore[attr-defined]
    on_turn.steps = steps  # type: ignore[attr-defined]
    on_turn.summary = lambda: summarize_steps(steps, taker.members)  # type: ignore[attr-defined]
    return on_turn


def _check_explain(args: argparse.Namespace) -> None:
    """Raises CliError for ``--explain`` without ``--members``."""
    if args.explain and not args.members:
        raise CliError("--explain shows turn-taking decisions: give --members members.yaml too")


def _turn_taking(args: argparse.Namespace, hooks: "HookRunner",
                 participants: "Callable[[], Sequence[Participant]]",
                 channels: bool = False) -> "Callable[[SpeakerTurn], None] | None":
    """``--members`` / ``--explain`` of ``replay``, ``mic`` and ``livekit``: the
    :func:`speak_decisions` callback, or None without ``--members``. Raises CliError for
    ``--explain`` alone or a members file that cannot be used."""
    _check_explain(args)
    if not args.members:
        return None
    return speak_decisions(args.members, explain=args.explain, hooks=hooks, participants=participants,
                           channels=channels)


def _with_decisions(printed, decide, args: argparse.Namespace):  # noqa: ANN001, ANN202
    """The ``on_turn`` that prints each committed turn (``printed``, None with ``--quiet``) and
    decides who answers it (``decide``, None without ``--members``): with ``--explain`` the
    decision's line replaces the plain one."""
    if decide is None:
        return printed
    return decide if (args.explain or printed is None) else _chain(printed, decide)


def _turn_taking_summary(decide, args: argparse.Namespace, err) -> None:  # noqa: ANN001
    """The count line of the meeting's decisions at its end: on stdout after ``--explain``'s
    lines, else dimmed on stderr (the decisions went only to the hooks)."""
    if decide is None:
        return
    if args.explain:
        print(decide.summary())
        if any(step.decision.decided_by == "fallback" for step in decide.steps):
            print("(no model is called here: each `fallback` is the member that answered least recently; a live "
                  "meeting with a director model (T4) may choose another)")
    else:
        err.print(f"[dim]turn-taking: {decide.summary()} (--explain shows each)[/dim]")
