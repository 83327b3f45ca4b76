"""serve exports edgepick_power_watts and edgepick_temperature_celsius where the device has a
power counter and temperature sensors, and nothing (never a 0) where it has none."""

from __future__ import annotations

from prometheus_client import generate_latest

import power_sysfs as fx
from edgepick.serve.metrics import ServeMetrics


def test_gauges_read_at_scrape_time(tmp_path):
    fx.ina3221_hwmon(tmp_path, {"VDD_IN": (5000, 1000)})
    fx.thermal(tmp_path, {"cpu-thermal": 47500})
    m = ServeMetrics()
    m.bind_power(sysfs_root=str(tmp_path))
    text = generate_latest(m.registry).decode()
    assert "edgepick_power_watts 5.0" in text
    assert 'edgepick_temperature_celsius{sensor="cpu-thermal (thermal_zone0)"} 47.5' in text
    (tmp_path / "sys/class/thermal/thermal_zone0/temp").write_text("52000\n")
    assert 'thermal_zone0)"} 52.0' in generate_latest(m.registry).decode()


def test_counter_source_gives_watts_between_scrapes(tmp_path):
    files = fx.rapl(tmp_path)
    m = ServeMetrics()
    m.bind_power(sysfs_root=str(tmp_path))
    files["package"].write_text("1001000000\n")  # +1000 J since bind: some watts, not 0 or NaN
    line = next(ln for ln in generate_latest(m.registry).decode().splitlines()
                if ln.startswith("edgepick_power_watts "))
    assert float(line.split()[1]) > 0


def test_no_source_no_gauge(tmp_path):
    m = ServeMetrics()
    m.bind_power(sysfs_root=str(tmp_path))
    text = generate_latest(m.registry).decode()
    assert "edgepick_power_watts" not in text and "edgepick_temperature_celsius" not in text
