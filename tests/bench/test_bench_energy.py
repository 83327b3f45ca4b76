"""Energy, host load and the sustained timeline on the real tiny model. This machine has no power
counter, so the source is an external meter command modelling a device that is only this
test's process tree: 2 W plus 10 W per CPU it keeps busy (its parent's tree's CPU time, from
psutil), so the figures depend on the bench's own work, not on what the shared host is doing.
Without a source every figure is unmeasured, not 0."""

from __future__ import annotations

import sys

from edgepick.bench.runner import measure_config
from edgepick.bench.sweeps import BenchRequest, expand
from edgepick.power import NO_SOURCE, PowerConfig
from edgepick.inputs import resolve_ref
import power_sysfs as fx

METER = """import time
import psutil
me = psutil.Process()
tree = [me.parent()] + me.parent().children(recursive=True)
cpu = 0.0
for p in tree:
    if p.pid != me.pid:
        try:
            t = p.cpu_times()
            cpu += t.user + t.system
            if p.pid == tree[0].pid:  # reaped workers, so the counter never goes back
                cpu += t.children_user + t.children_system
        except psutil.Error:
            pass
print(f"{2 * time.monotonic() + 10 * cpu:.4f} J")
"""


def _request(model: str, **kw) -> BenchRequest:
    base = dict(models=[resolve_ref(model)], prompt_lengths=[32], gen_tokens=16, warmup=1,
                repeats=3, threads=[1])
    return BenchRequest(**{**base, **kw})


def test_energy_from_a_meter_command(tiny_model, tmp_path):
    meter = tmp_path / "meter.py"
    meter.write_text(METER)
    req = _request(tiny_model, power=PowerConfig(command=f"{sys.executable} {meter}",
                                                 period_s=0.2, idle_s=1.0,
                                                 sysfs_root=str(tmp_path)))
    res = measure_config(expand(req)[0], req)
    assert res.status == "ok", res.error
    e = res.energy
    assert e.source.startswith("command") and e.note is None, e
    assert e.idle_power_w >= 2.0 and e.power_w >= 2.0
    assert e.energy_per_token_j is not None and e.energy_per_token_j >= 0
    assert e.prefill_energy_per_token_j is not None and e.net_power_w is not None
    assert res.host_load is not None and res.host_load.before is not None


def test_no_power_counter_is_unmeasured_not_zero(tiny_model, tmp_path):
    req = _request(tiny_model, power=PowerConfig(sysfs_root=str(tmp_path)))
    res = measure_config(expand(req)[0], req)
    assert res.status == "ok", res.error
    e = res.energy
    assert e.note.startswith(NO_SOURCE)
    assert (e.power_w, e.idle_power_w, e.energy_per_token_j) == (None, None, None)
    out = res.summary()
    assert out["energy"]["power_w"] is None and "contended" in out and out["host_load"]


def test_sustained_timeline_with_temperatures(tiny_model, tmp_path):
    fx.thermal(tmp_path, {"cpu-thermal": 48000, "gpu-thermal": 41000})
    req = _request(tiny_model, sustain_s=3.0, power=PowerConfig(sysfs_root=str(tmp_path),
                                                                period_s=0.2))
    cfg = [c for c in expand(req) if c.sweep == "sustain"][0]
    res = measure_config(cfg, req)
    assert res.status == "ok", res.error
    tl = res.sustain.timeline
    assert len(tl) == len(res.sustain.window_tps) == 3
    assert all(p.temperature_c == 48.0 and p.hottest_sensor.startswith("cpu-thermal") for p in tl)
    assert all(p.anon_swap_bytes and p.decode_tps > 0 and p.power_w is None for p in tl)
    assert res.sustain.throttled_after_s is None
