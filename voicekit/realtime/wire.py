"""The client events voicekit sends, in each provider's wire form.

The OpenAI adapter and the local session build their events here, so what the local session
writes is exactly what the OpenAI adapter sends (OpenAI Realtime GA event names).
"""

from __future__ import annotations

import itertools
from typing import Any


class EventIds:
    """Client event ids, unique within a process run: ``vk-<prefix>-<n>``, ``n`` from ``start``.

    A provider error names the client event that caused it by this id.
    """

    def __init__(self, prefix: str = "e", start: int = 1) -> None:
        self._n = itertools.count(start)
        self.prefix = prefix

    def next(self) -> str:
        return f"vk-{self.prefix}-{next(self._n)}"


def session_update(event_id: str, instructions: str | None,
                   modalities: tuple[str, ...] = ("text",)) -> dict[str, Any]:
    """``session.update`` (GA): a ``realtime`` session with the given output modalities (the model
    is named in the connection URL, not here)."""
    session: dict[str, Any] = {"type": "realtime", "output_modalities": list(modalities)}
    if instructions:
        session["instructions"] = instructions
    return {"type": "session.update", "event_id": event_id, "session": session}


def item_create(event_id: str, item: dict[str, Any], item_id: str | None) -> dict[str, Any]:
    """``conversation.item.create`` with the item (and its client-chosen id)."""
    body = dict(item)
    if item_id:
        body = {"id": item_id, **body}
    return {"type": "conversation.item.create", "event_id": event_id, "item": body}


def instruction_item(text: str) -> dict[str, Any]:
    """An application instruction as an item: a ``system`` message, never labelled (A8a)."""
    return {"type": "message", "role": "system", "content": [{"type": "input_text", "text": text}]}


def response_create(event_id: str) -> dict[str, Any]:
    """``response.create``: ask for a reply (only when one is wanted and none is in flight)."""
    return {"type": "response.create", "event_id": event_id}


def item_text(item: dict[str, Any]) -> str:
    """All text parts of an item joined by a blank line (for transports with one text field)."""
    return "\n\n".join(str(p.get("text", "")) for p in item.get("content", [])
                       if isinstance(p, dict) and "text" in p)


def gemini_content(item: dict[str, Any]) -> dict[str, Any]:
    """The item as a Gemini ``Content`` dict: Gemini has only ``user`` and ``model`` roles, so an
    ``assistant`` item becomes ``model`` and every other item (``system`` included) ``user``;
    each text part stays its own part (the note stays the second part)."""
    role = "model" if item.get("role") == "assistant" else "user"
    parts = [{"text": str(p["text"])} for p in item.get("content", []) if isinstance(p, dict) and "text" in p]
    return {"role": role, "parts": parts}
