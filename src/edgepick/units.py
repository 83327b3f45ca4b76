"""Numbers and units, read and written in one place.

The one size parser: `2G` and `2GiB` are 2×2³⁰ bytes, `2GB` is 2×10⁹ (likewise K, M, T). Every
flag and file field that takes a size goes through `parse_size` (`--mem-limit`,
`quantize --budget`, device profiles, scenario limits), so one spelling means one number.

The one set of formatters for rates and sizes in tables, reports and explanations (`pct`,
`whole_pct`, `pct_ci`, `mib`, `human_bytes`); a figure nobody measured is written `missing`,
never 0.
"""

from __future__ import annotations

import re

# A bare K/M/G/T is binary, as in `ulimit`, `free -g` and llama.cpp's own MiB/GiB prints; the
# explicitly decimal KB/MB/GB/TB are what file sizes and spec sheets use.
_UNITS = {"": 1, "B": 1, "K": 1024, "KB": 1000, "KIB": 1024, "M": 1024**2, "MB": 1000**2,
          "MIB": 1024**2, "G": 1024**3, "GB": 1000**3, "GIB": 1024**3, "T": 1024**4,
          "TB": 1000**4, "TIB": 1024**4}


def parse_size(value: str | int | float) -> int:
    """Bytes from a number or a string with a unit; raises ValueError with the accepted forms."""
    if isinstance(value, bool):
        raise ValueError(f"expected a size like 2GiB or 512MB, got {value!r}")
    if isinstance(value, (int, float)):
        return int(value)
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", str(value))
    if not m or m.group(2).upper() not in _UNITS:
        raise ValueError(f"expected a size like 2GiB or 512MB, got {value!r}")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def pct(x: float | None, missing: str = "-") -> str:
    """0.123 → `12.3%`."""
    return missing if x is None else f"{x:.1%}"


def whole_pct(x: float | None, missing: str = "-") -> str:
    """0.123 → `12%`: a share or a limit, where a tenth of a percent says nothing."""
    return missing if x is None else f"{x:.0%}"


def pct_ci(x: float | None, low: float | None = None, high: float | None = None,
           missing: str = "-") -> str:
    """`6.7% [1.8%, 21.3%]` when the rate has its interval, else as `pct`."""
    if x is None or low is None or high is None:
        return pct(x, missing)
    return f"{x:.1%} [{low:.1%}, {high:.1%}]"


def mib(n: float | None, missing: str = "-", *, unit: bool = True) -> str:
    """Bytes as whole MiB: `95 MiB`; without the unit, grouped for a column headed MiB."""
    if n is None:
        return missing
    return f"{n / 2**20:.0f} MiB" if unit else f"{n / 2**20:,.0f}"


def human_bytes(n: float | None) -> str:
    """Bytes in the largest binary unit under 1024: `512 B`, `1.5 GiB`."""
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"
