"""Shared by tests/test_capture_*.py: where the recordings and tools are, a CLI run in a
subprocess, and comparisons (the models and `required` come from _pipeline_support)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from _pipeline_support import EVAL, components, required  # noqa: F401 - re-exported to the capture tests

ROOT = Path(__file__).resolve().parents[1]
TOOLS = EVAL.parent / "tools"
FALCON = EVAL / "picovoice_falcon" / "test.wav"
PYANNOTE = EVAL / "pyannote_sample" / "sample.wav"


def text_of(turns) -> str:
    return " ".join(t.text for t in turns)


class CliRun:
    """``python -m voicekit.cli ARGS`` in a subprocess, its stderr read line by line on a thread.

    ``lines`` collects stderr; ``seen(text)`` is an event set once a line contains ``text``
    (register it before the line can come: right after construction).
    """

    def __init__(self, args, env=None, marks=()) -> None:  # noqa: ANN001
        self.events = {mark: threading.Event() for mark in marks}
        self.lines: list[str] = []
        self.proc = subprocess.Popen([sys.executable, "-m", "voicekit.cli", *map(str, args)], cwd=ROOT, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line)
            for mark, event in self.events.items():
                if mark in line:
                    event.set()

    def seen(self, mark: str) -> threading.Event:
        return self.events[mark]

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def finish(self, timeout: float = 5.0) -> None:
        """Kill the process if it still runs; wait for the reader."""
        if self.proc.poll() is None:
            self.proc.kill()
        self._reader.join(timeout)
