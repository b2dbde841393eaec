"""Small argument checks shared by the public API (one rule for "a number" everywhere).

numpy scalars count as numbers (``np.float32(0.1)``, ``np.int64(16000)``: what a caller computing
with numpy passes); ``bool`` and strings do not.
"""

from __future__ import annotations

import math
import numbers
from typing import Any


def is_finite_real(x: Any) -> bool:
    """True for a real number that is neither NaN nor infinite: ``int``, ``float`` or a numpy
    integer/floating scalar (``numbers.Real``), not ``bool``."""
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


def is_whole_hz(rate: Any) -> bool:
    """True for a sample rate that is a positive whole number of Hz (``16000``, ``44100.0``,
    ``np.int32(8000)``); False for ``44100.7``, NaN, 0, negatives, ``bool`` and strings."""
    return is_finite_real(rate) and rate > 0 and rate == int(rate)
