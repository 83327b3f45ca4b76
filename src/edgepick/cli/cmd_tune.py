"""`edgepick tune`: the fastest runtime settings whose fidelity and gates pass on a device, found
one axis at a time instead of over the whole grid (tune/search.py, docs/tune.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from edgepick.cli.cmd_fidelity import _progress
from edgepick.cli.output import console, err_console, print_json
from edgepick.decide.scenarios import load_scenario
from edgepick.devices import load_device
from edgepick.devices.local import local_device
from edgepick.errors import EdgepickError
from edgepick.inputs import resolve_ref
from edgepick.records.candidate import RuntimeSettings
from edgepick.tune.search import ContendedChoice, TuneRequest, run, write_fragment

# the grid searched when the user names none (seed 000 §4.4, seed 001 §4.3, seed 004 §5.2)
DEFAULT_AXES = {"threads": None, "n_ubatch": [128, 512], "flash_attn": [True, False],
                "kv_type": ["f16", "q8_0", "q4_0"]}


def _values(text: Optional[str], field: str) -> list | None:
    if text is None:
        return None

    kind = type(getattr(RuntimeSettings(), field))
    out = []
    for word in [w.strip() for w in text.split(",") if w.strip()]:
        if kind is bool:
            if word.lower() not in ("on", "off", "true", "false"):
                raise EdgepickError(f"--{field.replace('_', '-')}: '{word}' is not on or off")
            out.append(word.lower() in ("on", "true"))
        elif kind is int:
            if not word.isdigit() or int(word) < 1:
                raise EdgepickError(f"--{field.replace('_', '-')}: '{word}' is not a positive "
                                    "whole number")
            out.append(int(word))
        else:
            out.append(word)
    return out


def register(app: typer.Typer) -> None:
    @app.command()
    def tune(
        model: str = typer.Argument(..., help="GGUF or bundled name"),
        device: str = typer.Option("local", help="catalog name, 'local' (probe), or a YAML file"),
        scenario: str = typer.Option("realtime_chat", help="preset name or scenario YAML: its "
                                     "speed gates and context lengths"),
        ctx: int = typer.Option(2048, "--ctx", help="the context size (n_ctx) to run with"),
        kv_type: Optional[str] = typer.Option(None, "--kv-type", help="KV cache types to try, "
                                              "comma-separated [default: f16,q8_0,q4_0]"),
        flash_attn: Optional[str] = typer.Option(None, "--flash-attn", help="on,off [default: "
                                                 "both]"),
        threads: Optional[str] = typer.Option(None, "--threads", help="thread counts to try "
                                              "[default: 1 up to the device's cores]"),
        ubatch: Optional[str] = typer.Option(None, "--ubatch", help="micro-batch sizes to try "
                                             "[default: 128,512]"),
        kld_max: float = typer.Option(0.01, "--kld-max", help="the most (nats, mean KLD against "
                                      "the f16-KV baseline) a faster setting may move the answers"),
        repeats: int = typer.Option(3, "--repeats", help="bench repeats per point"),
        out: Optional[Path] = typer.Option(None, "--out", help="write the chosen settings as a "
                                           "plan fragment (runtime:) to this file"),
        json_out: bool = typer.Option(False, "--json", help="print the result as JSON"),
        allow_contended: bool = typer.Option(False, "--allow-contended", help="choose even when "
                                             "other work used more than a quarter of the CPUs "
                                             "during a measurement (tune refuses by default)"),
        quiet_wait: float = typer.Option(0.0, "--quiet-wait", help="seconds to wait, before "
                                         "each point, for the host to be quiet"),
    ) -> None:
        """Find the fastest runtime settings of a model whose gates and answers still pass.

        Settings that cannot run or fit are never run; one axis is searched at a time
        (threads, batch sizes, flash attention, the KV type); a value that breaks the
        scenario's speed gates or is slower is dropped; a faster setting that can change the
        answers is kept only while its KLD against the f16-KV baseline stays under --kld-max.
        Says how many points of the grid it measured and why it skipped the rest. A point
        measured while other work used more than a quarter of the CPUs is flagged, as bench
        flags it, and tune then chooses nothing unless --allow-contended (docs/tune.md)."""
        ref = resolve_ref(model)
        if ref.is_endpoint:
            raise EdgepickError("tune measures a model file on this machine, not an endpoint")
        if out is not None and out.exists():
            raise EdgepickError(f"{out} exists; tune never overwrites a file: name another")
        dev = _device(device)
        cores = dev.cores or 2
        axes = {"threads": _values(threads, "threads") or list(range(1, cores + 1)),
                "n_ubatch": _values(ubatch, "n_ubatch") or DEFAULT_AXES["n_ubatch"],
                "flash_attn": _values(flash_attn, "flash_attn") or DEFAULT_AXES["flash_attn"],
                "kv_type": _values(kv_type, "kv_type") or DEFAULT_AXES["kv_type"]}
        req = TuneRequest(model=ref, device=dev, scenario=load_scenario(scenario),
                          base=RuntimeSettings(n_ctx=ctx, threads=axes["threads"][0]),
                          axes=axes, kld_max=kld_max, repeats=repeats,
                          allow_contended=allow_contended, quiet_wait_s=quiet_wait)
        try:
            with _progress(not json_out) as tick:
                res = run(req, None, tick or (lambda ev: None))
        except ContendedChoice as exc:  # what was measured is shown; nothing is chosen
            if json_out:
                print_json(exc.result.model_dump(mode="json"))
            else:
                _print(exc.result, chosen=False)
            raise
        if out is not None:
            write_fragment(res, out)
            err_console.print(f"wrote {out}")
        if json_out:
            print_json(res.model_dump(mode="json"))
            return
        _print(res)

    def _device(name: str):
        if name != "local":
            return load_device(name)

        return local_device()


def _print(res, chosen: bool = True) -> None:
    t = Table(title=f"{res.model} on {res.device} ({res.scenario}, {res.ctx}-token prompt)")
    for col in ("settings", "outcome", "decode tok/s", "TTFT ms", "KLD", "why"):
        t.add_column(col)
    shown = [p for p in res.points if p.outcome not in ("not_measured", "cannot_run",
                                                        "does_not_fit")]
    for p in shown:
        t.add_row(", ".join(f"{k}={v}" for k, v in p.settings.items()) or "base", p.outcome,
                  "-" if p.decode_tps is None else f"{p.decode_tps:.1f}",
                  "-" if p.ttft_ms is None else f"{p.ttft_ms:.0f}",
                  "-" if p.kld_mean is None else f"{p.kld_mean:.4f}", p.why)
    console.print(t)
    skipped = ", ".join(f"{n} {why.replace('_', ' ')}" for why, n in sorted(res.skipped().items()))
    console.print(f"measured {res.measured} of {res.grid} combinations; skipped: "
                  f"{skipped or 'none'}")
    for line in res.contended:
        console.print(f"[yellow]contended[/]: {line}")
    if not chosen:
        return
    if res.contended:
        console.print("[yellow]chosen from contended measurements (--allow-contended)[/]")
    picked = {k: v for k, v in res.chosen.model_dump().items() if k != "variant"}
    console.print("chosen: " + ", ".join(f"{k}={v}" for k, v in picked.items()))
