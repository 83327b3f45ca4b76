"""The machine's conditions beside each measurement: bandwidth and the engine's decode scales.

This host's speed drifts by up to 40% over tens of minutes, selectively (attention and K-quant
decoding slow down, F16 streaming barely does), and a bandwidth probe does not follow it
(docs/fit.md). So the research runs (fit_rows.py, attention_shapes.py) take the engine probe
(devices/engine_probe.py) before every measurement, and estimate each measurement with the median
of the probes taken around it: a window short enough to follow the drift, wide enough to damp one
noisy probe.
"""

from __future__ import annotations

import statistics

from edgepick.devices.engine_probe import engine_probe
from edgepick.devices.probe import measure_bandwidth
from edgepick.records import DeviceProfile

WINDOW = 2  # probes either side of a measurement's own


def probe_now(device: DeviceProfile) -> DeviceProfile:
    """`device` with its bandwidth probed now and the engine's calibration measured now."""
    fresh = device.model_copy(update={"bandwidth_gbps": round(measure_bandwidth()["median"], 2)})
    return engine_probe(fresh)


def around(probes: list[DeviceProfile], i: int) -> DeviceProfile:
    """The median conditions of the probes within WINDOW of the i-th."""
    near = probes[max(0, i - WINDOW):i + WINDOW + 1]
    cals = [p.decode_calibration for p in near]

    def med(values) -> float:
        return round(statistics.median(values), 3)

    cal = cals[0].model_copy(update={
        "stream_gbps": med(c.stream_gbps for c in cals),
        "compute_scale": med(c.compute_scale for c in cals),
        "compute_scales": {f: med(c.compute_scale_for(f) for c in cals)
                           for f in sorted({f for c in cals for f in c.compute_scales})},
        "attention_scales": {w: med(c.attention_scales[w] for c in cals)
                             for w in cals[0].attention_scales},
        "method": f"median of {len(cals)} probes", "timings": []})
    return probes[i].model_copy(update={"bandwidth_gbps": med(p.bandwidth_gbps for p in near),
                                        "decode_calibration": cal})


def summary(probes: list[DeviceProfile]) -> str:
    cals = [p.decode_calibration for p in probes]

    def span(values) -> str:
        values = list(values)
        return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"

    return (f"{len(probes)} engine probes, median (range): bandwidth "
            f"{span(p.bandwidth_gbps for p in probes)} GB/s, engine stream "
            f"{span(c.stream_gbps for c in cals)} GB/s, compute scale "
            + ", ".join(f"{span(c.compute_scale_for(f) for c in cals)} {f}"
                        for f in sorted({f for c in cals for f in c.compute_scales}) or ["all"])
            + f" (fallbacks: {sum(c.method == 'one scale' for c in cals)}), attention scale "
            + ", ".join(f"{span(c.attention_scales[w] for c in cals)} at {w} B rows"
                        for w in cals[0].attention_scales))


class ProbeBeside:
    """The conditions benchmarks/fit_accuracy.check takes: a probe before each measurement."""

    def __init__(self) -> None:
        self.probes: list[DeviceProfile] = []

    def before_each(self, device: DeviceProfile) -> None:
        self.probes.append(probe_now(device))

    def device_at(self, i: int) -> DeviceProfile:
        return around(self.probes, i)

    def bandwidths(self) -> list[float]:
        return [p.bandwidth_gbps for p in self.probes]

    def summary(self) -> str:
        return summary(self.probes)
