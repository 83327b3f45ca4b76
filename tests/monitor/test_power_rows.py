"""monitor shows device power and the hottest temperature against the deploy's baseline, and
nothing made up where serve exports neither gauge."""

from __future__ import annotations

from edgepick.monitor.live import figures, parse
from edgepick.records.deploy import Baseline

TEXT = """# TYPE edgepick_power_watts gauge
edgepick_power_watts 5.0
# TYPE edgepick_temperature_celsius gauge
edgepick_temperature_celsius{sensor="cpu-thermal (thermal_zone0)"} 52.0
edgepick_temperature_celsius{sensor="gpu-thermal (thermal_zone1)"} 44.0
"""


def _rows(text: str, base: Baseline) -> dict:
    return {r.figure: r for r in figures(parse(text), base)}


def test_power_and_temperature_against_the_baseline():
    rows = _rows(TEXT, Baseline(power_w=3.0, temperature_c=50.0))
    assert (rows["device power"].live, rows["device power"].verdict) == (5.0, "worse")
    assert (rows["hottest temperature"].live, rows["hottest temperature"].verdict) == (52.0, "ok")


def test_no_gauges_no_figures():
    rows = _rows("", Baseline(power_w=3.0))
    assert rows["device power"].live is None and rows["device power"].verdict == "-"
    assert rows["hottest temperature"].live is None
