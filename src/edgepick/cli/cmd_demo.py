"""`edgepick check`: probe this machine, plan the bundled models, and measure one to compare."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from edgepick.bench.runner import run as bench
from edgepick.bench.sweeps import BenchRequest
from edgepick.cli.options import STORE_HELP, open_store, split_list
from edgepick.cli.output import console, err_console, human_bytes, print_json, to_jsonable
from edgepick.devices.local import describe, local_device
from edgepick.fit.stage import FitRequest, run as fit
from edgepick.inputs import resolve_ref
from edgepick.records import RuntimeSettings


def register(app: typer.Typer) -> None:
    @app.command()
    def check(
        model: list[str] = typer.Option(["smollm2", "gemma3-270m"], "--model", "-m",
                                        help="models to plan (first one is measured)"),
        ctx: int = typer.Option(2048, help="context size"),
        out: Path = typer.Option(Path("edgepick-out/check"), help="output folder"),
        store: Optional[str] = typer.Option(None, "--store", help=STORE_HELP),
        fresh: bool = typer.Option(False, "--fresh", help="measure again what is stored"),
        threads: Optional[int] = typer.Option(None, "--threads", min=1,
                                              help="inference threads [default: this machine's "
                                                   "physical cores]"),
        json_out: bool = typer.Option(False, "--json", help="print check.json's content"),
    ) -> None:
        """Probe this machine, fit the models, then measure the first one: predicted vs measured."""
        say = err_console if json_out else console  # stdout stays clean for --json
        with say.status("reading this machine's probe…"):
            device = local_device(notify=say.print)
        say.print(f"this machine: {device.cores} cores, {human_bytes(device.total_ram_bytes)} RAM "
                      f"({human_bytes(device.model_budget_bytes)} available), "
                      f"{device.bandwidth_gbps:.1f} GB/s read bandwidth ({describe(device)})")
        refs = [resolve_ref(m) for m in split_list(model)]
        prompt, gen = ctx // 2, min(64, ctx // 4)  # both fit in the context, however small
        # fit predicts at the KV fill the measurement decodes at: mid-way through its answer
        fit_req = FitRequest.for_models(refs, ["native"], ctxs=[ctx], device=device,
                                        fill=prompt + gen // 2)
        bench_req = BenchRequest(
            models=refs[:1], settings=RuntimeSettings(n_ctx=ctx, threads=threads or device.cores or 2),
            prompt_lengths=[prompt], gen_tokens=gen, warmup=1, repeats=3)
        # fit and bench rows under one run, as their own commands store them: decide reads them
        with open_store(store) as rs:
            fits = fit(fit_req, rs)
            with say.status(f"measuring {refs[0].label} in a worker process…"):
                (res,) = bench(bench_req, rs, fresh=fresh)
        measured = None
        if res.status == "ok":
            measured = {"peak_rss_bytes": res.metric("peak_rss_bytes"),
                        "decode_tps_median": res.metric("decode_tps")}
        t = Table("model", "quant", "total memory (pred.)", "verdict", "decode est.",
                  "peak RSS (meas.)", "decode (meas.)", title=f"ctx {ctx}, decode at {prompt + gen // 2} tokens of KV")
        for i, f in enumerate(fits):
            m = measured if i == 0 else None
            t.add_row(Path(f.model).name, f.quant, human_bytes(f.total_bytes), f.verdict,
                      f"{f.decode_tps_estimate:.0f} tok/s"
                      + (f" ({f.decode_tps_band[0]:.0f}-{f.decode_tps_band[1]:.0f})"
                         if f.decode_tps_band else ""),
                      human_bytes(m["peak_rss_bytes"]) if m and m["peak_rss_bytes"] else "-",
                      f"{m['decode_tps_median']:.0f} tok/s" if m and m["decode_tps_median"] else "-")
        say.print(t)
        if res.cached:
            say.print(f"measurement reused from {rs.path} (--fresh measures again)",
                          style="dim")
        if res.status != "ok":
            say.print(f"[red]measurement failed:[/] {res.error}")
        out.mkdir(parents=True, exist_ok=True)
        report = out / "check.json"
        content = {"device": to_jsonable(device), "fit": to_jsonable(fits), "measured": measured,
                   "error": res.error, "run": rs.run_id, "store": str(rs.path)}
        report.write_text(json.dumps(content, indent=2))
        say.print(f"written: {report}; run {rs.run_id} in {rs.path}")
        if json_out:
            print_json(content)
