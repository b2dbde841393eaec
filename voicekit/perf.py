"""Measuring the pipeline's resources: resident memory, long looped meetings, state sizes.

Shared by ``scripts/bench.py`` (the speed/memory benchmark) and the long-meeting test. Linux
only for memory (``/proc/self/status``).
"""

from __future__ import annotations

import ctypes
import gc
from collections import deque
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from voicekit.audio import SAMPLE_RATE, iter_16k_blocks


def _status_kb(key: str) -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(key + ":"):
                return float(line.split()[1])
    raise OSError(f"/proc/self/status has no {key} line: memory is measured on Linux only")


def rss_mb() -> float:
    """Resident set size of this process in MiB (``VmRSS``).

    Raises:
        OSError: when ``/proc/self/status`` cannot be read (not Linux).
    """
    return _status_kb("VmRSS") / 1024


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MiB (``VmHWM``).

    Raises:
        OSError: when ``/proc/self/status`` cannot be read (not Linux).
    """
    return _status_kb("VmHWM") / 1024


class _Mallinfo2(ctypes.Structure):
    # glibc's struct mallinfo2 (glibc >= 2.33, malloc.h), every field a size_t
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def heap_in_use_mb() -> float:
    """Bytes the C heap has handed out and not got back, in MiB: glibc ``mallinfo2()``'s
    ``uordblks`` (in use in every arena) plus ``hblkhd`` (large blocks served by ``mmap``).

    Unlike the RSS this does not move with the pages the allocator keeps or returns, so a slope
    of it resolves a leak over minutes rather than hours. It counts what is allocated through
    ``malloc``: NumPy arrays, CTranslate2, ONNX Runtime and torch CPU tensors; Python objects too
    when the interpreter runs with ``PYTHONMALLOC=malloc`` (otherwise its small objects live in
    pymalloc's own arenas, which this misses).

    Raises:
        OSError: without glibc 2.33 or newer (no ``mallinfo2``).
    """
    try:
        fn = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError) as exc:
        raise OSError(f"heap_in_use_mb needs glibc >= 2.33 (mallinfo2): {exc}") from exc
    fn.restype = _Mallinfo2
    info = fn()
    return (info.uordblks + info.hblkhd) / 2**20


def release_free_memory() -> None:
    """Collect garbage and hand the C heap's free pages back to the OS (glibc ``malloc_trim``;
    nothing more where glibc is absent), so that the next :func:`rss_mb` counts memory in use
    rather than what the allocator happens to keep."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def loop_blocks(paths: Sequence[str | Path], seconds: float, block_seconds: float = 0.1) -> Iterator[np.ndarray]:
    """A long meeting made of recordings played one after another, round and round.

    Args:
        paths: the recordings (any format :func:`voicekit.audio.iter_16k_blocks` decodes).
        seconds: length of the meeting in seconds.
        block_seconds: block length in seconds.

    Yields:
        ``(n,)`` float32 blocks at 16 kHz, ``seconds`` of audio in all. Each recording is decoded
        block by block on every pass: the loop holds no audio in memory.

    Raises:
        ValueError: when ``paths`` is empty.
    """
    if not paths:
        raise ValueError("loop_blocks needs at least one recording")
    left = int(round(seconds * SAMPLE_RATE))
    while left > 0:
        for path in paths:
            for block in iter_16k_blocks(path, block_seconds):
                block = block[:left]
                left -= len(block)
                yield block
                if left <= 0:
                    return


def slope_per_hour(samples: Sequence[tuple[float, float]], after: float = 0.0) -> float:
    """Least-squares slope of ``(meeting seconds, value)`` samples from ``after`` seconds on,
    in value units per hour of meeting (NaN with fewer than three samples)."""
    pts = np.array([(t, v) for t, v in samples if t >= after], dtype=np.float64)
    if len(pts) < 3:
        return float("nan")
    return float(np.polyfit(pts[:, 0] / 3600.0, pts[:, 1], 1)[0])


def state_bytes(obj, _depth: int = 0) -> int:
    """Bytes held by an object's state: NumPy arrays by size, containers (list, tuple, dict,
    deque, set) by their items plus 8 bytes per item, objects with ``__dict__`` (or
    ``__slots__``) by their attributes; scalars and strings count 0. Recursion stops at depth 6.
    """
    if _depth > 6 or obj is None:
        return 0
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, (str, bytes, int, float, bool, complex, np.generic)):
        return 0
    if isinstance(obj, dict):
        return sum(8 + state_bytes(v, _depth + 1) for v in obj.values())
    if isinstance(obj, (list, tuple, deque, set, frozenset)):
        return sum(8 + state_bytes(v, _depth + 1) for v in obj)
    fields = dict(getattr(obj, "__dict__", {}))
    for name in getattr(type(obj), "__slots__", ()):
        if hasattr(obj, name):
            fields[name] = getattr(obj, name)
    return sum(state_bytes(v, _depth + 1) for v in fields.values())
