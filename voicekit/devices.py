"""Where the models run: the ``--device`` and ``--compute-type`` of every model.

faster-whisper (CTranslate2) takes the compute type as it is. The torch models (the speaker
encoder, pyannote's segmentation and embedding models) run their forward passes under
:func:`torch_precision`: on CUDA the CTranslate2 name is mapped onto torch autocast (int8 weight
quantisation has no torch counterpart here); on CPU they run in float32.
"""

from __future__ import annotations

import contextlib

DEVICES = ("cpu", "cuda")

COMPUTE_TYPES = ("default", "auto", "float32", "float16", "bfloat16", "int8", "int8_float32",
                 "int8_float16", "int8_bfloat16", "int16")
"""CTranslate2's compute types (https://opennmt.net/CTranslate2/quantization.html)."""

_AUTOCAST = {"float16": "float16", "int8_float16": "float16", "bfloat16": "bfloat16", "int8_bfloat16": "bfloat16"}


class DeviceError(Exception):
    """A device or compute type cannot be used here. The message names the fix."""


def check_compute_type(compute_type: str, device: str | None = None) -> str:
    """Return ``compute_type`` if CTranslate2 knows it (and, given ``device``, can run it there).

    Args:
        compute_type: a name of :data:`COMPUTE_TYPES`.
        device: ``cpu`` or ``cuda`` to also check that CTranslate2 supports the type on it
            (``ctranslate2.get_supported_compute_types``: on most CPUs ``float32``, ``int8`` and
            ``int8_float32``, not ``float16``); None or ``auto`` checks the name only.

    Raises:
        DeviceError: for an unknown name, or a type the device cannot run.
    """
    if compute_type not in COMPUTE_TYPES:
        raise DeviceError(f"unknown compute type {compute_type!r}: use one of {', '.join(COMPUTE_TYPES)}")
    if device in DEVICES and compute_type not in ("default", "auto"):
        import ctranslate2

        supported = sorted(ctranslate2.get_supported_compute_types(device))
        if compute_type not in supported:
            raise DeviceError(f"--compute-type {compute_type}: CTranslate2 cannot run it on this {device} "
                              f"(it can: {', '.join(supported)}, or default); pick one of those")
    return compute_type


def require_torch_device(device: str):
    """The ``torch.device`` for ``device`` (``cpu`` or ``cuda``).

    Raises:
        DeviceError: when ``device`` is unknown, or ``cuda`` is asked for and torch sees no CUDA
            device (a CPU build of torch, no driver, or no GPU).
    """
    import torch

    if device not in DEVICES:
        raise DeviceError(f"unknown device {device!r}: use cpu or cuda")
    if device == "cuda" and not torch.cuda.is_available():
        build = "a CPU build" if torch.version.cuda is None else f"built for CUDA {torch.version.cuda}"
        raise DeviceError(f"compute device cuda: torch {torch.__version__} ({build}) sees no CUDA device; "
                          "install a CUDA build of torch on a machine with an NVIDIA GPU and driver, "
                          "or run on the CPU (the default compute device: leave out cuda)")
    return torch.device(device)


def require_ctranslate2_device(device: str) -> str:
    """Check that CTranslate2 (faster-whisper) can run on ``device``; returns it.

    Raises:
        DeviceError: when ``cuda`` is asked for and CTranslate2 sees no CUDA device.
    """
    if device == "cuda":
        import ctranslate2

        if ctranslate2.get_cuda_device_count() == 0:
            raise DeviceError(f"compute device cuda: CTranslate2 {ctranslate2.__version__} sees no CUDA device "
                              "(its wheels need an NVIDIA driver plus CUDA 12 and cuDNN 9 libraries); "
                              "run on the CPU (the default compute device: leave out cuda)")
    elif device not in ("cpu", "auto"):
        raise DeviceError(f"unknown device {device!r}: use cpu or cuda")
    return device


def torch_precision(device: str, compute_type: str = "default") -> contextlib.AbstractContextManager:
    """The context in which a torch model's forward pass honours ``--compute-type``.

    On ``cuda``, ``float16``/``int8_float16`` and ``bfloat16``/``int8_bfloat16`` run under
    ``torch.autocast("cuda", dtype)``; every other type (``default``, ``float32``, ``int8``…)
    runs in float32 (no context). On ``cpu`` the torch models always run in float32: CPU autocast
    of the encoder's LSTM fails in oneDNN on CPUs without bfloat16 instructions (measured here),
    and half precision brings no speed on such CPUs. Callers cast outputs back to float32.
    """
    dtype = _AUTOCAST.get(compute_type)
    if dtype is None or device != "cuda":
        return contextlib.nullcontext()
    import torch

    return torch.autocast(device_type=device, dtype=getattr(torch, dtype))
