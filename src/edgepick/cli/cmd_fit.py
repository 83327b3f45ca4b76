"""`edgepick fit`: what fits on the device, and how fast it can decode, before running anything."""

from __future__ import annotations

import typer
from rich import box
from rich.table import Table

from edgepick.cli.fit_place import auto_placement, place_rows, placement_from_options, print_plans
from edgepick.cli.host_watch import ALLOW_HELP, HostWatch, keep_or_refuse
from edgepick.cli.options import STORE_HELP, int_list, merged, open_store, split_list
from edgepick.cli.output import console, err_console, print_json
from edgepick.cli.remote_text import say_remote
from edgepick.devices import load_device
from edgepick.devices.local import describe, local_device
from edgepick.errors import EdgepickError
from edgepick.fit.memory import KV_TYPE_NAMES
from edgepick.fit.speed import band_text
from edgepick.fit.stage import FitRequest, run
from edgepick.inputs import resolve_ref
from edgepick.llama_tools import repack_reason
from edgepick.records.candidate import DEFAULTS
from edgepick.units import whole_pct

VERDICT_STYLE = {"fits": "green", "tight": "yellow", "no": "red"}


def _check_flags(kv_type, kv_type_v, batch: int, margin: float, efficiency) -> None:
    for flag, value in (("--kv-type", kv_type), ("--kv-type-v", kv_type_v)):
        if value is not None and value not in KV_TYPE_NAMES:
            raise EdgepickError(f"{flag}: unknown '{value}'; known: {', '.join(KV_TYPE_NAMES)}")
    if batch < 1:
        raise EdgepickError(f"--batch: expected a positive number of tokens, got {batch}")
    if not 0 <= margin < 5:
        raise EdgepickError(f"--margin: expected a fraction such as 0.2, got {margin}")
    if efficiency is not None and not 0 < efficiency <= 1:
        raise EdgepickError(f"--efficiency: expected a fraction in (0, 1], got {efficiency}")


def _device(device: str, calibrate: bool, refresh: bool, allow_contended: bool = False):
    """The device profile: this machine probed (once, then cached) for `local`, else a catalog
    name or profile file. A measurement asked for (--calibrate, --refresh) on a busy host is
    refused unless allowed; the first probe, taken because there was none, is kept with a
    warning (--refresh measures again)."""
    if device == "local":
        asked = calibrate or refresh
        with HostWatch() as watch:
            dev = local_device(calibrate=calibrate, refresh=refresh,
                               notify=lambda m: err_console.print(f"[dim]{m}…[/]"),
                               accept=lambda _p: keep_or_refuse(
                                   watch, "this machine's probe", allow_contended or not asked,
                                   "--allow-contended" if asked else
                                   "the first probe; fit --refresh measures again"))
        err_console.print(f"[dim]device local: {describe(dev)}[/]")
    elif calibrate or refresh:
        raise EdgepickError("--calibrate and --refresh measure this machine: use --device local")
    else:
        dev = load_device(device)
    return dev


def _print_notes(rows) -> None:
    """What fit approximated or assumed, under its tables: fallbacks, warnings, repacking,
    the MoE prefill basis and the tasks' risk priors."""
    for r in {(r.model, r.quant): r for r in rows}.values():  # one build's fallbacks, once
        for note in r.fallbacks[:3]:
            console.print(f"[dim]{r.quant}: fallback {note}[/]")
        if len(r.fallbacks) > 3:
            console.print(f"[dim]{r.quant}: and {len(r.fallbacks) - 3} more fallbacks (see --json)[/]")
    for warning in sorted({w for r in rows for w in r.warnings}):
        err_console.print(f"[yellow]approximated:[/] {warning}")
    if (why := repack_reason()) is not None:  # the need counts repacked weights
        err_console.print(f"{why} (the need above counts llama.cpp's repacked copies: "
                          "without them it is lower, and decoding slower)", highlight=False)
    moe = [r for r in rows if r.prefill_basis]
    if moe:
        console.print(f"[dim]{moe[0].prefill_basis}[/]")
    risks = sorted({risk for r in rows for risk in r.risks})
    if risks:
        console.print("[bold]task priors[/] (seed 000 §3.3, seed 004 §2.3):")
        for risk in risks:
            console.print(f"  [yellow]•[/] {risk}")


def fit(
    model: list[str] = typer.Option(..., "--model", "-m",
                                    help="GGUF, config.json, bundled name, or a GGUF where "
                                    "it lives (https://…/x.gguf, hf:ORG/REPO/FILE.gguf"
                                    "[@REV]: header only); repeatable"),
    quant: list[str] = typer.Option(["native"], "--quant", help="types, comma-separated or "
                                    "repeated (F16,Q8_0,Q4_K_M…); 'native' = the file's own"),
    ctx: list[str] = typer.Option([str(DEFAULTS.n_ctx)], "--ctx",
                                  help="context sizes in tokens, comma-separated or repeated"),
    device: str = typer.Option("local", help="catalog name, 'local' (probe), or a YAML file"),
    kv_type: str = typer.Option(DEFAULTS.kv_type, help="KV cache type: f16, q8_0, q4_0, f32 "
                                "(K and V; -ctk)"),
    kv_type_v: str = typer.Option(None, "--kv-type-v", help="the V cache's type when it "
                                  "differs from K's (-ctv)"),
    flash_attn: bool = typer.Option(DEFAULTS.flash_attn, "--flash-attn/--no-flash-attn",
                                    help="flash attention (-fa): sets the compute buffer; a "
                                         "quantized V cache needs it"),
    batch: int = typer.Option(DEFAULTS.n_batch, "--batch",
                              help="logical batch size of the engine (n_batch, -b)"),
    adapter: str = typer.Option(None, "--adapter", help="a LoRA adapter GGUF loaded with "
                                "the model: checked against it, its bytes counted"),
    margin: float = typer.Option(0.20, help="safety margin on memory (the seeds' 20%)"),
    efficiency: float = typer.Option(None, help="override the bandwidth efficiency (0-1)"),
    fill: int = typer.Option(None, help="tokens in the KV cache while decoding "
                                        "(default: half the context)"),
    ubatch: int = typer.Option(DEFAULTS.n_ubatch, "--ubatch",
                               help="prompt micro-batch size of the engine (n_ubatch)"),
    n_ubatch: int = typer.Option(None, "--n-ubatch", hidden=True),
    swa_full: bool = typer.Option(False, help="keep full-size KV on sliding-window layers"),
    mmap: bool = typer.Option(DEFAULTS.mmap, "--mmap/--no-mmap",
                              help="the engine maps the file (weights stay file pages) or "
                                   "reads it into memory"),
    calibrate: bool = typer.Option(False, "--calibrate", help="with --device local: also "
                                   "measure the engine's decode speed here (20-30 s), cached"),
    refresh: bool = typer.Option(False, "--refresh", help="with --device local: measure "
                                 "this machine again instead of reading its cached probe"),
    allow_contended: bool = typer.Option(False, "--allow-contended", help=ALLOW_HELP),
    store: str = typer.Option(None, "--store", help=STORE_HELP),
    ngl: str = typer.Option(None, "--ngl", help="place the model: the last N layers (the "
                            "output layer first) or 'all' on the devices (-ngl)"),
    ot: list[str] = typer.Option([], "--ot", help="tensor overrides PATTERN=BUFFER, e.g. "
                                 r"'\.ffn_.*_exps=CPU' (-ot); repeatable"),
    n_cpu_moe: int = typer.Option(0, "--n-cpu-moe", min=0, help="keep the experts of the "
                                  "first N layers on the CPU (--n-cpu-moe)"),
    tensor_split: str = typer.Option(None, "--tensor-split", help="share of the offloaded "
                                     "layers per device, e.g. 3,1 (-ts)"),
    rpc: list[str] = typer.Option([], "--rpc", help="an rpc-server HOST:PORT holding "
                                  "layers as a device of its own (--rpc); repeatable"),
    place: str = typer.Option(None, "--place", help="'auto': choose -ngl (and -ot for "
                              "experts) as llama.cpp's --fit does, within the host's memory too"),
    fit_target: str = typer.Option(None, "--fit-target", help="with --place auto: MiB to "
                                   "leave free per device (llama.cpp's --fit-target; 1024)"),
    slots: int = typer.Option(None, "--slots", min=1, help="plan for llama-server with N "
                              "slots (-np), which reserves N logits rows; default: the "
                              "in-process engine, which reserves n_batch rows"),
    json_out: bool = typer.Option(False, "--json", help="print a JSON list"),
) -> None:
    """Predict whether models fit a device before running them: memory against the budget
    (fits / tight / no), speed bounds.

    Memory the model needs (anonymous memory + the file pages it reads; repacked
    originals shown as reclaimable) against the device budget, and decode speed bounds; an
    engine that cannot run the model's architecture is refused in one line; estimates of
    the files themselves are stored for `decide`."""
    _check_flags(kv_type, kv_type_v, batch, margin, efficiency)
    n_ubatch = merged(ubatch, n_ubatch, "--n-ubatch", "--ubatch")
    ctxs = int_list(ctx, "--ctx")
    quants = split_list(quant) or ["native"]
    refs = [resolve_ref(m, remote_ok=True) for m in split_list(model)]
    say_remote(refs)
    dev = _device(device, calibrate, refresh, allow_contended)
    placement = placement_from_options(dev, ngl, ot, n_cpu_moe, tensor_split, rpc)
    settings = dict(kv_type=kv_type, kv_type_v=kv_type_v, flash_attn=flash_attn,
                    n_batch=batch, n_ubatch=n_ubatch, n_outputs_max=slots, swa_full=swa_full)
    if place is not None:
        placement = _auto(place, placement, refs, quants, ctxs, dev, ngl, ot, n_cpu_moe,
                          fit_target, settings)
    req = FitRequest.for_models(refs, quants, adapter=adapter, ctxs=ctxs, device=dev,
                                kv_type=kv_type,
                                margin=margin, efficiency=efficiency, fill=fill,
                                n_ubatch=n_ubatch, swa_full=swa_full, mmap=mmap,
                                flash_attn=flash_attn, n_batch=batch, kv_type_v=kv_type_v)
    with open_store(store) as rs:
        rows = run(req, rs)
    plans = None
    if placement is not None:
        rows, plans = place_rows(rows, refs, quants, ctxs, dev, placement,
                                 dict(settings, mmap=mmap, fill=fill), margin)
    if json_out:
        print_json(rows if plans is None else [
            dict(r.model_dump(mode="json"), placement_plan=p.model_dump(mode="json"))
            for r, p in zip(rows, plans)])
        return
    per_model = len(rows) // max(1, len(refs))
    names = [refs[i // per_model].label if per_model else r.model for i, r in enumerate(rows)]
    if plans is None:  # 'native' and the file's own type named again give the same row: once
        once = {(n, r.model_dump_json()): (r, n) for r, n in zip(rows, names)}
        rows, names = [r for r, _ in once.values()], [n for _, n in once.values()]
    _print_tables(rows, names, dev, margin)
    if plans is not None:
        print_plans(rows, names, plans)
    _print_notes(rows)


def register(app: typer.Typer) -> None:
    app.command()(fit)


def _auto(place, placement, refs, quants, ctxs, dev, ngl, ot, n_cpu_moe, fit_target,
          settings):
    if place != "auto":
        raise EdgepickError(f"--place: expected 'auto', got {place!r}")
    if ngl is not None or ot or n_cpu_moe:
        raise EdgepickError("--place auto chooses -ngl and -ot itself: drop --ngl, --ot and "
                            "--n-cpu-moe")
    if len(refs) != 1 or len(quants) != 1 or len(ctxs) != 1:
        raise EdgepickError("--place auto places one model at one type and one context")
    base = placement or placement_from_options(dev, "0", [], 0, None, [])
    quant = None if quants[0] == "native" else quants[0]
    return auto_placement(refs[0], quant, ctxs[0], dev, base, fit_target, settings)


def _print_tables(rows, names: list[str], dev, margin: float) -> None:
    """Memory, then speed: two narrow tables, so that both read at 80 columns."""
    mib = lambda n: f"{n / 2**20:.1f}"  # noqa: E731
    mem = Table(title=f"memory on {dev.name}, MiB: budget {mib(dev.model_budget_bytes)}, "
                      f"margin {whole_pct(margin)}", box=box.SIMPLE_HEAD)
    speed = Table(title=f"decode speed, tok/s ({dev.bandwidth_gbps:g} GB/s)", box=box.SIMPLE_HEAD)
    for t, cols in ((mem, ("model", "quant", "ctx", "weights", "KV", "other", "reclaim", "need",
                           "verdict")),
                    (speed, ("model", "quant", "ctx", "KV fill", "bound", "estimate", "band",
                             "prefill"))):
        for col in cols:
            t.add_column(col, justify="left" if col in ("model", "quant", "verdict") else "right")
    for name, r in zip(names, rows):
        quant = r.quant + ("" if r.weights_exact else "*")
        mem.add_row(name, quant, str(r.ctx), mib(r.weights_bytes), mib(r.kv_cache_bytes),
                    mib(r.overhead_bytes), f"-{mib(r.reclaimable_bytes)}" if r.reclaimable_bytes else "0", mib(r.total_bytes),
                    f"[{VERDICT_STYLE[r.verdict]}]{r.verdict}[/]")
        band = r.decode_tps_band
        speed.add_row(name, quant, str(r.ctx), str(r.kv_fill_tokens), f"{r.decode_tps_bound:.0f}",
                      f"{r.decode_tps_estimate:.0f}",
                      f"{band[0]:.0f}-{band[1]:.0f}" if band else "none",
                      f"{r.prefill_tps_estimate:.0f}" if r.prefill_tps_estimate else "-")
    console.print(mem)
    console.print("* types predicted from llama.cpp's per-tensor rules; others read from the file",
                  style="dim")
    console.print("need = anonymous memory + the file pages read while running; reclaim = "
                  "mapped pages never read after load (repacked originals, an untied "
                  "embedding), resident until the kernel wants them back (docs/fit.md)",
                  style="dim")
    r0 = rows[0]
    # several models: name each buffer, or the reader cannot tell whose 514 MiB it is
    who = (lambda n: f"{n} ") if len(set(names)) > 1 else (lambda n: "")
    reserved = ", ".join(dict.fromkeys(f"{who(n)}{mib(r.compute_buffer_bytes)} MiB at ctx {r.ctx}"
                                       for n, r in zip(names, rows) if r.compute_buffer_bytes))
    lead = "compute buffers: " if len(set(names)) > 1 else "a compute buffer of "
    console.print(f"llama.cpp reserves {lead}{reserved} (flash attention "
                  f"{'on' if r0.flash_attn else 'off'}, n_batch {r0.n_batch}, n_ubatch "
                  f"{r0.n_ubatch}); KV {r0.kv_type}/{r0.kv_type_v or r0.kv_type}; the need counts "
                  "what a batch touches of it", style="dim")
    console.print(speed)
    console.print(f"estimate: {_basis_text(dev, rows[0].decode_basis)}", style="dim")
    console.print(f"{band_text(rows[0].decode_basis)}; bound and estimate at the same KV fill; "
                  "prefill is coarse and not validated", style="dim")


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
                "(docs/fit.md); fit --device local --calibrate on the target calibrates them there")
    if basis == "--efficiency":
        return "bound × the --efficiency given"
    if basis == "device spec":
        threads = dev.threads_default or dev.cores
        return (f"{dev.name}'s own figures: {dev.bandwidth_gbps:g} GB/s × the seeds' efficiency, "
                f"and its compute at {threads or '?'} threads; nothing measured on this host")
    return (f"bound × {basis.split()[-1]} (the seeds' default; this CPU has no calibration: "
            "fit --device local --calibrate on the target measures one)")
