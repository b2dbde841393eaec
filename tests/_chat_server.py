"""A local HTTP server that speaks the chat-completions protocol with scripted answers.

Each request to ``POST /v1/chat/completions`` takes the next :class:`Scripted` answer (or the
default when the script is empty): a reply text, a delay, an HTTP error, or a raw body. Every
request's JSON body is recorded, so tests can check what the real ``openai`` client sent.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Scripted:
    """One scripted answer: ``content`` as the assistant's text after ``delay_s`` seconds (or once
    the test sets ``hold``, 30 s at most), or an HTTP ``status`` error, or a ``raw_body`` sent as is."""

    content: str = ""
    delay_s: float = 0.0
    hold: threading.Event | None = None
    status: int = 200
    raw_body: str | None = None


class ChatServer:
    """Run with ``with ChatServer() as server:``; point clients at ``server.base_url``."""

    def __init__(self, default: Scripted | None = None) -> None:
        self.script: deque[Scripted] = deque()
        self.default = default or Scripted(content="ok")
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with outer._lock:
                    outer.requests.append({"path": self.path, "body": body})
                    answer = outer.script.popleft() if outer.script else outer.default
                if answer.delay_s:
                    time.sleep(answer.delay_s)
                if answer.hold is not None:
                    answer.hold.wait(30)
                if answer.raw_body is not None:
                    payload = answer.raw_body.encode()
                elif answer.status != 200:
                    payload = json.dumps(
                        {"error": {"message": "scripted failure", "type": "server_error"}}
                    ).encode()
                else:
                    payload = json.dumps(
                        {
                            "id": f"chatcmpl-{len(outer.requests)}",
                            "object": "chat.completion",
                            "created": int(time.time()),
                            "model": body.get("model", "scripted"),
                            "choices": [
                                {
                                    "index": 0,
                                    "message": {"role": "assistant", "content": answer.content},
                                    "finish_reason": "stop",
                                }
                            ],
                            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                        }
                    ).encode()
                try:
                    self.send_response(answer.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def push(self, *answers: Scripted | str) -> None:
        """Queue answers (a plain string is a 200 reply with that content)."""
        for a in answers:
            self.script.append(Scripted(content=a) if isinstance(a, str) else a)

    def __enter__(self) -> "ChatServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
