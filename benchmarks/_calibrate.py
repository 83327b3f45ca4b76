"""Refit the decode-time constants of src/edgepick/fit/speed.py from fit_accuracy's rows.

seconds per token = Σ_type bytes_type ÷ (bandwidth × eff_type) + matmuls × c_matmul
                    + position_heads × (c_position_head + c_head_dim × head_dims)
is linear in (1/eff_type, c_matmul, c_position_head), so a least-squares fit on relative error
(each row divided by its measured time) recovers them; c_head_dim is held (two head sizes
cannot pin it down). Types that never carry a fifth of a row's bytes keep the table's value.
Run `python -m benchmarks._calibrate ~/.cache/edgepick/fit_accuracy_rows.json` after
`python -m benchmarks fit_accuracy`; the constants it prints are in-sample.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from edgepick.fit import speed


def row_features(read, position_heads: int, head_dims: int) -> dict:
    by_type: dict[str, int] = {}
    for t in read:
        by_type[t.type] = by_type.get(t.type, 0) + t.n_bytes
    return {"bytes_by_type": by_type, "matmuls": sum(1 for t in read if len(t.shape) >= 2),
            "position_heads": position_heads, "head_dims": head_dims}


def fit(rows: list[dict], bandwidth_gbps: float) -> dict:
    bw = bandwidth_gbps * 1e9
    free = sorted({ty for r in rows for ty, b in r["bytes_by_type"].items()
                   if b >= 0.2 * sum(r["bytes_by_type"].values())})
    a, y = [], []
    for r in rows:
        t = 1.0 / r["measured_tps"]
        fixed = sum(b / (bw * speed.AVX2_EFFICIENCY.get(ty, speed.DEFAULT_EFFICIENCY))
                    for ty, b in r["bytes_by_type"].items() if ty not in free)
        fixed += r["position_heads"] * speed.ATTENTION_S_PER_HEAD_DIM * r["head_dims"]
        a.append([r["bytes_by_type"].get(ty, 0) / bw / t for ty in free]
                 + [r["matmuls"] / t, r["position_heads"] / t])
        y.append((t - fixed) / t)
    x, *_ = np.linalg.lstsq(np.array(a), np.array(y), rcond=None)
    eff = {ty: round(1.0 / v, 2) if v > 0 else None for ty, v in zip(free, x)}
    return {"efficiency": eff, "matmul_overhead_s": float(f"{x[-2]:.3g}"),
            "attention_s_per_position_head": float(f"{x[-1]:.3g}")}


def save(rows: list[dict], bandwidth_gbps: float, path: Path) -> None:
    path.write_text(json.dumps({"bandwidth_gbps": bandwidth_gbps, "rows": rows}, indent=1))


if __name__ == "__main__":
    import sys

    data = json.loads(Path(sys.argv[1]).read_text())
    print(json.dumps(fit(data["rows"], data["bandwidth_gbps"]), indent=1))
