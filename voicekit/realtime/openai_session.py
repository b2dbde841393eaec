"""OpenAI Realtime (GA) through the official ``openai`` SDK: ``AsyncOpenAI().realtime.connect``."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
from typing import Any

from voicekit.realtime.session import (
    ProviderError,
    StreamingSession,
    SessionClosed,
    SessionEvent,
    SessionRefused,
    log,
    redact,
    refusal,
    shorten,
)
from voicekit.realtime.wire import EventIds, item_create, instruction_item, response_create, session_update

DEFAULT_MODEL = "gpt-realtime"
_ACKS = ("conversation.item.added", "conversation.item.created", "conversation.item.done")
ACTIVE_RESPONSE = "conversation_already_has_active_response"
"""The error code of a ``response.create`` refused because a response is in flight."""


class OpenAIRealtimeSession(StreamingSession):
    """A Realtime GA session.

    Args:
        model: the realtime model (default ``gpt-realtime``).
        api_key: default ``$OPENAI_API_KEY``.
        base_url: the API base (``https://…/v1``); ``websocket_base_url`` the WebSocket base
            (``ws://127.0.0.1:PORT/v1`` for a local server). Either may be None.
        instructions: the session's instructions, sent in ``session.update``.
        modalities: output modalities (default text only).
        ack_timeout: seconds to wait for the provider to acknowledge an item.

    A response is in flight (:attr:`reply_in_flight`) from ``response.create`` or
    ``response.created`` to ``response.done``: a response the server started itself (server VAD,
    after ``input_audio_buffer.append``) holds a reply request back as one asked for does. A
    ``response.create`` the server refuses because a response is in flight
    (``conversation_already_has_active_response``: its ``response.created`` was on the way) is
    deferred, not dropped: it goes after that response's ``response.done``.

    Raises:
        ValueError: no API key (neither ``api_key`` nor ``$OPENAI_API_KEY``).
    """

    name = "openai"

    def __init__(self, model: str = DEFAULT_MODEL, api_key: str | None = None, base_url: str | None = None,
                 websocket_base_url: str | None = None, instructions: str | None = None,
                 modalities: tuple[str, ...] = ("text",), ack_timeout: float = 10.0) -> None:
        super().__init__()
        self.model = model
        self._api_key = api_key or os.environ.get("OPENAI_API_KEY")
        if not self._api_key:
            raise ValueError("no OpenAI API key: set OPENAI_API_KEY")
        self.base_url = base_url
        self.websocket_base_url = websocket_base_url
        self.instructions = instructions
        self.modalities = modalities
        self.ack_timeout = ack_timeout
        self._ids = EventIds("oa")
        self._conn: Any = None
        self._manager: Any = None
        self._acks: dict[str, asyncio.Future] = {}      # item id -> future
        self._by_event: dict[str, str] = {}              # client event id -> item id
        self._reply_event: str | None = None
        self._closed = True

    @property
    def reply_owed(self) -> bool:
        """A reply was asked for and has not come (a response the server started itself is not
        owed): the request is in flight, or deferred."""
        return self._reply_event is not None or self._reply_deferred

    async def connect(self) -> None:
        from openai import AsyncOpenAI

        kw: dict[str, Any] = {"api_key": self._api_key, "max_retries": 0}
        if self.base_url:
            kw["base_url"] = self.base_url
        if self.websocket_base_url:
            kw["websocket_base_url"] = self.websocket_base_url
        client = AsyncOpenAI(**kw)
        self._manager = client.realtime.connect(model=self.model)
        try:
            self._conn = await self._manager.enter()
        except Exception as exc:  # noqa: BLE001 - any connect failure is retried, but a refusal
            closed = SessionRefused if refusal(exc) else SessionClosed
            raise closed(redact(f"cannot connect to OpenAI Realtime: {exc}", self._api_key)) from exc
        self._socket = getattr(self._conn, "_connection", None)   # (the SDK keeps it there)
        self._closed = False
        self.reply_in_flight = False
        self._reply_deferred = False
        self._events = asyncio.Queue()
        await self._send(session_update(self._ids.next(), self.instructions, self.modalities))
        self._reader = asyncio.create_task(self._read())

    async def _send(self, event: dict[str, Any]) -> None:
        if self._closed or self._conn is None:
            raise SessionClosed("the OpenAI Realtime connection is closed")
        try:
            await self._conn.send(event)
        except Exception as exc:  # noqa: BLE001 - websockets.ConnectionClosed and kin
            self._fail_all()
            raise SessionClosed(redact(f"send failed: {exc}", self._api_key)) from exc

    async def send_item(self, item: dict[str, Any], key: str) -> None:
        event_id = self._ids.next()
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._acks[key] = fut
        self._by_event[event_id] = key
        try:
            await self._send(item_create(event_id, item, key))
            await asyncio.wait_for(asyncio.shield(fut), self.ack_timeout)
        except asyncio.TimeoutError as exc:
            raise SessionClosed(f"no acknowledgement of item {key} (event {event_id}) in "
                                f"{self.ack_timeout:.0f} s") from exc
        finally:
            self._acks.pop(key, None)
            self._by_event.pop(event_id, None)
            # a send given up (the close timeout cancels it) leaves the acknowledgement to nobody:
            # settled here, so that a drop failing it later logs no "exception never retrieved"
            if not fut.done():
                fut.cancel()
            elif not fut.cancelled():
                fut.exception()

    async def send_instruction(self, text: str) -> None:
        await self._send(item_create(self._ids.next(), instruction_item(text), None))

    async def request_reply(self) -> bool:
        if self._defer_reply():
            return False
        event_id = self._ids.next()
        self.reply_in_flight = True
        self._reply_event = event_id
        await self._send(response_create(event_id))
        return True

    async def send_audio(self, pcm16: bytes, sample_rate: int = 24000) -> None:
        """Append 16-bit little-endian mono PCM to the session's input audio buffer.

        Raises:
            ValueError: when ``sample_rate`` is not 24000: the session's ``pcm16`` input format
                is 24 kHz, and audio at another rate would be heard at the wrong speed
                (resample first: ``voicekit.audio.resample``).
        """
        if sample_rate != 24000:
            raise ValueError(f"OpenAI Realtime takes pcm16 at 24000 Hz, got {sample_rate} Hz: resample it first")
        await self._send({"type": "input_audio_buffer.append", "event_id": self._ids.next(),
                          "audio": base64.b64encode(pcm16).decode("ascii")})

    async def _read(self) -> None:
        """Read the server's events until the connection goes (then put a ``closed`` event).

        Only an error from receiving itself (the socket) means the connection is gone. An event
        voicekit cannot parse or understand (not JSON, not an object, an ``error`` or ``item``
        that is not an object, …) is logged in one warning line, shortened to
        ``session.SHOWN_CHARS`` characters, and skipped: the connection stays.
        """
        try:
            while True:
                try:
                    raw = await self._conn.recv_bytes()
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - the connection is gone
                    log.warning("OpenAI Realtime connection closed: %s", redact(str(exc), self._api_key))
                    return
                reason, bug = None, False   # why the event is skipped; an error of voicekit's own
                try:
                    ev = json.loads(raw)
                except (ValueError, RecursionError):   # (UnicodeDecodeError is a ValueError)
                    reason = "not JSON"
                else:
                    try:
                        if not isinstance(ev, dict):
                            raise _Unreadable("not a JSON object")
                        await self._dispatch(ev)
                    except _Unreadable as exc:
                        reason = str(exc)
                    except Exception as exc:  # noqa: BLE001 - one bad event never ends the connection
                        reason, bug = f"{type(exc).__name__}: {exc}", True
                if reason is not None:
                    log.warning("OpenAI Realtime sent an event voicekit cannot read (%s); skipped: %s",
                                redact(reason, self._api_key), redact(shorten(raw), self._api_key),
                                exc_info=bug and log.isEnabledFor(logging.DEBUG))   # where, with --debug
        finally:
            self._closed = True
            self._fail_all()
            self._events.put_nowait(SessionEvent("closed"))

    async def _dispatch(self, ev: dict[str, Any]) -> None:
        """Handle one server event (a JSON object).

        Raises:
            _Unreadable: a field voicekit reads has the wrong shape (``error`` or ``item`` not an
                object, ``delta`` not text); the caller logs the event and skips it.
        """
        kind = ev.get("type", "")
        if kind in _ACKS:
            item = ev.get("item")
            if not isinstance(item, dict):
                raise _Unreadable("its item is not an object")
            item_id = item.get("id")
            fut = self._acks.get(item_id) if isinstance(item_id, str) else None
            if fut is not None and not fut.done():
                fut.set_result(ev.get("event_id"))
        elif kind == "error":
            err = ev.get("error")
            if not isinstance(err, dict):
                raise _Unreadable("its error is not an object")
            cause = err.get("event_id")
            cause = cause if isinstance(cause, str) else None
            deferred = cause is not None and cause == self._reply_event and err.get("code") == ACTIVE_RESPONSE
            log.log(logging.INFO if deferred else logging.ERROR,
                    "OpenAI Realtime error (event %s, client event %s, code %s): %s%s", ev.get("event_id"),
                    cause, err.get("code"), redact(str(err.get("message")), self._api_key),
                    "; the reply request goes after the response in flight" if deferred else "")
            key = self._by_event.get(cause) if cause else None
            fut = self._acks.get(key) if key else None
            if fut is not None and not fut.done():
                fut.set_exception(ProviderError(str(err.get("message")), cause, err.get("code")))
            if deferred:   # a response we had not heard of yet is in flight: its response.done sends ours
                self._reply_event, self._reply_deferred = None, True
            elif cause is not None and cause == self._reply_event:
                self._reply_event = None
                self.reply_in_flight = False
            self._events.put_nowait(SessionEvent("error", str(err.get("message")), cause, ev))
            return
        elif kind == "response.output_text.delta" or kind == "response.output_audio_transcript.delta":
            delta = ev.get("delta", "")
            if not isinstance(delta, str):
                raise _Unreadable("its delta is not text")
            self._events.put_nowait(SessionEvent("text", delta, ev.get("event_id"), ev))
            return
        elif kind == "response.created":   # ours, or one the server started itself (server VAD)
            self.reply_in_flight = True
        elif kind == "response.done":
            self._reply_event = None
            self._events.put_nowait(SessionEvent("reply_done", _response_text(ev), ev.get("event_id"), ev))
            await self._reply_done()
            return
        self._events.put_nowait(SessionEvent("other", "", ev.get("event_id"), ev))

    def _fail_all(self) -> None:
        for fut in self._acks.values():
            if not fut.done():
                fut.set_exception(SessionClosed("the connection dropped before the item was acknowledged"))

    async def close(self) -> None:
        self._closed = True
        await self._stop_reader()
        if self._conn is not None:
            try:
                await self._conn.close()
            except Exception:  # noqa: BLE001 - already gone
                pass
            self._conn = None

    def abort(self) -> None:
        self._closed = True
        super().abort()
        self._conn = None


def _response_text(ev: dict[str, Any]) -> str:
    """The text of a ``response.done``: its output's text (or transcript) parts, joined; a part
    of the wrong shape is left out (never an error: the reply is done all the same)."""
    out = []
    response = ev.get("response")
    output = response.get("output") if isinstance(response, dict) else None
    for item in output if isinstance(output, list) else []:
        content = item.get("content") if isinstance(item, dict) else None
        for part in content if isinstance(content, list) else []:
            text = (part.get("text") or part.get("transcript")) if isinstance(part, dict) else None
            if isinstance(text, str) and text:
                out.append(text)
    return "".join(out)


class _Unreadable(Exception):
    """A server event whose shape voicekit does not understand (the message says what)."""
