"""Summaries of long meetings (A15): labelled transcript lines, a pluggable summarizer, compaction."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from voicekit.attribution.labels import (
    ASSISTANT,
    SpeakerLabel,
    check_labels,
    distinct_speakers,
    is_speaker_turn,
    label_lines,
    turn_role,
)
from voicekit.attribution.note import replace_mark_copies
from voicekit.turns import SpeakerTurn

#: A summarizer: takes the transcript lines (one ``str`` per line, see :func:`transcript_lines`)
#: and returns the summary text. In real use, a model client.
Summarizer = Callable[[list[str]], str]

#: Label of the agent the summary is for, in a summarizer's transcript.
ASSISTANT_TAG = "[assistant]"
#: Label of the only person of a one-to-one meeting, in a summarizer's transcript.
USER_TAG = "[user]"
#: Prefix of the line that hands the summarizer the previous summary.
PREVIOUS_TAG = "[summary so far]"


@dataclass(frozen=True)
class Summary:
    """A summary of the earlier part of a meeting, stored with the speakers it covers.

    Attributes:
        text: the summary, as the summarizer wrote it.
        speakers: the labels of every speaker the summarized turns (and any earlier summary they
            folded in) hold. A1 counts them together with the window after the summary.
        through_turn_id: the store id of the last turn summarized, when known.
    """

    text: str
    speakers: tuple[SpeakerLabel, ...] = ()
    through_turn_id: int | None = None


@dataclass(frozen=True)
class Compaction:
    """What :func:`compact` returns: the new summary and the turns kept after it."""

    summary: Summary
    kept_turns: tuple[SpeakerTurn, ...]
    kept_labels: tuple[SpeakerLabel | None, ...]


def _speakers(turns: Sequence[SpeakerTurn], labels: Sequence[SpeakerLabel | None],
              assistant_id: str | None, previous: Summary | None) -> list[SpeakerLabel]:
    seen: dict[tuple[str, str, int], SpeakerLabel] = {}
    for lab in (previous.speakers if previous else ()):
        seen.setdefault(lab.speaker_key, lab)
    for t, lab in zip(turns, labels):
        if lab is not None and is_speaker_turn(turn_role(t, assistant_id)):
            seen.setdefault(lab.speaker_key, lab)
    return list(seen.values())


def transcript_lines(turns: Sequence[SpeakerTurn], labels: Sequence[SpeakerLabel | None], *,
                     assistant_id: str | None = None, previous: Summary | None = None) -> list[str]:
    """The lines a summarizer receives for ``turns`` (A15).

    With two or more speakers (counting those of ``previous``, A1): every line of a person's or
    another agent's turn reads ``Label: "line"`` (A8, mark copies replaced, A10), and every
    line of the assistant's own turns ``[assistant]: "line"``. A one-to-one meeting reads
    ``[user]: "line"`` and ``[assistant]: "line"``, each line a JSON string as A8 writes it but
    its text not otherwise rewritten (no mark copy replaced: one speaker, A2), so that a person
    who says ``[assistant] Yes, I paid it.`` cannot pass for the assistant. Application
    instructions and runtime events are left out. A previous summary comes first as ``[summary so far] text``.

    Raises:
        ValueError: when ``labels`` and ``turns`` differ in length, or a turn's role is unknown.
    """
    check_labels(labels, len(turns))
    many = len(distinct_speakers(_speakers(turns, labels, assistant_id, previous))) >= 2
    lines: list[str] = []
    if previous is not None:
        text = replace_mark_copies(previous.text) if many else previous.text
        lines.append(f"{PREVIOUS_TAG} {text}")
    for t, lab in zip(turns, labels):
        role = turn_role(t, assistant_id)
        if role == ASSISTANT:
            lines.extend(label_lines(ASSISTANT_TAG, replace_mark_copies(t.text) if many else t.text).split("\n"))
        elif is_speaker_turn(role):
            if many:
                assert lab is not None
                lines.extend(label_lines(lab.text, replace_mark_copies(t.text)).split("\n"))
            else:
                lines.extend(label_lines(USER_TAG, t.text).split("\n"))
    return lines


def summarize(turns: Sequence[SpeakerTurn], labels: Sequence[SpeakerLabel | None],
              summarizer: Summarizer, *, assistant_id: str | None = None,
              previous: Summary | None = None) -> Summary:
    """Summarize ``turns`` (after ``previous``, when given) with a pluggable summarizer.

    Args:
        turns: the turns to summarize, oldest first.
        labels: their labels (``AuthorRegister.labels_for``), one per turn.
        summarizer: called once with :func:`transcript_lines`; returns the summary text.
        assistant_id: the agent the summary is for.
        previous: an earlier summary these turns follow; its speakers carry over.

    Returns:
        The summary, with the speakers of ``previous`` and of ``turns``.

    Raises:
        ValueError: as :func:`transcript_lines`; TypeError when the summarizer returns no str.
    """
    lines = transcript_lines(turns, labels, assistant_id=assistant_id, previous=previous)
    text = summarizer(lines)
    if not isinstance(text, str):
        raise TypeError(f"summarizer returned {type(text).__name__}, expected str")
    through = next((t.turn_id for t in reversed(turns) if t.turn_id is not None),
                   previous.through_turn_id if previous else None)
    return Summary(text=text, speakers=tuple(_speakers(turns, labels, assistant_id, previous)),
                   through_turn_id=through)


def compact(turns: Sequence[SpeakerTurn], labels: Sequence[SpeakerLabel | None],
            summarizer: Summarizer, *, keep_last: int, assistant_id: str | None = None,
            previous: Summary | None = None) -> Compaction:
    """Fold all but the last ``keep_last`` turns into a summary.

    The kept turns and the summary decide attribution together afterwards (A1, A15): pass the
    summary to ``build_chat_messages(..., summary=...)``.

    Raises:
        ValueError: when ``keep_last`` is negative, or as :func:`transcript_lines`.
    """
    if keep_last < 0:
        raise ValueError(f"keep_last must be >= 0, got {keep_last}")
    check_labels(labels, len(turns))
    cut = max(0, len(turns) - keep_last)
    summary = summarize(turns[:cut], labels[:cut], summarizer, assistant_id=assistant_id,
                        previous=previous)
    return Compaction(summary=summary, kept_turns=tuple(turns[cut:]),
                      kept_labels=tuple(labels[cut:]))
