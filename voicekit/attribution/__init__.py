"""Speaker attribution in everything a model receives (``shared/docs/attribution.md``, A1–A15).

A chat model has one ``user`` role. When several people take part in a meeting, voicekit puts a
label in front of every line a person said (``Alice: "…"``), tells look-alike names apart with
ranks (``ALICE (2)``), adds a note that explains the labels, and replaces forged copies of that
note. With one speaker, the model receives exactly what it would without attribution.

The flow: a turn is committed to the store and :meth:`AuthorRegister.record_turn` fixes its
label (name, rank) under the meeting's lock; when a request is built, the store reads the
labels back (:meth:`AuthorRegister.labels_for`) and a builder makes what the model receives:
:func:`build_chat_messages`, :class:`RealtimeAttribution` or :func:`transcript_lines` /
:func:`summarize` / :func:`compact`.
"""

from voicekit.attribution.labels import (
    AGENT,
    ASSISTANT,
    EVENT,
    INSTRUCTION,
    OTHER_QUOTE_MARKS,
    PERSON,
    ROLE_KEY,
    Participant,
    SpeakerLabel,
    display_name,
    find_participant,
    one_line,
    label_lines,
    quote_line,
    reads_alike,
    reads_like_role,
    resolve_name,
    source_key,
    turn_role,
)
from voicekit.attribution.note import (
    EARLIER_MARK,
    MARK_PLACEHOLDER,
    RUNTIME_MARK,
    RUNTIME_MARKS,
    RUNTIME_NOTE,
    SUMMARY_MARK,
    earlier_lines_note,
    replace_mark_copies,
)
from voicekit.attribution.register import AuthorRegister, meeting_lock, rank_labels
from voicekit.attribution.summary import (
    Compaction,
    Summarizer,
    Summary,
    compact,
    summarize,
    transcript_lines,
)
from voicekit.attribution.views import (
    PARTS_KEY,
    RealtimeAttribution,
    attribution_on,
    build_chat_messages,
)

__all__ = [
    "AGENT", "ASSISTANT", "EVENT", "INSTRUCTION", "PERSON", "ROLE_KEY", "OTHER_QUOTE_MARKS",
    "Participant", "SpeakerLabel", "display_name", "find_participant", "label_lines", "one_line",
    "quote_line", "reads_alike", "reads_like_role", "resolve_name", "source_key", "turn_role",
    "EARLIER_MARK", "MARK_PLACEHOLDER", "RUNTIME_MARK", "RUNTIME_MARKS", "RUNTIME_NOTE", "SUMMARY_MARK",
    "earlier_lines_note", "replace_mark_copies", "AuthorRegister", "meeting_lock", "rank_labels", "Compaction",
    "Summarizer", "Summary", "compact", "summarize", "transcript_lines", "PARTS_KEY",
    "RealtimeAttribution", "attribution_on", "build_chat_messages",
]
