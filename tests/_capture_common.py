"""Shared by tests/test_capture_*.py: the loaded models (once per process) and comparisons."""

from __future__ import annotations

import functools
import os
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
