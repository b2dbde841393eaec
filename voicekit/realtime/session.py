"""The session interface every realtime adapter implements, and what it reports.

A session is one live conversation with a model provider. The broadcaster drives it from its
own asyncio loop: :meth:`RealtimeSession.connect`, then any number of :meth:`send_item` (a line
of the meeting, already built by :class:`voicekit.attribution.RealtimeAttribution`),
:meth:`send_instruction` (the application's own words, never labelled), :meth:`request_reply`,
and finally :meth:`close`. What the provider says comes out of :meth:`events`.

Items are given in the OpenAI Realtime shape (``{"type": "message", "role": "user", "content":
[{"type": "input_text", "text": …}, …]}``); an adapter for another provider maps them.
"""

from __future__ import annotations

import abc
import asyncio
import logging
import re
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

log = logging.getLogger("voicekit.realtime")

_SECRET_HEADERS = re.compile(r"^(\s*[<>]?\s*(?:authorization|x-goog-api-key|api-key)\s*:\s*).*$",
                             re.IGNORECASE | re.MULTILINE)
_SECRET_QUERY = re.compile(r"([?&](?:key|api_key|access_token)=)[^&\s]+", re.IGNORECASE)


class _RedactSecrets(logging.Filter):
    """Blank API keys in the websockets client's DEBUG log (it logs every handshake header and
    the request URL): an API key never reaches a log (docs/realtime.md)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = _SECRET_QUERY.sub(r"\1[redacted]", _SECRET_HEADERS.sub(r"\1[redacted]", message))
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


for _name in ("websockets.client", "websockets.server", "websockets"):
    logging.getLogger(_name).addFilter(_RedactSecrets())


class SessionClosed(Exception):
    """The connection dropped (or was closed) before the operation completed; reconnect."""


class SessionRefused(SessionClosed):
    """The provider refused the connection for good: HTTP 401 or 403 at the WebSocket handshake
    (a wrong or revoked API key, no access to the model), or a close with code 1008 (policy
    violation: Gemini Live's answer to an invalid key or model) before the session started.
    Connecting again cannot help, so the broadcaster stops (the turns stay in the store)."""


def refusal(exc: BaseException) -> str | None:
    """``"HTTP 401"``, ``"HTTP 403"`` or ``"close code 1008"`` when ``exc``, or an exception it was
    raised from, is such a refusal (:class:`SessionRefused`); None for a failure worth retrying
    (a refused TCP connection, a timeout, a server error)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        response = getattr(cur, "response", None)   # websockets' InvalidStatus, an HTTP error
        status = getattr(response, "status_code", None) or getattr(cur, "status_code", None)
        if status in (401, 403):
            return f"HTTP {status}"
        code = getattr(cur, "code", None)   # google-genai's APIError from the close frame
        if code in (401, 403):
            return f"HTTP {code}"
        if code == 1008:
            return "close code 1008"
        cur = cur.__cause__ or cur.__context__
    return None


class ProviderError(Exception):
    """The provider rejected what was sent.

    Attributes:
        event_id: the id of the client event the provider names (or None).
        code: the provider's error code (or None).
    """

    def __init__(self, message: str, event_id: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.event_id = event_id
        self.code = code


@dataclass(frozen=True)
class SessionEvent:
    """Something the provider sent, in provider-neutral form.

    Attributes:
        kind: ``"text"`` (a piece of a reply), ``"reply_done"`` (a reply finished), ``"error"``,
            ``"closed"``, or ``"other"``.
        text: reply text for ``text``/``reply_done``; the message for ``error``.
        event_id: the provider's event id, or for an error the client event it names.
        raw: the provider's event as a dict.
    """

    kind: str
    text: str = ""
    event_id: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)


class RealtimeSession(abc.ABC):
    """One live model session. All methods run on the broadcaster's event loop.

    Attributes:
        name: ``"openai"``, ``"gemini"`` or ``"local"``.
        reply_in_flight: True from a reply request until the provider says it is done.
    """

    name = "session"

    def __init__(self) -> None:
        self.reply_in_flight = False
        self._reply_deferred = False  # a request made while one was in flight, sent after it

    @property
    def reply_owed(self) -> bool:
        """A reply was asked for and has not come: in flight, or deferred behind the one in
        flight. A connection that drops then loses it (``connect`` starts clean)."""
        return self.reply_in_flight or self._reply_deferred

    def _defer_reply(self) -> bool:
        """For :meth:`request_reply`: True, and the request deferred, when a reply is in flight
        (requests made meanwhile are coalesced into one, sent by :meth:`_reply_done`)."""
        if self.reply_in_flight:
            self._reply_deferred = True
        return self.reply_in_flight

    async def _reply_done(self) -> None:
        """The provider finished the reply in flight: none is in flight now, and a request
        deferred behind it (:meth:`_defer_reply`) is sent. When the connection has dropped, the
        request stays owed (:attr:`reply_owed`: ``request_reply`` marks it in flight before it
        sends), and the broadcaster asks the next conversation for it."""
        self.reply_in_flight = False
        if self._reply_deferred:
            self._reply_deferred = False
            try:
                await self.request_reply()
            except SessionClosed:
                pass

    @abc.abstractmethod
    async def connect(self) -> None:
        """Open a new provider conversation and configure it (instructions, modalities).

        Raises:
            SessionClosed: the provider could not be reached (the broadcaster retries).
        """

    @abc.abstractmethod
    async def send_item(self, item: dict[str, Any], key: str) -> None:
        """Inject one line of the meeting as a conversation item.

        Returns once the provider accepted it (OpenAI: it acknowledged the item), so the caller
        may record it as delivered.

        Args:
            item: the item, in the OpenAI Realtime shape.
            key: a stable id for the item within this session (``vk-t<turn id>``; ``vk-x<n>``
                for a turn without an id).

        Raises:
            SessionClosed: the connection dropped; the item may not have arrived.
            ProviderError: the provider rejected the item (logged with its event id).
        """

    @abc.abstractmethod
    async def send_instruction(self, text: str) -> None:
        """Inject an instruction from the application (no label, never rewritten)."""

    @abc.abstractmethod
    async def request_reply(self) -> bool:
        """Ask the model for a reply now. Returns False (and defers the request until the
        reply in flight is done) when one is already in flight: never two at once."""

    async def send_audio(self, pcm16: bytes, sample_rate: int = 16000) -> None:
        """Stream audio (16-bit little-endian mono PCM) into the session; optional."""
        raise NotImplementedError(f"{self.name} session takes no audio")

    @abc.abstractmethod
    def events(self) -> AsyncIterator[SessionEvent]:
        """What the provider sends, until the connection closes."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Close the connection (idempotent)."""

    def abort(self) -> None:
        """Drop the connection at once, without a closing handshake (idempotent): the broadcaster
        calls it when :meth:`close` did not finish within its close timeout and grace, so that no
        socket is left open. A session without a connection has nothing to drop."""


class StreamingSession(RealtimeSession):
    """A session whose provider messages are read by a task (``_reader``) that puts
    :class:`SessionEvent` s on a queue (``_events``); :meth:`events` drains it until "closed"."""

    def __init__(self) -> None:
        super().__init__()
        self._reader: asyncio.Task | None = None
        self._events: asyncio.Queue[SessionEvent] = asyncio.Queue()
        self._socket: Any = None   # the SDK's WebSocket (a websockets connection), for abort()

    def abort(self) -> None:
        """Abort the WebSocket's transport (no close frame) and stop the reader."""
        if self._reader is not None:
            self._reader.cancel()
        transport = getattr(self._socket, "transport", None)
        if transport is not None:
            transport.abort()
        self._socket = None

    async def events(self) -> AsyncIterator[SessionEvent]:  # type: ignore[override]
        while True:
            ev = await self._events.get()
            yield ev
            if ev.kind == "closed":
                return

    async def _stop_reader(self) -> None:
        """Cancel the reader task and wait for it (idempotent)."""
        if self._reader is not None:
            self._reader.cancel()
            try:
                await self._reader
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - it is going away
                pass
            self._reader = None


SHOWN_CHARS = 200
"""How much of an unreadable server event (or of its error) a warning shows."""


def shorten(text: bytes | str, limit: int = SHOWN_CHARS) -> str:
    """``text`` for a log line: bytes decoded (undecodable ones replaced), runs of whitespace one
    space, cut to ``limit`` characters with the full length said."""
    text = text.decode("utf-8", "replace") if isinstance(text, (bytes, bytearray)) else str(text)
    text = " ".join(text.split())
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with every non-empty secret replaced by ``***``: nothing logged carries a key."""
    for s in secrets:
        if s:
            text = text.replace(s, "***")
    return text
