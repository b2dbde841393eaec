"""A small model-client interface, and its OpenAI-compatible chat-completions implementation.

The director (T4) and the members' replies (T11) both go through :class:`ModelClient`:
one blocking call that takes chat messages and returns the reply text. :class:`OpenAIChatClient`
speaks the chat-completions protocol through the ``openai`` SDK with a ``base_url``, which covers
hosted APIs and local servers (llama.cpp, Ollama, vLLM). The realtime-session client belongs to
the broadcaster module and implements the same interface.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Literal, Protocol, Sequence, runtime_checkable

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class ChatMessage:
    """One message of a chat request.

    Attributes:
        role: ``"system"``, ``"user"`` or ``"assistant"``.
        content: the text.
    """

    role: Role
    content: str

    def as_dict(self) -> dict[str, str]:
        """The message as the chat-completions protocol writes it."""
        return {"role": self.role, "content": self.content}


class ModelClientError(RuntimeError):
    """A model call failed: provider unreachable, HTTP error, malformed response."""


class ModelTimeoutError(ModelClientError):
    """A model call did not answer within its timeout."""


@runtime_checkable
class ModelClient(Protocol):
    """Anything that turns chat messages into one reply text.

    Implementations must be safe to call from a worker thread (the ladder runs the director in
    one to enforce its hard timeout).
    """

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        timeout_s: float | None = None,
    ) -> str:
        """Return the model's reply text ("" when it returned no text).

        Args:
            messages: the request, in order.
            max_tokens: output budget in tokens; None leaves the provider's default.
            temperature: sampling temperature; None leaves the provider's default.
            timeout_s: seconds to wait for the whole answer; None uses the client's default.

        Raises:
            ModelTimeoutError: the call did not finish within ``timeout_s``.
            ModelClientError: any other failure.
        """
        ...


class OpenAIChatClient:
    """A :class:`ModelClient` over any OpenAI-compatible ``/chat/completions`` endpoint.

    Args:
        model: the model name sent with each request.
        base_url: the API root (``"http://127.0.0.1:8080/v1"`` for llama.cpp); None uses the
            SDK's default (``OPENAI_BASE_URL`` or the OpenAI API).
        api_key: the key; None reads ``OPENAI_API_KEY`` and falls back to a placeholder, which
            local servers ignore.
        timeout_s: default timeout in seconds for one call (default 60.0).
        max_retries: SDK retries on connection errors and 5xx (default 0: the ladder has its own
            fallback, and a retry would blow the director's budget).
        token_param: ``"max_tokens"`` (default, accepted by local servers) or
            ``"max_completion_tokens"`` (newer hosted models).

    Raises:
        ImportError: if the ``openai`` package is not installed.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 0,
        token_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens",
    ) -> None:
        import openai

        self._openai = openai
        self.model = model
        self.timeout_s = float(timeout_s)
        self.token_param = token_param
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY") or "unused"
        self._client = openai.OpenAI(
            api_key=key, base_url=base_url, timeout=self.timeout_s, max_retries=max_retries
        )
        self.last_latency_s: float | None = None

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        timeout_s: float | None = None,
    ) -> str:
        """Send one chat-completions request; see :meth:`ModelClient.complete`.

        Sets :attr:`last_latency_s` (seconds) after each call, failed or not.
        """
        kwargs: dict[str, object] = {
            "model": self.model,
            "messages": [m.as_dict() for m in messages],
            "timeout": self.timeout_s if timeout_s is None else float(timeout_s),
        }
        if max_tokens is not None:
            kwargs[self.token_param] = int(max_tokens)
        if temperature is not None:
            kwargs["temperature"] = float(temperature)
        t0 = time.perf_counter()
        try:
            response = self._client.chat.completions.create(**kwargs)
        except self._openai.APITimeoutError as exc:
            raise ModelTimeoutError(f"model call timed out: {exc}") from exc
        except self._openai.OpenAIError as exc:
            raise ModelClientError(f"model call failed: {type(exc).__name__}: {exc}") from exc
        except json.JSONDecodeError as exc:  # a 200 whose body is not JSON (a proxy's HTML error page)
            raise ModelClientError(f"malformed chat-completions response (not JSON): {exc}") from exc
        finally:
            self.last_latency_s = time.perf_counter() - t0
        try:
            content = response.choices[0].message.content
        except (AttributeError, IndexError, TypeError) as exc:
            raise ModelClientError(f"malformed chat-completions response: {exc}") from exc
        return content or ""

    def close(self) -> None:
        """Close the underlying HTTP connections."""
        self._client.close()
