"""Live capture: the shared conference microphone (:mod:`voicekit.capture.mic`) and the LiveKit
room bot (:mod:`voicekit.capture.livekit_bot`).

Both feed the same :class:`voicekit.sources.LiveFeed` that a paced replay (``replay --realtime``)
uses, so live capture and paced replay run the same pipeline code. See docs/capture.md.
"""

from __future__ import annotations


class CaptureError(Exception):
    """Live capture cannot start (no such device, no audio system, a refused token…).

    The message names the problem and the fix.
    """
