"""Per-member private views of the meeting (T12), prompt rules (T13), own-name stripping (T14).

A chat model has one ``assistant`` identity, so each member gets its own view of the same
transcript: its own lines as ``assistant``; every person's and every other member's lines as
``user``, in the attribution line format (``Label: "text"`` per line), with the attribution
runtime note (A9) on the last ``user`` message and copies of runtime marks replaced (A10) whenever
the view is labelled.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass
from typing import Iterable, Sequence

import regex

from voicekit.attribution import RUNTIME_NOTE, SpeakerLabel, label_lines, replace_mark_copies
from voicekit.turntaking.clients import ChatMessage
from voicekit.turntaking.members import Member


@dataclass(frozen=True)
class TranscriptEntry:
    """One committed line of the meeting as the members' views need it.

    Exactly one of ``member`` and ``label`` is set.

    Attributes:
        text: what was said (raw, as stored).
        member: the AI member who said it, for a member's reply.
        label: the person's attribution label, for a human turn.
    """

    text: str
    member: str | None = None
    label: SpeakerLabel | None = None

    def __post_init__(self) -> None:
        if (self.member is None) == (self.label is None):
            raise ValueError("a transcript entry has exactly one of member and label")

    @property
    def author(self) -> str:
        """The text placed before its lines: the member name or the label text."""
        return self.member if self.member is not None else self.label.text  # type: ignore[union-attr]


def prompt_rules(member: Member, others: Sequence[Member]) -> str:
    """The T13 rules appended to ``member``'s instructions, in voicekit's words."""
    if others:
        other_names = ", ".join(m.name for m in others)
        who = f"Other AI members in this meeting: {other_names}. "
        never = (
            f"Never write what {other_names} or anyone else says, does or thinks, "
            "not even a single line; they speak for themselves."
        )
    else:
        who = ""
        never = "Never write what anyone else says, does or thinks, not even a single line."
    return (
        f"You are {member.name}, one member of a meeting with people and AI members. {who}"
        f"Rules for this meeting:\n"
        f"- You speak only as {member.name}. {never}\n"
        "- When more than one person or member speaks, their lines reach you prefixed with the name "
        "of who said them, followed by their words as a JSON string (with one person only, that "
        "person's lines reach you as they said them).\n"
        f"- Start your reply directly with what you say: do not put {member.name}: or any other "
        "name in front of it."
    )


def system_prompt(member: Member, members: Sequence[Member]) -> str:
    """``member``'s instructions followed by the T13 rules (stable from turn to turn)."""
    others = [m for m in members if m.name != member.name]
    rules = prompt_rules(member, others)
    return f"{member.instructions}\n\n{rules}" if member.instructions else rules


def labels_on(member: str, transcript: Sequence[TranscriptEntry]) -> bool:
    """Whether ``member``'s view labels its ``user`` lines.

    Labels are on when, seen from that member, the window holds two or more distinct speakers
    (people by label text, other members by name; the member's own lines never count), as
    attribution A1 says, or any line of another AI member: T12 has other members read "by their
    member names", and the T13 rules tell the member that their lines arrive prefixed, so another
    member's words never pass for a person's. With one person and no other member the view is
    unlabelled (A2).
    """
    speakers = set()
    for entry in transcript:
        if entry.member == member:
            continue
        if entry.member is not None:
            return True
        speakers.add(entry.label.text)  # type: ignore[union-attr]
        if len(speakers) >= 2:
            return True
    return False


def build_view(
    member: Member, members: Sequence[Member], transcript: Sequence[TranscriptEntry]
) -> list[ChatMessage]:
    """The chat request for ``member`` over ``transcript`` (T12, T13).

    Args:
        member: whose view this is.
        members: every member of the room (for the prompt rules).
        transcript: the meeting's window, oldest first.

    Returns:
        A system message (instructions + rules), then one message per entry: ``assistant`` for
        this member's own lines (never prefixed), ``user`` for everyone else's. Another member's
        words are never ``assistant``. When :func:`labels_on`, as
        :func:`voicekit.attribution.build_chat_messages` does: every ``user`` line is labelled
        (A8; a person whose name reads alike a member's name or alias is marked
        ``(a participant)``), copies of runtime marks in every line are replaced (A10), and the runtime note
        (A9) is appended once to the last ``user`` message after a blank line (never to the
        system prompt, which stays the same from turn to turn). Otherwise the lines are raw
        (A2).
    """
    labelled = labels_on(member.name, transcript)
    reserved = [name for m in members for name in m.call_names]
    messages = [ChatMessage("system", system_prompt(member, members))]
    for entry in transcript:
        text = replace_mark_copies(entry.text) if labelled else entry.text
        if entry.member == member.name:
            messages.append(ChatMessage("assistant", text))
        elif labelled:
            # a person named like a member reads "Iris (a participant)" beside the member Iris
            author = entry.member if entry.member is not None else entry.label.text_beside(reserved)  # type: ignore[union-attr]
            messages.append(ChatMessage("user", label_lines(author, text)))
        else:
            messages.append(ChatMessage("user", text))
    if labelled:
        for i in range(len(messages) - 1, 0, -1):
            if messages[i].role == "user":
                messages[i] = ChatMessage("user", messages[i].content + "\n\n" + RUNTIME_NOTE)
                break
    return messages


def strip_own_name(reply: str, name: str, aliases: Iterable[str] = ()) -> str:
    """Remove a leading ``Name:`` that is the member's own name or one of its aliases (T14).

    The name matches case-insensitively after NFC, with any run of whitespace between its words
    (``Mei  Ling:``), optionally wrapped in markdown emphasis (``**Elena:**``), followed by ``:``
    or a full-width ``：``. When what remains is exactly one JSON string (the model mirrored the
    attribution format, ``Elena: "Hi"``), it is unquoted; when every line mirrors it
    (``Elena: "one"`` / ``Elena: "two"``, as labelled lines arrive), each line is unquoted and
    the lines are kept. A prefix repeated (``Elena: Elena: hi``) is removed each time. Replies
    that do not open with the own name are returned unchanged; another member's name is never
    stripped.
    """
    text = unicodedata.normalize("NFC", reply)
    for own in (name, *aliases):
        words = unicodedata.normalize("NFC", own.strip()).split()
        pattern = regex.compile(
            r"^[\ufeff\u200b\u200c\u200d\u2060\s]*(?:\*\*|__|\*|_)?"
            + r"\s+".join(regex.escape(w) for w in words)
            + r"(?:\*\*|__|\*|_)?\s*[:：](?:\*\*|__|\*|_)?[ \t]*",
            regex.V1 | regex.IGNORECASE,
        )
        match = pattern.match(text)
        if match is not None:
            break
    else:
        return reply
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) > 1:
        quoted = [_json_string(line[m.end():].strip()) if (m := pattern.match(line)) else None for line in lines]
        if all(q is not None for q in quoted):
            return "\n".join(quoted)  # type: ignore[arg-type]
    rest = text[match.end() :].lstrip()
    while (again := pattern.match(rest)) is not None:   # "Elena: Elena: hi" still opened with it
        rest = rest[again.end() :].lstrip()
    unquoted = _json_string(rest)
    return unquoted if unquoted is not None else rest


def _json_string(text: str) -> str | None:
    """``text`` decoded when it is exactly one JSON string, else None."""
    if len(text) < 2 or not (text.startswith('"') and text.endswith('"')):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, str) else None
