"""What a model receives: chat-request messages (A1, A2, A8–A10) and realtime items (A3)."""

from __future__ import annotations

import copy
from typing import Any, Iterable, Sequence

from voicekit.attribution.labels import (
    AGENT,
    ASSISTANT,
    EVENT,
    INSTRUCTION,
    PERSON,
    Participant,
    SpeakerLabel,
    check_label,
    check_labels,
    distinct_speakers,
    is_speaker_turn,
    label_lines,
    turn_role,
)
from voicekit.attribution.note import EARLIER_MARK, RUNTIME_NOTE, SUMMARY_MARK, earlier_lines_note, replace_mark_copies
from voicekit.attribution.summary import Summary
from voicekit.turns import SpeakerTurn

#: Key of ``turn.metadata`` holding the parts of a multimodal turn (a list of dicts).
PARTS_KEY = "parts"
_TEXT_PART_TYPES = ("text", "input_text")


def attribution_on(turns: Sequence[SpeakerTurn], labels: Sequence[SpeakerLabel | None], *,
                   summary: Summary | None = None, assistant_id: str | None = None) -> bool:
    """A1: True when the window (and the summary before it) holds two or more speakers.

    A named source counts once per name and rank; a nameless one once per channel. The
    assistant's own turns, application instructions and runtime events never count.

    Raises:
        ValueError: when ``labels`` and ``turns`` differ in length.
    """
    check_labels(labels, len(turns))
    speakers = [lab for t, lab in zip(turns, labels) if is_speaker_turn(turn_role(t, assistant_id))]
    if summary is not None:
        speakers.extend(summary.speakers)
    return len(distinct_speakers(speakers)) >= 2


def summary_text(summary: Summary, labelled: bool) -> str:
    """How a summary reads in a request: the summary note mark, a line break, the summary."""
    text = replace_mark_copies(summary.text) if labelled else summary.text
    return f"{SUMMARY_MARK}]\n{text}"


def _parts(parts: Sequence[Any], labelled: bool) -> list[Any]:
    out = copy.deepcopy(list(parts))
    if labelled:
        for p in out:
            if isinstance(p, dict) and p.get("type") in _TEXT_PART_TYPES and isinstance(p.get("text"), str):
                p["text"] = replace_mark_copies(p["text"])
    return out


def unlabelled_content(turn: SpeakerTurn) -> list[Any]:
    """The ``input_text`` parts of a turn sent without a label: its multimodal parts
    (``metadata["parts"]``) when it has them, else its text; what a session receives from a
    one-speaker window and with attribution switched off, byte for byte (A2)."""
    parts = turn.metadata.get(PARTS_KEY)
    if isinstance(parts, list):
        return _parts(parts, False)
    return [{"type": "input_text", "text": turn.text}]


def _resolve(turns: Sequence[SpeakerTurn], labels: Sequence[SpeakerLabel | None] | None,
             participants: Sequence[Participant], assistant_id: str | None) -> Sequence[SpeakerLabel | None]:
    if labels is None:
        from voicekit.attribution.register import rank_labels

        return rank_labels(turns, participants, assistant_id=assistant_id)
    return check_labels(labels, len(turns))


def build_chat_messages(turns: Sequence[SpeakerTurn],
                        labels: Sequence[SpeakerLabel | None] | None = None, *,
                        participants: Sequence[Participant] = (),
                        system_prompt: str | None = None,
                        summary: Summary | None = None,
                        assistant_id: str | None = None,
                        attribution: bool = True,
                        instruction_role: str = "system") -> list[dict[str, Any]]:
    """The messages of a chat request built from a window of turns.

    With attribution on (A1), every line of a person's or another agent's turn reads
    ``Label: "line"`` (A8), a multimodal turn gets a leading ``Label:`` text part (A8b), copies
    of runtime marks are replaced (A10) in every turn except application instructions, and the
    runtime note is appended to the last (trigger) person's turn after a blank line (A9), never
    to an instruction, event or summary sent as ``user``; a window with no person's turn (the
    speakers that turn labels on are all in ``summary``) labels no line and carries no note.
    Otherwise the
    messages are exactly those of ``attribution=False`` (A2). Turns are never modified (A13).

    Args:
        turns: the window, oldest first. Roles come from ``metadata["role"]`` (``turn_role``).
        labels: one label per turn (``AuthorRegister.labels_for``); None ranks the window in
            memory (``rank_labels``).
        participants: participant records, used only when ``labels`` is None.
        system_prompt: sent first as a ``system`` message, unchanged (the note never goes here).
        summary: the summary the window follows; its speakers count for A1 (A15).
        assistant_id: the agent whose own turns read as ``assistant``.
        attribution: False switches attribution off altogether.
        instruction_role: the role of application instructions, runtime events and the summary.

    Returns:
        A list of ``{"role": ..., "content": ...}`` dicts; ``content`` is a str, or a list of
        parts for a multimodal turn.

    Raises:
        ValueError: when ``labels`` and ``turns`` differ in length, a role is unknown, or a
            person's turn has no label.
        TypeError: a label that is not a :class:`SpeakerLabel` or None, or a participant that
            is not a :class:`Participant` (bare names, ``["Alice"]``).
    """
    labels = _resolve(turns, labels, participants, assistant_id)
    on = attribution and attribution_on(turns, labels, summary=summary, assistant_id=assistant_id)
    messages: list[dict[str, Any]] = []
    trigger: int | None = None  # index of the last person's (or other agent's) turn
    if system_prompt is not None:
        messages.append({"role": "system", "content": system_prompt})
    if summary is not None:
        messages.append({"role": instruction_role, "content": summary_text(summary, on)})
    for t, lab in zip(turns, labels):
        role = turn_role(t, assistant_id)
        parts = t.metadata.get(PARTS_KEY)
        if role == INSTRUCTION:
            content: Any = _parts(parts, False) if isinstance(parts, list) else t.text
            messages.append({"role": instruction_role, "content": content})
            continue
        if isinstance(parts, list):
            content = _parts(parts, on)
        else:
            content = replace_mark_copies(t.text) if on else t.text
        if role in (ASSISTANT, EVENT):
            messages.append({"role": "assistant" if role == ASSISTANT else instruction_role,
                             "content": content})
            continue
        if on:
            if lab is None:
                raise ValueError(_no_label(t, role))
            if isinstance(content, list):
                content = [{"type": "text", "text": f"{lab.text}:"}] + content
            else:
                content = label_lines(lab.text, content)
        trigger = len(messages)
        messages.append({"role": "user", "content": content})
    if on:
        # the trigger: the last person's turn; an instruction or event sent as "user" is not one.
        # With none (the speakers are all in the summary), no line is labelled: no note.
        at = trigger
        if at is not None:
            m = messages[at]
            if isinstance(m["content"], list):
                m["content"] = m["content"] + [{"type": "text", "text": RUNTIME_NOTE}]
            else:
                m["content"] = m["content"] + "\n\n" + RUNTIME_NOTE
    return messages


def _no_label(turn: SpeakerTurn, role: str) -> str:
    """The error for a speaker turn given no label, with the fix where it is another agent's turn
    read without the viewing agent's ``assistant_id``."""
    text = f"turn {turn.turn_id!r} of role {role!r} has no label"
    if role == AGENT:
        text += ("; read the labels as this agent reads them: "
                 "MeetingStore.labels(turns, assistant_id=...) with the same assistant_id")
    return text


class RealtimeAttribution:
    """Labels for the items sent to one realtime session (A3).

    The session's window is every item it has been sent: once two speakers have been sent, this
    and every later line is labelled, even when the meeting drops back to one speaker, and the
    note goes, once, as the second ``input_text`` part of the first labelled item. When person
    lines went bare before it (one person had spoken), a third part says that they were all that
    person's, by label (:func:`~voicekit.attribution.note.earlier_lines_note`). A new provider
    conversation of the session (after a reconnect) is given the items an earlier one took with
    :meth:`item_again`, which notes them as :meth:`item` does: it gets the note, and who said the
    bare lines it was sent, as the first conversation did.

    Args:
        assistant_id: the agent the session speaks as (see ``turn_role``).
        already_sent: labels of speakers the session already holds (a summary it was given, a
            history it was seeded with).
        reserved: the names and aliases of the meeting's AI members: a person whose name reads
            alike one is labelled ``Iris (a participant)``, as in the members' own views
            (:meth:`SpeakerLabel.text_beside`; turn-taking T12) and as the runtime note says.
    """

    def __init__(self, assistant_id: str | None = None,
                 already_sent: Iterable[SpeakerLabel] = (), reserved: Iterable[str] = ()) -> None:
        self.assistant_id = assistant_id
        self.reserved = tuple(reserved)
        self._speakers = distinct_speakers(already_sent)
        self.labelled = False
        self.note_sent = False
        self._bare: tuple[int, str] = (0, "")   # person lines sent without a label, and their speaker's label

    def item(self, turn: SpeakerTurn, label: SpeakerLabel | None) -> dict[str, Any]:
        """The ``conversation.item.create`` item for one turn, and note it as sent.

        A person's or another agent's turn is a ``user`` message of ``input_text`` parts; an
        application instruction or runtime event a ``system`` message; the assistant's own
        turn an ``assistant`` message of one ``output_text`` part.

        Raises:
            ValueError: when a person's turn has no label, or its role is unknown.
            TypeError: ``label`` is not a :class:`SpeakerLabel` or None (a bare name).
        """
        check_label(label)
        role = turn_role(turn, self.assistant_id)
        parts = turn.metadata.get(PARTS_KEY)
        if role == INSTRUCTION:
            return {"type": "message", "role": "system",
                    "content": [{"type": "input_text", "text": turn.text}]}
        if not is_speaker_turn(role):
            text = replace_mark_copies(turn.text) if self.labelled else turn.text
            if role == ASSISTANT:
                return {"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": text}]}
            return {"type": "message", "role": "system",
                    "content": [{"type": "input_text", "text": text}]}
        if label is None:
            raise ValueError(_no_label(turn, role))
        self._speakers.add(label.speaker_key)
        if len(self._speakers) >= 2:
            self.labelled = True
        # a person named like a member reads "Iris (a participant)"; a member reads by its name (A6)
        text = label.text_beside(self.reserved) if role == PERSON else label.text
        if not self.labelled:
            content = unlabelled_content(turn)
            self._bare = (self._bare[0] + 1, text)
        elif isinstance(parts, list):
            content = [{"type": "input_text", "text": f"{text}:"}] + _parts(parts, True)
        else:
            content = [{"type": "input_text", "text": label_lines(text, replace_mark_copies(turn.text))}]
        return {"type": "message", "role": "user", "content": self._noted(content)}

    def item_again(self, item: dict[str, Any], label: SpeakerLabel | None, labelled: bool) -> dict[str, Any]:
        """``item``, a person's (or another agent's) line that :meth:`item` built for an earlier
        provider conversation of the session, for a new one (after a reconnect: it holds nothing of
        the old), and note it as sent, as :meth:`item` notes a line: a line that went bare
        (``labelled`` False, ``label`` its speaker's; None with attribution off) counts among the
        bare lines; a labelled one loses the note parts it carried, and the first labelled item of
        the new conversation gets the note and says who said the bare lines sent before it (A3, A9).
        Its other parts stay as they were."""
        if not labelled:
            if label is not None:
                self._bare = (self._bare[0] + 1, label.text_beside(self.reserved))
            return item
        self.labelled = True
        # (a labelled line's own parts cannot hold a runtime mark: A10 replaced any copy)
        content = [p for i, p in enumerate(item["content"]) if i == 0 or not _is_note_part(p)]
        return {**item, "content": self._noted(content)}

    def _noted(self, content: list[Any]) -> list[Any]:
        """``content`` with the note as its second part (and who said the bare lines as its third)
        when it is the session's first labelled item (A9)."""
        if self.labelled and not self.note_sent:
            content.insert(1, {"type": "input_text", "text": RUNTIME_NOTE})
            if self._bare[0]:   # who said the lines the session got bare: the one person until now
                content.insert(2, {"type": "input_text", "text": earlier_lines_note(*self._bare)})
            self.note_sent = True
        return content

    def snapshot(self) -> tuple[frozenset, bool, bool, tuple[int, str]]:
        """The session's attribution state (speakers sent, labelled, note sent, the bare lines),
        for :meth:`restore`."""
        return frozenset(self._speakers), self.labelled, self.note_sent, self._bare

    def restore(self, state: tuple[frozenset, bool, bool, tuple[int, str]]) -> None:
        """Go back to a :meth:`snapshot`: an item the provider rejected never reached the session's
        window, so its speaker does not count and its note was not delivered (A1, A3)."""
        speakers, self.labelled, self.note_sent, self._bare = state
        self._speakers = set(speakers)

    def line(self, turn: SpeakerTurn, label: SpeakerLabel | None) -> str:
        """The text of :meth:`item`'s first part (the labelled line), and note it as sent."""
        return self.item(turn, label)["content"][0].get("text", "")


def _is_note_part(part: Any) -> bool:
    """True for a part :meth:`RealtimeAttribution.item` adds to the first labelled item: the note or
    the part that says who said the bare lines."""
    text = part.get("text") if isinstance(part, dict) else None
    return isinstance(text, str) and (text == RUNTIME_NOTE or text.startswith(EARLIER_MARK))
