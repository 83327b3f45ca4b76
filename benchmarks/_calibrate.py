"""Refit the decode-time constants of src/edgepick/fit/speed.py from fit_accuracy's rows.

seconds per token = Σ_type bytes_type ÷ (bandwidth × eff_type) + matmuls × c_matmul
                    + position_heads × (c_position_head + c_head_dim × head_dims)
is linear in (1/eff_type, c_matmul, c_position_head), so a least-squares fit on relative error
(each row divided by its measured time) recovers them; c_head_dim is held (two head sizes
cannot pin it down).
Run `python -m benchmarks._calibrate ~/.cache/edgepick/models/fit_accuracy_rows.json` after
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


def fit(rows: list[dict], bandwidth_gbps: float, pull: float = 0.05) -> dict:
    """Unknowns are solved as multiples of the current constants and pulled towards 1 (ridge,
    weight `pull` per row): one run covers few types, and without the pull two types that
    always appear together (Q4_K and Q6_K in a Q4_K_M file) trade off into nonsense."""
    bw = bandwidth_gbps * 1e9
    types = sorted({ty for r in rows for ty in r["bytes_by_type"]} - {"F32"})
    current = [1.0 / speed.AVX2_EFFICIENCY.get(ty, speed.DEFAULT_EFFICIENCY) for ty in types] \
        + [speed.MATMUL_OVERHEAD_S, speed.ATTENTION_S_PER_POSITION_HEAD]
    a, y = [], []
    for r in rows:
        t = 1.0 / r["measured_tps"]
        fixed = r["bytes_by_type"].get("F32", 0) / (bw * speed.AVX2_EFFICIENCY["F32"])
        fixed += r["position_heads"] * speed.ATTENTION_S_PER_HEAD_DIM * r["head_dims"]
        cols = [r["bytes_by_type"].get(ty, 0) / bw for ty in types] \
            + [r["matmuls"], r["position_heads"]]
        a.append([c * x0 / t for c, x0 in zip(cols, current)])
        y.append((t - fixed) / t)
    k = len(current)
    weight = (pull * len(rows)) ** 0.5
    a_all = np.vstack([np.array(a), weight * np.eye(k)])
    y_all = np.concatenate([np.array(y), weight * np.ones(k)])
    z, *_ = np.linalg.lstsq(a_all, y_all, rcond=None)
    x = z * np.array(current)
    return {"efficiency": {ty: round(1.0 / v, 2) for ty, v in zip(types, x) if v > 0},
            "matmul_overhead_s": float(f"{x[-2]:.3g}"),
            "attention_s_per_position_head": float(f"{x[-1]:.3g}")}


def save(rows: list[dict], bandwidth_gbps: float, path: Path) -> None:
    path.write_text(json.dumps({"bandwidth_gbps": bandwidth_gbps, "rows": rows}, indent=1))


if __name__ == "__main__":
    import sys

    data = json.loads(Path(sys.argv[1]).read_text())
    print(json.dumps(fit(data["rows"], data["bandwidth_gbps"]), indent=1))
