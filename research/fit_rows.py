"""The fit checks of benchmarks/ with the engine probe beside every measurement, saving the rows
(and the probes) that research/calibrate.py refits and research/replay.py re-scores.

    python -m research.fit_rows fit_accuracy   # about 50 minutes, a third of it probes
    python -m research.fit_rows fit_heldout    # about 15 minutes; never refit on its rows

This is how the constants of src/edgepick/fit/speed.py and the held-out band fit shows beside
every estimate (HELDOUT_RATIOS) were measured: see docs/fit.md before changing either.
"""

from __future__ import annotations

import sys
from pathlib import Path

from benchmarks import fit_accuracy
from edgepick.assets import bundled
from edgepick.devices.probe import probe
from research.calibrate import fit, save
from research.conditions import ProbeBeside


def saver(path: Path):
    """The conditions and the row writer for one research run saved to `path`."""
    conditions = ProbeBeside()

    def on_rows(rows: list[dict], plain) -> None:
        saved = save(rows, plain.bandwidth_gbps, path)
        path.with_name(path.stem + "_probes.json").write_text(
            "[" + ",\n".join(p.model_dump_json() for p in conditions.probes) + "]")
        print(f"rows saved to {path}; constants refitted on them (in-sample): "
              f"{fit(saved, plain.bandwidth_gbps)}")

    return on_rows, conditions


def main(argv: list[str]) -> int:
    which = argv[0] if argv else "fit_accuracy"
    if which == "fit_accuracy":
        files, contexts = fit_accuracy.candidates(), fit_accuracy.CONTEXTS
    elif which == "fit_heldout":
        from benchmarks import fit_heldout
        from edgepick.assets.synthetic import synthetic_llama
        from edgepick.quantize.ladder import build_ladder

        src = synthetic_llama(n_embd=768, n_ff=2048, n_layers=12, n_head=12, n_head_kv=4)
        files = [f.path for f in build_ladder(str(src), ["Q5_K_M", "Q6_K", "Q4_K_M"],
                                              bundled.cache_dir() / "heldout")]
        contexts = fit_heldout.CONTEXTS
    else:
        print(__doc__)
        return 2
    device = probe(engine=False)  # the engine probe runs beside each measurement
    on_rows, conditions = saver(bundled.cache_dir() / f"{which}_rows.json")
    configs = [(path, ctx, ctx // 2) for path in files for ctx in contexts]
    misses = fit_accuracy.check(configs, device, conditions,
                                on_rows if which == "fit_accuracy" else None)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
