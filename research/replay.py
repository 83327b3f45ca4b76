"""Score the engine calibration offline on a saved run, without measuring again.

`python -m research.fit_rows` and `python -m research.attention_shapes` save their rows and the engine probes
taken beside them (`*_rows.json`, `*_rows_probes.json` in ~/.cache/edgepick/models). This
re-solves every saved probe with the current `engine_probe.solve` (the terms come from the probe
files, the times from the saved decodes), estimates each row again from the probes around its
measurement, and prints how many rows fall within ±20% for a few window sizes. A change to
`solve` can be tried here in seconds before a 40-minute run claims it; the scores are in-sample
for whatever was tuned on the same file.

    python -m research.replay ~/.cache/edgepick/models/fit_accuracy_rows.json
"""

from __future__ import annotations

import functools
import json
import statistics
import sys
from pathlib import Path

from benchmarks.fit_accuracy import GEN, SPEED_TOL
from research import conditions as _conditions
from edgepick.assets import bundled
from edgepick.devices import engine_probe
from edgepick.fit.planner import fit_one
from edgepick.models.gguf_info import gguf_spec
from edgepick.records import DeviceProfile

WINDOWS = (0, 2, 4, 1000)
_spec = functools.cache(gguf_spec)  # each probe file's header, once for all probes


def resolve(probe: DeviceProfile, files: dict[str, Path]) -> DeviceProfile:
    timings = []
    for t in probe.decode_calibration.timings:
        terms, row_bytes = engine_probe.terms_for(_spec(str(files[t["model"]])), t["fill"],
                                                  probe.bandwidth_gbps)
        timings.append({"model": t["model"], "fill": t["fill"], "seconds": t["measured_ms"] / 1e3,
                        "terms": tuple(terms), "row_bytes": row_bytes})
    return probe.model_copy(
        update={"decode_calibration": engine_probe.solve(probe, timings)})


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    rows_path = Path(argv[0]).expanduser()
    probes_path = rows_path.with_name(rows_path.stem + "_probes.json")
    for p in (rows_path, probes_path):
        if not p.is_file():
            print(f"{p}: not found (run the benchmark that writes it first)")
            return 2
    rows = json.loads(rows_path.read_text())["rows"]
    files = {p.name: p for p in bundled.cache_dir().rglob("*.gguf")}
    probes = [resolve(DeviceProfile(**p), files)
              for p in json.loads(probes_path.read_text())]
    for window in WINDOWS:
        _conditions.WINDOW = window
        ratios = []
        for r in rows:
            name, _, prompt = r["model"].partition(" @")
            fill = (int(prompt) if prompt else r["ctx"] // 2) + GEN // 2
            est = fit_one(_spec(str(files[name])), None, r["ctx"],
                          _conditions.around(probes, r["probe_at"]), fill=fill)
            ratios.append(est.decode_tps_estimate / r["measured_tps"])
        inside = sum(abs(x - 1) <= SPEED_TOL for x in ratios)
        worst = max(ratios, key=lambda x: abs(x - 1))
        label = "all probes" if window >= len(probes) else f"window ±{window}"
        print(f"{label:12} {inside}/{len(ratios)} within ±{SPEED_TOL:.0%}, median "
              f"{statistics.median(ratios):.2f}, worst {worst:.2f}: "
              + " ".join(f"{x:.2f}" for x in ratios))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
