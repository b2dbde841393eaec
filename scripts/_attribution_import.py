"""Import helper for the scripts: use ``voicekit.attribution`` when present, else the TEMPORARY
test stand-in in ``tests/_attribution_stub.py`` (until the attribution branch is merged)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
try:
    import voicekit.attribution  # noqa: F401
except ImportError:
    sys.path.insert(0, str(ROOT / "tests"))
    import _attribution_stub

    _attribution_stub.install()
