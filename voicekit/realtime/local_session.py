"""The local session (the default, no API key): writes exactly what a provider would be sent.

Every client event the OpenAI adapter would send (``session.update``,
``conversation.item.create``, ``response.create``; same builders, same event and item ids) is
written as one JSON line to a file and printed, so ``voicekit replay … --session local`` shows
what the model would receive. Nothing is answered: a reply request is written and completes at
once.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import IO, Any, AsyncIterator, Callable

from voicekit.realtime.session import RealtimeSession, SessionEvent
from voicekit.realtime.wire import EventIds, item_create, instruction_item, response_create, session_update


class LocalSession(RealtimeSession):
    """Writes the OpenAI Realtime GA client events as JSON lines.

    Args:
        path: a file to append the lines to (None: none).
        echo: where to print each line (default stdout; None: do not print).
        instructions: as in ``session.update``.
        model: the model a real session would use; kept on the object (``.model``) but not written,
            since the OpenAI adapter names it in the connection URL, not in ``session.update``.
    """

    name = "local"

    def __init__(self, path: str | Path | None = None, echo: Callable[[str], None] | None = print,
                 instructions: str | None = None, model: str | None = None) -> None:
        super().__init__()
        self.path = Path(path) if path else None
        self.echo = echo
        self.instructions = instructions
        self.model = model
        self.sent: list[dict[str, Any]] = []
        self._ids = EventIds("oa")
        self._fh: IO[str] | None = None
        self._closed = asyncio.Event()

    async def connect(self) -> None:
        if self.path is not None and self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if self.path.is_file():  # an earlier run's events (--append): number on after them,
                with self.path.open("rb") as f:  # so that an event id names one line of the file
                    self._ids = EventIds("oa", start=sum(1 for _ in f) + 1)
            self._fh = self.path.open("a", encoding="utf-8")
        self._closed = asyncio.Event()
        self._write(session_update(self._ids.next(), self.instructions, ("text",)))

    def _write(self, event: dict[str, Any]) -> None:
        line = json.dumps(event, ensure_ascii=False)
        self.sent.append(event)
        if self._fh is not None:
            self._fh.write(line + "\n")
            self._fh.flush()
        if self.echo is not None:
            self.echo(line)

    async def send_item(self, item: dict[str, Any], key: str) -> None:
        self._write(item_create(self._ids.next(), item, key))

    async def send_instruction(self, text: str) -> None:
        self._write(item_create(self._ids.next(), instruction_item(text), None))

    async def request_reply(self) -> bool:
        self._write(response_create(self._ids.next()))
        return True

    async def events(self) -> AsyncIterator[SessionEvent]:  # type: ignore[override]
        await self._closed.wait()
        yield SessionEvent("closed")

    async def close(self) -> None:
        self._closed.set()
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def stdout_echo(line: str) -> None:
    """Print a line to stdout and flush (the CLI's echo)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
