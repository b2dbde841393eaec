"""Local WebSocket servers that speak the OpenAI Realtime GA and Gemini Live protocols.

Each server runs on its own thread and event loop on 127.0.0.1 and records every client event
of every connection, so tests can assert exactly what the real SDK sent.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import ssl
import threading
import time
from pathlib import Path

from websockets.asyncio.server import serve


class _ServerThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.connections: list[list[dict]] = []   # events per connection, in order
        self.paths: list[str] = []
        self.headers: list[dict] = []
        self._server = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.port = 0
        self._ws = []
        self._tasks: set[asyncio.Task] = set()   # responses in flight, cancelled on exit

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._start())
        self._ready.set()
        self.loop.run_forever()

    async def _start(self) -> None:
        self._server = await serve(self._handler, "127.0.0.1", 0, **self._serve_kw())
        self.port = self._server.sockets[0].getsockname()[1]

    def _serve_kw(self) -> dict:
        return {}

    def __enter__(self):
        self._thread.start()
        self._ready.wait(5)
        return self

    def __exit__(self, *exc) -> None:
        async def stop():
            self._server.close()
            await self._server.wait_closed()
            # a response still sleeping would be destroyed pending when the loop stops; its
            # "Task was destroyed" error would then land in another test's log capture
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)

    def drop(self) -> None:
        """Close every open connection abruptly (as a provider outage would)."""
        async def go():
            for ws in list(self._ws):
                ws.transport.abort()
        asyncio.run_coroutine_threadsafe(go(), self.loop).result(5)

    def settle(self, timeout: float = 10.0) -> None:
        """Wait until every connection's handler has returned, i.e. read every message the client
        sent before it closed. websockets answers a client's close frame as it reads it, before the
        handler has taken the messages queued ahead of it, so a test that looks right after the
        client's close() could miss the last ones on a loaded machine."""
        deadline = time.monotonic() + timeout
        while self._ws and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not self._ws, f"a connection of the fake server still open after {timeout} s"

    def events(self, kind: str | None = None, conn: int | None = None) -> list[dict]:
        groups = self.connections if conn is None else [self.connections[conn]]
        return [e for g in groups for e in g if kind is None or _kind(e) == kind]


def _kind(e: dict) -> str:
    return e.get("type") or next(iter(e), "")


class FakeOpenAIRealtime(_ServerThread):
    """Speaks Realtime GA: ``session.created`` on connect, ``session.updated``, acknowledges each
    ``conversation.item.create`` with ``conversation.item.added`` and ``conversation.item.done``,
    answers ``response.create`` with ``response.created`` … ``response.done`` after
    ``reply_delay`` seconds, and an ``error`` naming the client event for a second
    ``response.create`` while one is in flight (as the real API does).

    Attributes:
        reject_text: an item whose text contains this is refused with an ``error`` event.
        drop_after_items: close the connection abruptly after this many items (once).
        drop_schedule: connection *i* is closed abruptly after ``drop_schedule[i]`` items (0: as
            soon as its ``session.update`` comes); connections past the list are kept.
        frames_after_items: raw text frames sent (once) after the acknowledgements of a
            connection's *n*-th item: ``{n: [frame, …]}`` (a malformed event, a non-JSON frame).
        vad_responses: start a response of the server's own on ``input_audio_buffer.append``
            when none is in flight (server VAD, the GA default, does so when speech stops).
        mute_acks: read items but acknowledge none (a provider that stalls).
    """

    def __init__(self, reply_delay: float = 0.2) -> None:
        super().__init__()
        self.reply_delay = reply_delay
        self.reject_text: str | None = None
        self.drop_after_items: int | None = None
        self.drop_schedule: list[int] = []
        self.frames_after_items: dict[int, list[str]] = {}
        self.vad_responses = False
        self.mute_acks = False
        self.errors_sent: list[dict] = []
        self._n = 0

    def _eid(self) -> str:
        self._n += 1
        return f"srv_{self._n}"

    async def _handler(self, ws) -> None:
        self._ws.append(ws)
        self.paths.append(ws.request.path)
        self.headers.append(dict(ws.request.headers))
        events: list[dict] = []
        self.connections.append(events)
        index = len(self.connections) - 1
        drop_at = self.drop_schedule[index] if index < len(self.drop_schedule) else None
        in_flight = {"on": False}
        await ws.send(json.dumps({"type": "session.created", "event_id": self._eid(),
                                  "session": {"type": "realtime", "id": "sess_1", "object": "realtime.session"}}))
        try:
            async for raw in ws:
                ev = json.loads(raw)
                events.append(ev)
                t = ev.get("type")
                if t == "session.update":
                    if drop_at == 0:
                        ws.transport.abort()
                        return
                    await ws.send(json.dumps({"type": "session.updated", "event_id": self._eid(),
                                              "session": {"type": "realtime", **ev.get("session", {})}}))
                elif t == "conversation.item.create":
                    if self.mute_acks:
                        continue
                    item = ev["item"]
                    text = " ".join(p.get("text", "") for p in item.get("content", []))
                    if self.reject_text and self.reject_text in text:
                        err = {"type": "error", "event_id": self._eid(),
                               "error": {"type": "invalid_request_error", "code": "invalid_value",
                                         "message": "item refused", "event_id": ev.get("event_id")}}
                        self.errors_sent.append(err)
                        await ws.send(json.dumps(err))
                        continue
                    item = {"object": "realtime.item", "status": "completed", **item}
                    for kind in ("conversation.item.added", "conversation.item.done"):
                        await ws.send(json.dumps({"type": kind, "event_id": self._eid(), "item": item}))
                    n_items = sum(1 for e in events if e.get("type") == "conversation.item.create")
                    for frame in self.frames_after_items.pop(n_items, []):
                        await ws.send(frame)
                    if self.drop_after_items is not None and n_items >= self.drop_after_items:
                        self.drop_after_items = None
                        ws.transport.abort()
                        return
                    if drop_at is not None and n_items >= drop_at:
                        ws.transport.abort()
                        return
                elif t == "input_audio_buffer.append":
                    if self.vad_responses and not in_flight["on"]:
                        in_flight["on"] = True
                        self._start_response(ws, in_flight)
                elif t == "response.create":
                    if in_flight["on"]:
                        err = {"type": "error", "event_id": self._eid(),
                               "error": {"type": "invalid_request_error",
                                         "code": "conversation_already_has_active_response",
                                         "message": "a response is in progress", "event_id": ev.get("event_id")}}
                        self.errors_sent.append(err)
                        await ws.send(json.dumps(err))
                        continue
                    in_flight["on"] = True
                    self._start_response(ws, in_flight)
        except Exception:  # noqa: BLE001 - the client went away
            pass
        finally:
            self._ws.remove(ws)

    def _start_response(self, ws, in_flight) -> None:
        task = asyncio.create_task(self._respond(ws, in_flight))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _respond(self, ws, in_flight) -> None:
        try:
            await self._respond_inner(ws, in_flight)
        except Exception:  # noqa: BLE001 - the client went away
            pass

    async def _respond_inner(self, ws, in_flight) -> None:
        rid = f"resp_{self._n}"
        await ws.send(json.dumps({"type": "response.created", "event_id": self._eid(),
                                  "response": {"id": rid, "object": "realtime.response", "status": "in_progress"}}))
        await asyncio.sleep(self.reply_delay)
        await ws.send(json.dumps({"type": "response.output_text.delta", "event_id": self._eid(),
                                  "response_id": rid, "item_id": "it", "output_index": 0, "content_index": 0,
                                  "delta": "noted"}))
        in_flight["on"] = False
        await ws.send(json.dumps({"type": "response.done", "event_id": self._eid(),
                                  "response": {"id": rid, "object": "realtime.response", "status": "completed",
                                               "output": [{"type": "message", "role": "assistant",
                                                           "content": [{"type": "output_text", "text": "noted"}]}]}}))


class RefusingServer(_ServerThread):
    """Answers every WebSocket handshake with HTTP ``status`` (401: a wrong API key), as a
    provider refuses a key; ``paths`` records each handshake's path."""

    def __init__(self, status: int = 401) -> None:
        super().__init__()
        self.status = status

    def _serve_kw(self) -> dict:
        def refuse(connection, request):
            self.paths.append(request.path)
            return connection.respond(self.status, "Incorrect API key provided\n")
        return {"process_request": refuse}

    async def _handler(self, ws) -> None:   # never reached: every handshake is refused
        await ws.close()


def self_signed(tmp: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server and a client TLS context for 127.0.0.1 (a fresh self-signed certificate)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert_path, key_path)
    client = ssl.create_default_context(cafile=str(cert_path))
    return server, client


class FakeGeminiLive(_ServerThread):
    """Speaks the Gemini Live (BidiGenerateContent) protocol over TLS: answers ``setup`` with
    ``setupComplete``, records ``client_content`` / ``realtime_input``, and answers a
    ``client_content`` with ``turn_complete`` by a model turn ``noted`` and ``turnComplete``.

    Attributes:
        frames_after_content: raw text frames sent (once) after a connection's *n*-th
            ``client_content``: ``{n: [frame, …]}`` (a malformed message, a non-JSON frame).
        drop_after_content: close the connection abruptly on reading this many ``client_content``
            messages (once), before it answers anything after them.
    """

    def __init__(self, server_ctx: ssl.SSLContext) -> None:
        super().__init__()
        self._ctx = server_ctx
        self.frames_after_content: dict[int, list[str]] = {}
        self.drop_after_content: int | None = None

    def _serve_kw(self) -> dict:
        return {"ssl": self._ctx}

    async def _handler(self, ws) -> None:
        self._ws.append(ws)
        self.paths.append(ws.request.path)
        self.headers.append(dict(ws.request.headers))
        events: list[dict] = []
        self.connections.append(events)
        try:
            async for raw in ws:
                ev = json.loads(raw)
                events.append(ev)
                if "client_content" in ev:
                    n = sum("client_content" in e for e in events)
                    if self.drop_after_content is not None and n >= self.drop_after_content:
                        self.drop_after_content = None
                        ws.transport.abort()
                        return
                    for frame in self.frames_after_content.pop(n, []):
                        await ws.send(frame)
                if "setup" in ev:
                    await ws.send(json.dumps({"setupComplete": {}}))
                elif "client_content" in ev and ev["client_content"].get("turnComplete"):
                    await ws.send(json.dumps({"serverContent": {"modelTurn": {"role": "model",
                                                                             "parts": [{"text": "noted"}]}}}))
                    await ws.send(json.dumps({"serverContent": {"turnComplete": True}}))
        except Exception:  # noqa: BLE001
            pass
        finally:
            self._ws.remove(ws)
