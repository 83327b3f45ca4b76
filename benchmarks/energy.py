"""Joules per token of two quantization types side by side: SmolLM2-135M Q4_1 and F16 (the
bundled builds), measured as `edgepick bench` measures them (each configuration in its own
worker, idle power read before and subtracted), in alternating order (ABBA) over
EDGEPICK_BENCH_ROUNDS rounds, since a shared host drifts more than the gap being measured.

The power source is found as bench finds it (RAPL, Jetson INA3221 rails, a battery gauge off AC),
or given as a meter command in EDGEPICK_POWER_COMMAND (a USB meter's reader printing watts or
joules). Where there is none, it says so in one line and measures nothing: a J/token figure
without a counter would be made up. No target: the figures are the evidence for the efficiency
layer (docs/metrics.md, "Energy").
"""

from __future__ import annotations

import os
import statistics
import sys

MODELS = ("smollm2_q4_1", "smollm2_f16")  # edgepick.assets.bundled builders
N_PROMPT, N_GEN = 64, 32  # small: the energy, not the speed, is the figure
THREADS = int(os.environ.get("EDGEPICK_BENCH_THREADS", "2"))
ROUNDS = int(os.environ.get("EDGEPICK_BENCH_ROUNDS", "2"))


def main() -> int:
    from edgepick.assets import bundled
    from edgepick.bench.runner import measure_config
    from edgepick.bench.session import power_source
    from edgepick.bench.sweeps import BenchRequest, expand
    from edgepick.power import PowerConfig
    from edgepick.records.model_ref import ModelRef

    cfg = PowerConfig(command=os.environ.get("EDGEPICK_POWER_COMMAND") or None)
    source, line = power_source(cfg)
    print(f"power: {line}")
    if source is None:
        print("energy benchmark: nothing measured (no power source on this machine)")
        return 0
    per_model: dict[str, list[tuple[float | None, float | None]]] = {m: [] for m in MODELS}
    for r in range(ROUNDS):
        order = MODELS if r % 2 == 0 else MODELS[::-1]
        for name in order:
            ref = ModelRef.file(getattr(bundled, name)(), label=name)
            req = BenchRequest(models=[ref], prompt_lengths=[N_PROMPT],
                               gen_tokens=N_GEN, repeats=3, threads=[THREADS], power=cfg,
                               quiet_wait_s=5)
            res = measure_config(expand(req)[0], req)
            if res.status != "ok":
                print(f"{name}: failed: {res.error}")
                return 1
            e = res.energy
            flag = " (contended)" if res.contended else ""
            print(f"round {r + 1} {name}: {e.power_w} W, idle {e.idle_power_w} W, "
                  f"{e.energy_per_token_j} J/token, {e.prefill_energy_per_token_j} J/prompt "
                  f"token{flag}" + (f" — {e.note}" if e.note else ""))
            per_model[name].append((e.energy_per_token_j, e.prefill_energy_per_token_j))
    print(f"\n{'model':<14}{'J / generated token':>22}{'J / prompt token':>20}")
    medians = {}
    for name, rows in per_model.items():
        dec = [d for d, _ in rows if d is not None]
        pre = [p for _, p in rows if p is not None]
        medians[name] = statistics.median(dec) if dec else None
        print(f"{name:<14}{_show(medians[name], 5):>22}"
              f"{_show(statistics.median(pre) if pre else None, 6):>20}")
    a, b = (medians[m] for m in MODELS)
    if a and b:
        print(f"\n{MODELS[0]} uses {a / b:.2f}x the energy per generated token of {MODELS[1]}")
    return 0


def _show(v: float | None, digits: int) -> str:
    return "unmeasured" if v is None else f"{v:.{digits}f}"


if __name__ == "__main__":
    sys.exit(main())
