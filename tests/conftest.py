"""Shared test setup.

TEMPORARY: installs the ``voicekit.attribution`` stand-in from ``tests/_attribution_stub.py``
when the real module (attribution branch) is not present. Remove once it is merged.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import _attribution_stub  # noqa: E402

_attribution_stub.install()

from _chat_server import ChatServer  # noqa: E402


@pytest.fixture
def chat_server():
    """A running local chat-completions server (see ``tests/_chat_server.py``)."""
    with ChatServer() as server:
        yield server
