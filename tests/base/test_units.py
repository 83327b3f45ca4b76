"""One size parser: G and GiB are 2**30 bytes, GB is 10**9, for every flag that takes a size."""

import pytest

from edgepick.errors import EdgepickError
from edgepick.quantize.recipe import parse_budget
from edgepick.units import parse_size


@pytest.mark.parametrize("text, n", [
    ("2G", 2 * 2**30), ("2GiB", 2 * 2**30), ("2gib", 2 * 2**30), ("2GB", 2 * 10**9),
    ("512M", 512 * 2**20), ("512MiB", 512 * 2**20), ("512MB", 512 * 10**6), ("1.5K", 1536),
    ("1kb", 1000), ("4096", 4096), (" 3 T ", 3 * 2**40), ("1TB", 10**12), (100, 100)])
def test_binary_and_decimal_units(text, n):
    assert parse_size(text) == n


@pytest.mark.parametrize("bad", ["2GX", "G", "-1G", "two", True, ""])
def test_bad_sizes_name_the_accepted_forms(bad):
    with pytest.raises(ValueError, match="expected a size like 2GiB or 512MB"):
        parse_size(bad)


def test_budget_and_mem_limit_mean_the_same_bytes():
    for text in ("2G", "2GiB", "2GB", "90MiB", "95MB", "300M"):
        assert parse_budget(text) == ("bytes", float(parse_size(text)))
    assert parse_budget("2G") == ("bytes", 2.0 * 2**30)
    assert parse_budget("4.9bpw") == ("bpw", 4.9) and parse_budget("1.15x") == ("ratio", 1.15)
    with pytest.raises(EdgepickError, match="unknown unit 'gx'"):
        parse_budget("2gx")


def test_whole_and_tenth_percents():
    from edgepick.units import pct, pct_ci, whole_pct

    assert whole_pct(0.123) == "12%" and whole_pct(0.125) == f"{0.125:.0%}"
    assert whole_pct(None) == "-" and whole_pct(None, "not measured") == "not measured"
    assert whole_pct(1) == "100%" and pct(0.1234) == "12.3%"
    assert pct_ci(0.5, None, None, missing="n/a") == "50.0%" and pct_ci(None, 0.1, 0.9) == "-"
