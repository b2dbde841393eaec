"""Shared test setup: the local chat-completions server fixture."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from _chat_server import ChatServer  # noqa: E402


@pytest.fixture
def chat_server():
    """A running local chat-completions server (see ``tests/_chat_server.py``)."""
    with ChatServer() as server:
        yield server
