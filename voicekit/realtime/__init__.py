"""Live model sessions fed with the meeting: the broadcaster and the session adapters.

See docs/realtime.md.
"""

from voicekit.realtime.broadcaster import Broadcaster
from voicekit.realtime.delivery import DeliveryLog
from voicekit.realtime.local_session import LocalSession
from voicekit.realtime.session import ProviderError, RealtimeSession, SessionClosed, SessionEvent, SessionRefused

__all__ = ["Broadcaster", "DeliveryLog", "LocalSession", "ProviderError", "RealtimeSession", "SessionClosed",
           "SessionEvent", "SessionRefused", "make_session"]


def make_session(kind: str, *, model: str | None = None, base_url: str | None = None,
                 log_path: str | None = None, instructions: str | None = None,
                 echo=print) -> RealtimeSession:
    """A session adapter by name: ``local`` (no provider: it logs what a provider would be sent),
    ``openai`` or ``gemini``.

    API keys come from the provider's usual environment variable (``OPENAI_API_KEY``;
    ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``). For ``openai`` a ``ws://``/``wss://`` base URL is
    the WebSocket base, an ``http(s)://`` one the API base.

    Raises:
        ValueError: an unknown ``kind``, no API key for ``openai`` / ``gemini``, a ``gemini``
            base URL that is not ``https://`` or ``wss://`` (Gemini Live is reached over TLS only),
            or a base URL for ``local``, which reaches no server.
        ImportError: ``openai`` / ``gemini`` without the ``voicekit[realtime]`` extra installed.
    """
    if kind == "local":
        if base_url is not None:
            raise ValueError(f"base_url {base_url!r} is a provider's address: a local session reaches no server")
        return LocalSession(log_path, echo=echo, instructions=instructions, model=model)
    if kind == "openai":
        from voicekit.realtime.openai_session import DEFAULT_MODEL, OpenAIRealtimeSession

        ws = base_url if base_url and base_url.startswith(("ws://", "wss://")) else None
        http = base_url if base_url and not ws else None
        return OpenAIRealtimeSession(model or DEFAULT_MODEL, base_url=http, websocket_base_url=ws,
                                     instructions=instructions)
    if kind == "gemini":
        from voicekit.realtime.gemini_session import DEFAULT_MODEL as GEMINI_MODEL
        from voicekit.realtime.gemini_session import GeminiLiveSession

        if base_url and not base_url.lower().startswith(("https://", "wss://")):
            # google-genai connects to wss:// whatever the scheme: an http:// server got a TLS handshake
            raise ValueError(f"--session-base-url {base_url!r}: Gemini Live connects over TLS only (google-genai "
                             "makes any base URL wss://), so give https://HOST[:PORT] (or wss://)")
        return GeminiLiveSession(model or GEMINI_MODEL, base_url=base_url, instructions=instructions)
    raise ValueError(f"unknown session {kind!r}: use local, openai or gemini")
