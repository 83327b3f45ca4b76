"""`edgepick bench -m A -m B --resident`: two models resident in one process (bench/pair.py)."""

from __future__ import annotations

from rich.table import Table

from edgepick.bench.pair import PairRequest, run
from edgepick.cli.options import open_store
from edgepick.cli.output import console, err_console, print_json
from edgepick.errors import EdgepickError
from edgepick.records.candidate import Candidate
from edgepick.units import mib


def bench_pair(refs, settings, prompt_tokens: int, gen: int, swaps: int, timeout: float,
               store: str | None, json_out: bool) -> None:
    if len(refs) != 2 or any(r.is_endpoint for r in refs):
        raise EdgepickError("--resident: give exactly two local models, -m A -m B (A is the one "
                            "swapped out and in)")
    if swaps < 3:
        raise EdgepickError(f"--resident: --repeats is the number of swaps, at least 3; got "
                            f"{swaps}")
    a, b = (Candidate(ref=r, settings=settings) for r in refs)
    err_console.print(f"measuring {a.name} + {b.name} in one worker ({swaps} swaps of "
                      f"{a.name})…", highlight=False)
    with open_store(store) as st:
        res = run(PairRequest(a=a, b=b, prompt_tokens=prompt_tokens, gen_tokens=gen,
                              swaps=swaps, timeout_s=timeout or None), st)
    if json_out:
        print_json(res.model_dump() | {"need_b_added": res.need_b_added})
        return
    t = Table("", "value", title=f"{res.a} + {res.b}, resident together")
    for label, value in (
            (f"need, {res.a} alone", mib(res.need_a)),
            ("need, both resident", mib(res.need_pair)),
            (f"added by {res.b}", mib(res.need_b_added)),
            *((f"TTFT {m}, both resident", f"{v:.0f} ms") for m, v in res.ttft_ms.items()),
            (f"{res.a} load, median of {len(res.load_ms)}",
             f"{sorted(res.load_ms)[len(res.load_ms) // 2]:.0f} ms"),
            (f"TTFT waiting for {res.a} to swap in", f"{res.swap_ttft_median_ms:.0f} ms"
             + (f" [{res.swap_ttft_ci95[0]:.0f}, {res.swap_ttft_ci95[1]:.0f}]"
                if res.swap_ttft_ci95 else " (an interval needs 6 swaps or more)"))):
        t.add_row(label, value)
    console.print(t)
