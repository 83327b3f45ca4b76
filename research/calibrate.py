"""Refit the decode-time constants of src/edgepick/fit/speed.py from fit_accuracy's rows.

seconds per token = Σ_type bytes_type ÷ (bandwidth × eff_type) + matmuls × c_matmul
                    + kv_position_heads × (c_kv_head + c_kv_dim × head_dims)
                    + query_position_heads × c_query_dim × head_dims
is linear in all of them, so a least-squares fit on relative error (each row divided by its
measured time) recovers them.
Run `python -m research.calibrate ~/.cache/edgepick/models/fit_accuracy_rows.json` after
`python -m research.fit_rows fit_accuracy`; the constants it prints are in-sample.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from edgepick.fit import speed
from edgepick.fit.memory import AttentionLoad


def row_features(read, attention: AttentionLoad) -> dict:
    by_type: dict[str, int] = {}
    for t in read:
        by_type[t.type] = by_type.get(t.type, 0) + t.n_bytes
    return {"bytes_by_type": by_type, "matmuls": sum(1 for t in read if len(t.shape) >= 2),
            **attention._asdict()}


def fit(rows: list[dict], bandwidth_gbps: float, pull: float = 0.05) -> dict:
    """Unknowns are solved as multiples of the current constants and pulled towards 1 (ridge,
    weight `pull` per row): one run covers few types, and without the pull two types that
    always appear together (Q4_K and Q6_K in a Q4_K_M file) trade off into nonsense."""
    bw = bandwidth_gbps * 1e9
    types = sorted({ty for r in rows for ty in r["bytes_by_type"]} - {"F32"})
    current = [1.0 / speed.AVX2_EFFICIENCY.get(ty, speed.DEFAULT_EFFICIENCY) for ty in types] \
        + [speed.MATMUL_OVERHEAD_S, speed.ATTENTION_S_PER_KV_HEAD, speed.ATTENTION_S_PER_KV_DIM,
           speed.ATTENTION_S_PER_QUERY_DIM]
    a, y = [], []
    for r in rows:
        t = 1.0 / r["measured_tps"]
        fixed = r["bytes_by_type"].get("F32", 0) / (bw * speed.AVX2_EFFICIENCY["F32"])
        kv, dims = r["kv_position_heads"], r["head_dims"]
        cols = [r["bytes_by_type"].get(ty, 0) / bw for ty in types] \
            + [r["matmuls"], kv, kv * dims, r["query_position_heads"] * dims]
        a.append([c * x0 / t for c, x0 in zip(cols, current)])
        y.append((t - fixed) / t)
    k = len(current)
    weight = (pull * len(rows)) ** 0.5
    a_all = np.vstack([np.array(a), weight * np.eye(k)])
    y_all = np.concatenate([np.array(y), weight * np.ones(k)])
    z, *_ = np.linalg.lstsq(a_all, y_all, rcond=None)
    x = z * np.array(current)
    return {"efficiency": {ty: round(1.0 / v, 2) for ty, v in zip(types, x) if v > 0},
            "matmul_overhead_s": float(f"{x[-4]:.3g}"),
            "attention_s_per_kv_head": float(f"{x[-3]:.3g}"),
            "attention_s_per_kv_dim": float(f"{x[-2]:.3g}"),
            "attention_s_per_query_dim": float(f"{x[-1]:.3g}")}


def save(rows: list[dict], bandwidth_gbps: float, path: Path) -> list[dict]:
    """fit_accuracy.check's rows (with their tensors and attention load) saved as the features
    above; returns them as saved."""
    out = [{k: v for k, v in r.items() if k not in ("read", "attention")}
           | row_features(r["read"], r["attention"]) for r in rows]
    path.write_text(json.dumps({"bandwidth_gbps": bandwidth_gbps, "rows": out}, indent=1))
    return out


if __name__ == "__main__":
    import sys

    data = json.loads(Path(sys.argv[1]).read_text())
    print(json.dumps(fit(data["rows"], data["bandwidth_gbps"]), indent=1))
