"""Shared by tests/test_capture_*.py: the loaded models (once per process) and comparisons."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EVAL = ROOT.parent / "shared" / "eval"
TOOLS = ROOT.parent / "shared" / "tools"
if not EVAL.is_dir():  # a worktree next to main: ../shared is beside the main checkout
    EVAL = Path("/work/shared/eval")
    TOOLS = Path("/work/shared/tools")
FALCON = EVAL / "picovoice_falcon" / "test.wav"
PYANNOTE = EVAL / "pyannote_sample" / "sample.wav"


def required(var: str) -> bool:
    """Whether CI demands this test run (skipping becomes a failure)."""
    return os.environ.get(var, "").strip() not in ("", "0", "false", "no")


@functools.lru_cache(maxsize=1)
def components():
    """The models, loaded once per test process and shared by every pipeline and lane."""
    from voicekit.pipeline import Components, PipelineOptions

    return Components.load(PipelineOptions())


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
