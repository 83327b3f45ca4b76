"""Parsing sizes such as `2GiB`, `512MB`, `1.5G`."""

from __future__ import annotations

import re

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
