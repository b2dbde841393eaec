"""TEMPORARY stand-in for ``voicekit.attribution`` (built on another branch).

Installed into ``sys.modules`` only when the real module cannot be imported, so the turn-taking
tests run before the attribution branch is merged. Delete this file once it is. It provides only
the three names turn-taking uses: ``quote_line``, ``label_lines``, ``SpeakerLabel``.
"""

from __future__ import annotations

import importlib
import json
import sys
import types
from dataclasses import dataclass

_OTHER_QUOTES = "\u201c\u201d\u201e\u201f\u2033\u2036\u301d\u301e\u301f\uff02\u00ab\u00bb"
_TO_APOSTROPHE = {ord(c): "'" for c in _OTHER_QUOTES}


def quote_line(text: str) -> str:
    """A8: other double quote marks made ', then the line as a JSON string."""
    return json.dumps(text.translate(_TO_APOSTROPHE), ensure_ascii=False)


def label_lines(label: str, text: str) -> str:
    """A8: ``Label: "line"`` for each ``str.splitlines()`` line, joined with newlines."""
    lines = text.splitlines() or [""]
    return "\n".join(f"{label}: {quote_line(line)}" for line in lines)


@dataclass(frozen=True)
class SpeakerLabel:
    """A speaker's label: a name (with a rank from 2 on) or a channel."""

    name: str | None
    rank: int | None
    channel: str

    @property
    def base_name(self) -> str | None:
        return self.name

    @property
    def text(self) -> str:
        if self.name is None:
            return f"@{self.channel}"
        return self.name if not self.rank or self.rank < 2 else f"{self.name} ({self.rank})"


def install() -> types.ModuleType:
    """Return the real ``voicekit.attribution`` if importable, else install this stand-in."""
    try:
        return importlib.import_module("voicekit.attribution")
    except ImportError:
        pass
    module = types.ModuleType("voicekit.attribution")
    module.__doc__ = "TEMPORARY test stand-in (tests/_attribution_stub.py)."
    module.quote_line = quote_line
    module.label_lines = label_lines
    module.SpeakerLabel = SpeakerLabel
    module.__is_stub__ = True
    sys.modules["voicekit.attribution"] = module
    import voicekit

    voicekit.attribution = module  # type: ignore[attr-defined]
    return module
