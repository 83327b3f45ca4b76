"""`edgepick fit`: what fits on the device, and how fast it can decode, before running anything."""

from __future__ import annotations

import typer
from rich.table import Table

from edgepick.cli.output import console, human_bytes, print_json
from edgepick.errors import EdgepickError

VERDICT_STYLE = {"fits": "green", "tight": "yellow", "no": "red"}


def _int_list(text: str, what: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise EdgepickError(f"--{what}: expected comma-separated integers, got '{text}'") from None
    if not values or any(v <= 0 for v in values):
        raise EdgepickError(f"--{what}: expected positive integers, got '{text}'")
    return values


def register(app: typer.Typer) -> None:
    @app.command()
    def fit(
        model: list[str] = typer.Option(..., "--model", "-m",
                                        help="GGUF, config.json or bundled name; repeatable"),
        quant: str = typer.Option("native", help="comma-separated types (F16,Q8_0,Q4_K_M…); "
                                                 "'native' = the file's own tensor types"),
        ctx: str = typer.Option("2048", help="comma-separated context sizes"),
        device: str = typer.Option("local", help="catalog name, 'local' (probe), or a YAML file"),
        kv_type: str = typer.Option("f16", help="KV cache type: f16, q8_0, q4_0, f32"),
        margin: float = typer.Option(0.20, help="safety margin on memory (the seeds' 20%)"),
        efficiency: float = typer.Option(None, help="override the bandwidth efficiency (0-1)"),
        fill: int = typer.Option(None, help="tokens in the KV cache while decoding "
                                            "(default: half the context)"),
        n_ubatch: int = typer.Option(512, help="prompt micro-batch size of the engine"),
        swa_full: bool = typer.Option(False, help="keep full-size KV on sliding-window layers"),
        json_out: bool = typer.Option(False, "--json", help="print a JSON list"),
    ) -> None:
        """Memory (weights + KV cache + overhead) against the device budget, and decode speed bounds."""
        from edgepick.devices import load_device
        from edgepick.fit.memory import KV_TYPE_NAMES
        from edgepick.fit.planner import fit_one
        from edgepick.models.spec import load_spec

        if kv_type not in KV_TYPE_NAMES:
            raise EdgepickError(f"--kv-type: unknown '{kv_type}'; known: {', '.join(KV_TYPE_NAMES)}")
        if not 0 <= margin < 5:
            raise EdgepickError(f"--margin: expected a fraction such as 0.2, got {margin}")
        if efficiency is not None and not 0 < efficiency <= 1:
            raise EdgepickError(f"--efficiency: expected a fraction in (0, 1], got {efficiency}")
        ctxs = _int_list(ctx, "ctx")
        quants = [q.strip() for q in quant.split(",") if q.strip()] or ["native"]
        specs = [load_spec(m) for m in model]
        if device == "local" and not json_out:
            with console.status("probing this machine (bandwidth, compute, engine decode)…"):
                dev = load_device(device)
        else:
            dev = load_device(device)
        rows = [fit_one(s, q, c, dev, kv_type=kv_type, margin=margin, efficiency=efficiency,
                        n_ubatch=n_ubatch, fill=fill, swa_full=swa_full)
                for s in specs for q in quants for c in ctxs]
        if json_out:
            print_json(rows)
            return
        t = Table(title=f"fit on {dev.name}: budget {human_bytes(dev.model_budget_bytes)}, "
                        f"{dev.bandwidth_gbps:g} GB/s, margin {margin:.0%}")
        for col in ("model", "quant", "ctx", "weights", "KV", "overhead", "total", "verdict",
                    "decode bound", "decode est.", "prefill est."):
            t.add_column(col, justify="left" if col in ("model", "quant", "verdict") else "right")
        for r in rows:
            t.add_row(r.model.rsplit("/", 1)[-1], r.quant + ("" if r.weights_exact else "*"),
                      str(r.ctx), human_bytes(r.weights_bytes), human_bytes(r.kv_cache_bytes),
                      human_bytes(r.overhead_bytes), human_bytes(r.total_bytes),
                      f"[{VERDICT_STYLE[r.verdict]}]{r.verdict}[/]",
                      f"{r.decode_tps_bound:.0f} tok/s", f"{r.decode_tps_estimate:.0f} tok/s",
                      f"{r.prefill_tps_estimate:.0f} tok/s" if r.prefill_tps_estimate else "-")
        console.print(t)
        console.print("* predicted from llama.cpp's per-tensor type rules; others read from the "
                      f"file. Decode at {rows[0].kv_fill_tokens if len(set(r.kv_fill_tokens for r in rows)) == 1 else 'half-context'} "
                      "tokens of KV fill.", style="dim")
        console.print(f"decode estimate: {_basis_text(dev, rows[0].decode_basis)}", style="dim")
        for r in rows:
            for note in r.fallbacks[:3]:
                console.print(f"[dim]{r.quant}: fallback {note}[/]")
            if len(r.fallbacks) > 3:
                console.print(f"[dim]{r.quant}: … {len(r.fallbacks) - 3} more fallbacks (see --json)[/]")
        risks = sorted({risk for r in rows for risk in r.risks})
        if risks:
            console.print("[bold]task priors[/] (seed 000 §3.3, seed 004 §2.3):")
            for risk in risks:
                console.print(f"  [yellow]•[/] {risk}")


def attention_text(cal) -> str:
    return " / ".join(f"{v:.2f}× at {w} B rows" for w, v in cal.attention_scales.items())


def compute_text(cal) -> str:
    """Each probed weight type's compute scale, then the one every other type takes."""
    parts = [f"{f} {v:.2f}×" for f, v in cal.compute_scales.items()]
    rest = f"{cal.compute_scale:.2f}×"
    return ", ".join(parts + [f"other types {rest}"]) if parts else f"{rest} for every type"


def _basis_text(dev, basis: str) -> str:
    cal = dev.decode_calibration
    if basis == "engine probe" and cal is not None:
        return (f"calibrated by decoding with the engine here: weights stream at "
                f"{cal.stream_gbps:.1f} GB/s, compute {compute_text(cal)}, attention "
                f"{attention_text(cal)} the AVX2 constants (edgepick probe shows the decodes)")
    if basis == "AVX2 constants":
        return ("per-type efficiencies and attention costs measured on an x86-64 AVX2 CPU "
                "(docs/fit.md); run with --device local on the target to calibrate them there")
    if basis == "--efficiency":
        return "bound × the --efficiency given"
    return (f"bound × {basis.split()[-1]} (the seeds' default; this CPU has no calibration: "
            "run with --device local on the target to measure one)")
