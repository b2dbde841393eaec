"""--device / --compute-type: every torch model honours the compute type; unknown values and a
missing CUDA device are clear errors (docs/pyannote.md, "Devices and compute types")."""

from __future__ import annotations

import numpy as np
import pytest

from _pipeline_support import SAMPLE, needs_eval
from voicekit.devices import DeviceError, check_compute_type, torch_precision


def test_compute_types_map_onto_torch_autocast():
    import contextlib

    import torch

    assert check_compute_type("int8_float16") == "int8_float16"
    with pytest.raises(DeviceError, match="unknown compute type 'int4'"):
        check_compute_type("int4")
    for name, dtype in (("float16", torch.float16), ("int8_float16", torch.float16),
                        ("bfloat16", torch.bfloat16), ("int8_bfloat16", torch.bfloat16)):
        ctx = torch_precision("cuda", name)          # built, not entered: no GPU here
        assert isinstance(ctx, torch.autocast) and ctx.device == "cuda" and ctx.fast_dtype == dtype
        assert isinstance(torch_precision("cpu", name), contextlib.nullcontext)
    for name in ("default", "float32", "int8", "int8_float32", "int16"):
        assert isinstance(torch_precision("cuda", name), contextlib.nullcontext)


@needs_eval
def test_speaker_encoder_on_cpu_stays_float32_for_half_compute_types():
    """CPU autocast of the LSTM fails in oneDNN on CPUs without bfloat16 (as on this machine), so
    on CPU a half-precision --compute-type leaves the encoder in float32: identical embeddings."""
    from voicekit.audio import load_audio
    from voicekit.diarization.encoder import SpeakerEncoder

    samples = load_audio(SAMPLE)[:16000 * 4]
    full = SpeakerEncoder().embed_windows(samples)
    half = SpeakerEncoder(compute_type="bfloat16").embed_windows(samples)
    assert len(full) > 5 and half.vectors.dtype == np.float32
    np.testing.assert_array_equal(full.vectors, half.vectors)
