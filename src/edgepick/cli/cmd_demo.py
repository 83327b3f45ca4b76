"""`edgepick check`: probe this machine, plan the bundled models, and measure one to compare."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import typer
from rich.table import Table

from edgepick.cli.output import console, human_bytes, to_jsonable


def register(app: typer.Typer) -> None:
    @app.command()
    def check(
        model: list[str] = typer.Option(["smollm2", "gemma3-270m"], "--model", "-m",
                                        help="models to plan (first one is measured)"),
        ctx: int = typer.Option(2048, help="context size"),
        out: Path = typer.Option(Path("edgepick-out/check"), help="output folder"),
    ) -> None:
        """Probe this machine, fit the models, then measure the first one: predicted vs measured."""
        from edgepick.bench.measure import measure_point
        from edgepick.launch import run_isolated
        from edgepick.devices.local import describe, local_device
        from edgepick.fit.planner import fit_one
        from edgepick.models.spec import load_spec
        from edgepick.records import Candidate, RuntimeSettings
        from edgepick.records.model_ref import ModelRef

        with console.status("reading this machine's probe…"):
            device = local_device(notify=console.print)
        console.print(f"this machine: {device.cores} cores, {human_bytes(device.total_ram_bytes)} RAM "
                      f"({human_bytes(device.model_budget_bytes)} available), "
                      f"{device.bandwidth_gbps:.1f} GB/s read bandwidth ({describe(device)})")
        refs = [ModelRef.parse(m) for m in model]
        paths = [str(r.path) for r in refs]
        prompt, gen = ctx // 2, 64
        fits = [fit_one(load_spec(p), None, ctx, device, fill=prompt + gen // 2) for p in paths]
        with console.status(f"measuring {Path(paths[0]).name} in a worker process…"):
            cand = Candidate(ref=refs[0], settings=RuntimeSettings(n_ctx=ctx, threads=device.cores or 2))
            outcome = run_isolated(measure_point, cand.model_dump(),
                                   {"prompt_tokens": prompt, "gen_tokens": gen, "warmup": 1, "repeats": 3})
        measured = None
        if outcome.ok:
            rates = []
            for run in outcome.value["runs"]:
                times = run["requests"][0]["token_times"]
                rates.append((len(times) - 1) / (times[-1] - times[0]))
            measured = {"peak_rss_bytes": outcome.peak_rss_bytes,
                        "decode_tps_median": statistics.median(rates)}
        t = Table("model", "quant", "total memory (pred.)", "verdict", "decode est.",
                  "peak RSS (meas.)", "decode (meas.)", title=f"ctx {ctx}, decode at {prompt + gen // 2} tokens of KV")
        for i, f in enumerate(fits):
            m = measured if i == 0 else None
            t.add_row(Path(f.model).name, f.quant, human_bytes(f.total_bytes), f.verdict,
                      f"{f.decode_tps_estimate:.0f} tok/s"
                      + (f" ({f.decode_tps_band[0]:.0f}-{f.decode_tps_band[1]:.0f})"
                         if f.decode_tps_band else ""),
                      human_bytes(m["peak_rss_bytes"]) if m else "-",
                      f"{m['decode_tps_median']:.0f} tok/s" if m else "-")
        console.print(t)
        if not outcome.ok:
            console.print(f"[red]measurement failed:[/] {outcome.error}")
        out.mkdir(parents=True, exist_ok=True)
        report = out / "check.json"
        report.write_text(json.dumps({"device": to_jsonable(device), "fit": to_jsonable(fits),
                                      "measured": measured, "error": outcome.error}, indent=2))
        console.print(f"written: {report}")
