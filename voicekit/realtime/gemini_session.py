"""Gemini Live through ``google-genai``: ``genai.Client().aio.live.connect``.

Before any audio flows, lines go with ``send_client_content`` (ordered context, ``turn_complete``
false so the model waits); once audio flows, with ``send_realtime_input(text=…)``, because mixing
the two after audio has started closes the socket on some models. Gemini has only ``user`` and
``model`` roles: a ``system`` item (an application instruction) goes as ``user``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import Any

from voicekit.realtime.session import (SessionClosed, SessionEvent, SessionRefused, StreamingSession, log, redact,
                                       refusal, shorten)
from voicekit.realtime.wire import gemini_content, instruction_item, item_text

DEFAULT_MODEL = "gemini-live-2.5-flash-preview"


class GeminiLiveSession(StreamingSession):
    """A Gemini Live session.

    Args:
        model: the Live model.
        api_key: default ``$GEMINI_API_KEY``, else ``$GOOGLE_API_KEY``.
        base_url: API base URL (a local server in tests).
        instructions: the system instruction given at connect.
        modalities: response modalities (default ``TEXT``).
        http_options: extra ``HttpOptions`` fields (``async_client_args`` for a TLS context).
        ack_timeout: seconds to wait for the server to have read an item (:meth:`send_item`).

    Each connection's first event is ``other`` with ``raw`` ``{"setup_complete": {…}}``: the SDK
    reads the server's ``setupComplete`` inside ``connect()``, so it would not be seen otherwise.

    Raises:
        ValueError: no API key (neither ``api_key`` nor ``$GEMINI_API_KEY`` / ``$GOOGLE_API_KEY``).
    """

    name = "gemini"

    def __init__(self, model: str = DEFAULT_MODEL, api_key: str | None = None, base_url: str | None = None,
                 instructions: str | None = None, modalities: tuple[str, ...] = ("TEXT",),
                 http_options: dict[str, Any] | None = None, ack_timeout: float = 10.0) -> None:
        super().__init__()
        self.ack_timeout = float(ack_timeout)
        self.model = model
        self._api_key = api_key or os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
        if not self._api_key:
            raise ValueError("no Gemini API key: set GEMINI_API_KEY (or GOOGLE_API_KEY)")
        self.base_url = base_url
        self.instructions = instructions
        self.modalities = modalities
        self.http_options = dict(http_options or {})
        self.audio_started = False
        self._stack: contextlib.AsyncExitStack | None = None
        self._session: Any = None
        self._reply_text: list[str] = []

    async def connect(self) -> None:
        from google import genai
        from google.genai import types

        opts = dict(self.http_options)
        if self.base_url:
            opts["base_url"] = self.base_url
        client = genai.Client(api_key=self._api_key, http_options=types.HttpOptions(**opts) if opts else None)
        config: dict[str, Any] = {"response_modalities": list(self.modalities)}
        if self.instructions:
            config["system_instruction"] = self.instructions
        self._stack = contextlib.AsyncExitStack()
        try:
            self._session = await self._stack.enter_async_context(
                client.aio.live.connect(model=self.model, config=config))
        except Exception as exc:  # noqa: BLE001 - retried by the broadcaster
            await self._stack.aclose()
            self._stack = None
            closed = SessionRefused if refusal(exc) else SessionClosed
            raise closed(redact(f"cannot connect to Gemini Live: {exc}", self._api_key)) from exc
        self._socket = getattr(self._session, "_ws", None)   # (the SDK keeps it there)
        self.audio_started = False
        self.reply_in_flight = False
        self._reply_deferred = False
        self._events = asyncio.Queue()
        # the SDK reads the server's setupComplete inside connect(): given here, so that a session
        # log shows the session started even when no reply comes
        setup = getattr(self._session, "setup_complete", None)
        self._events.put_nowait(SessionEvent("other", "", None, {"setup_complete": setup.model_dump(
            exclude_none=True, mode="json") if setup is not None else {}}))
        self._reader = asyncio.create_task(self._read())

    @property
    def _live(self) -> Any:
        """The SDK's session; :class:`SessionClosed` once the connection went (the reader lets it
        go: a review's dropped server made a send read ``None.send_client_content``, an
        AttributeError that stopped the broadcaster)."""
        if self._session is None:
            raise SessionClosed("the Gemini Live connection is closed")
        return self._session

    async def _call(self, coro: Any) -> None:
        if self._session is None:
            coro.close()
            raise SessionClosed("the Gemini Live connection is closed")
        try:
            await coro
        except Exception as exc:  # noqa: BLE001 - ConnectionClosed and kin
            raise SessionClosed(redact(f"send failed: {exc}", self._api_key)) from exc

    async def send_item(self, item: dict[str, Any], key: str) -> None:
        """Send one item and return once the server has read it: Gemini Live acknowledges no
        content message, so a WebSocket ping follows it and its pong is waited for (a peer
        answers a ping after reading every frame before it: RFC 6455, 5.5.2-5.5.3). A review
        found the turns written to a connection the server had dropped recorded as delivered.

        Raises:
            SessionClosed: the connection is gone, or no pong came within ``ack_timeout``.
        """
        if self.audio_started:
            await self._call(self._live.send_realtime_input(text=item_text(item)))
        else:
            await self._call(self._live.send_client_content(turns=gemini_content(item), turn_complete=False))
        await self._read_by_server()

    async def _read_by_server(self) -> None:
        """Wait for the pong of a ping sent now (see :meth:`send_item`)."""
        ping = getattr(self._socket, "ping", None)
        if ping is None:   # (an SDK that keeps its socket elsewhere: sent, not confirmed)
            return
        try:
            await asyncio.wait_for(await ping(), self.ack_timeout)
        except asyncio.TimeoutError as exc:
            raise SessionClosed(f"no answer from Gemini Live within {self.ack_timeout:g} s") from exc
        except Exception as exc:  # noqa: BLE001 - ConnectionClosed and kin
            raise SessionClosed(redact(f"the connection went while an item was sent: {exc}", self._api_key)) from exc

    async def send_instruction(self, text: str) -> None:
        await self.send_item(instruction_item(text), "instruction")

    async def request_reply(self) -> bool:
        if self._defer_reply():
            return False
        if self.audio_started:
            return False  # with audio flowing, Gemini answers on its own voice activity detection
        self.reply_in_flight = True
        await self._call(self._live.send_client_content(turn_complete=True))
        return True

    async def send_audio(self, pcm16: bytes, sample_rate: int = 16000) -> None:
        from google.genai import types

        self.audio_started = True
        await self._call(self._live.send_realtime_input(
            audio=types.Blob(data=pcm16, mime_type=f"audio/pcm;rate={sample_rate}")))

    async def _read(self) -> None:
        """Read the server's messages until the connection goes (then put a ``closed`` event).

        The SDK receives and parses in one call, so an error out of it means the connection is
        gone only when it comes from the socket (a ``websockets`` ``ConnectionClosed`` or an
        ``OSError`` behind it, or the WebSocket no longer open). A message the SDK or voicekit
        cannot parse or understand (not JSON, a field of the wrong shape, nothing the SDK knows)
        was taken off the socket all the same: it is logged in one warning line, shortened, and
        skipped; the connection stays. :data:`MAX_UNREADABLE` errors in a row with no message read
        between them are taken for a connection that is gone (an error that repeats without
        reading anything would otherwise spin).
        """
        failures = 0   # receive() errors since the last message read
        try:
            while self._session is not None:
                try:
                    async for msg in self._session.receive():
                        failures = 0
                        try:
                            await self._dispatch(msg)
                        except Exception as exc:  # noqa: BLE001 - one bad message never ends the connection
                            self._skip(exc)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - the socket's errors and the SDK's parse errors
                    failures += 1
                    if _connection_gone(exc, self._session) or failures >= MAX_UNREADABLE:
                        log.warning("Gemini Live connection closed: %s", self._said(exc))
                        return
                    self._skip(exc)
                    await asyncio.sleep(0)   # let the loop run between two failed reads
        finally:
            self._session = None
            self._events.put_nowait(SessionEvent("closed"))

    def _skip(self, exc: BaseException) -> None:
        """Log a server message that could not be read (one warning line) and go on."""
        log.warning("Gemini Live sent a message voicekit cannot read (%s); skipped", self._said(exc))

    def _said(self, exc: BaseException) -> str:
        """``exc`` for a log line: one line, shortened, the API key redacted."""
        return redact(shorten(f"{type(exc).__name__}: {exc}"), self._api_key)

    async def _dispatch(self, msg: Any) -> None:
        sc = getattr(msg, "server_content", None)
        raw = msg.model_dump(exclude_none=True, mode="json")
        if sc is not None and sc.model_turn is not None:
            text = "".join(p.text for p in (sc.model_turn.parts or []) if p.text)
            if text:
                self._reply_text.append(text)
                self._events.put_nowait(SessionEvent("text", text, None, raw))
        if sc is not None and sc.turn_complete:
            self._events.put_nowait(SessionEvent("reply_done", "".join(self._reply_text), None, raw))
            self._reply_text = []
            await self._reply_done()
            return
        if sc is None:
            self._events.put_nowait(SessionEvent("other", "", None, raw))

    async def close(self) -> None:
        await self._stop_reader()
        self._session = None
        if self._stack is not None:
            try:
                await self._stack.aclose()
            except Exception:  # noqa: BLE001 - already gone
                pass
            self._stack = None

    def abort(self) -> None:
        super().abort()
        self._session = None
        self._stack = None   # (its exit would close the socket just aborted)


MAX_UNREADABLE = 20
"""Errors out of the SDK's ``receive`` in a row, with no message read between them, after which
the connection is taken for gone."""


def _connection_gone(exc: BaseException, session: Any) -> bool:
    """True when an error out of the SDK's ``receive`` means the connection is gone: the socket's
    own error (``websockets``' ``ConnectionClosed``, an ``OSError``) is behind it, or the
    WebSocket is no longer open; False for a message that could not be parsed."""
    from websockets.exceptions import ConnectionClosed

    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        if isinstance(e, (ConnectionClosed, OSError)):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    state = getattr(getattr(session, "_ws", None), "state", None)
    return state is not None and getattr(state, "name", "OPEN") != "OPEN"
