"""The Wilson score interval: the 95% interval every rate a decision gates on carries
(docs/decide.md).

It lives in the base layer because a record (`records.evaluation.Rate`) computes its own
interval; the evaluate stage's other interval maths build on it (evaluate/intervals.py).
"""

from __future__ import annotations

import math

Z95 = 1.959963984540054


def wilson(count: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of count/n; (0, 1) when nothing was observed."""
    if n <= 0:
        return 0.0, 1.0
    return wilson_p(count / n, n, z)


def wilson_p(p: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion `p` observed over `n` (n may be fractional)."""
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)
