"""Shared helpers for the audio-pipeline tests: where the evaluation recordings are, and the
models loaded once per test session."""

from __future__ import annotations

import functools
import importlib
import os
from pathlib import Path

import pytest

EVAL = Path(os.environ.get("VOICEKIT_EVAL_DIR", Path(__file__).resolve().parents[2] / "shared" / "eval"))
SAMPLE = EVAL / "pyannote_sample" / "sample.wav"


def required(var: str) -> bool:
    """Whether CI demands the tests behind ``var`` run (``make test`` / ``.ci/run`` set it): a
    skip for a missing dependency becomes a failure."""
    return os.environ.get(var, "").strip() not in ("", "0", "false", "no")


def import_or_skip(module: str, var: str, install: str):
    """``module`` imported, else a skip of the calling test (or test module) that says how to
    install it, or a failure when ``var`` is set (:func:`required`)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if required(var):
            pytest.fail(f"{var} is set but {module} does not import ({exc}): {install}", pytrace=False)
        pytest.skip(f"{module} not installed ({install}; {var}=1 makes this a failure)", allow_module_level=True)


needs_eval = pytest.mark.skipif(not EVAL.is_dir() and not os.environ.get("VOICEKIT_REQUIRE_EVAL"),
                                reason=f"evaluation recordings not found at {EVAL} (set VOICEKIT_EVAL_DIR)")


@functools.lru_cache(maxsize=None)
def components():
    """The default models (Whisper tiny.en, the speaker encoder), loaded once."""
    from voicekit.pipeline import Components, PipelineOptions

    return Components.load(PipelineOptions())


def eval_file(file_id: str):
    """The :class:`voicekit.evaluation.EvalFile` with this id."""
    from voicekit.evaluation import load_index

    return next(f for f in load_index(EVAL) if f.file_id == file_id)
