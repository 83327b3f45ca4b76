"""`edgepick probe` and `edgepick devices`: this machine measured, and the catalog."""

from __future__ import annotations

import typer
from rich.table import Table

from edgepick.cli.cmd_fit import attention_text, compute_text
from edgepick.cli.host_watch import ALLOW_HELP, HostWatch, keep_or_refuse
from edgepick.cli.output import console, err_console, human_bytes, print_json
from edgepick.cli.probe_backends import print_backend_devices, with_backend_devices
from edgepick.devices import local
from edgepick.devices.catalog import catalog
from edgepick.devices.probe import probe as run_probe


def register(app: typer.Typer) -> None:
    @app.command()
    def probe(
        json_out: bool = typer.Option(False, "--json", help="print JSON"),
        engine: bool = typer.Option(False, "--engine/--no-engine",
                                    help="also decode small synthetic models with the engine "
                                         "(20-30 s) to calibrate the decode-speed estimate"),
        rpc: list[str] = typer.Option([], "--rpc", help="an rpc-server HOST:PORT to list as a "
                                      "backend device of its own; repeatable"),
        allow_contended: bool = typer.Option(False, "--allow-contended", help=ALLOW_HELP),
    ) -> None:
        """Measure this machine (cores, RAM, bandwidth, compute) and cache it for --device local.

        Measure this machine now: cores, RAM, memory read bandwidth, compute, CPU features,
        sensors; with --engine, how fast the engine decodes here. Cached per machine and engine
        version for `--device local` (fit, check, plans)."""
        what = "bandwidth, compute and engine decode speed" if engine else "bandwidth and compute"
        with console.status(f"measuring memory {what}…"), HostWatch() as watch:
            dev = run_probe(engine=engine)
        keep_or_refuse(watch, "the probe", allow_contended)
        dev = with_backend_devices(dev, rpc)
        previous = local.read_cached()
        if not engine and previous is not None and previous.calibrated_at is not None:
            # its scales were solved against the bandwidth measured beside them, not this one
            err_console.print("[yellow]the cached engine calibration is replaced by this probe "
                              "without one; probe --engine measures a new one[/]")
        entry = local.save(dev, local.now() if dev.decode_calibration is not None else None)
        err_console.print(f"[dim]saved for --device local: {local.cache_path(entry.machine)}[/]")
        if json_out:
            print_json(dev)
            return
        bw = dev.extra["bandwidth"]
        t = Table(title="this machine (measured)", show_header=False)
        for k, v in [
            ("machine", dev.description), ("physical cores", dev.cores),
            ("RAM total", human_bytes(dev.total_ram_bytes)),
            ("RAM available (model budget)", human_bytes(dev.model_budget_bytes)),
            ("read bandwidth", f"{dev.bandwidth_gbps:.1f} GB/s median of {bw['runs']} "
                               f"(min {bw['min']:.1f}, max {bw['max']:.1f}; {bw['threads']} threads)"),
            ("FP32 matmul", f"{dev.compute_gflops:.0f} GFLOPS"),
            ("CPU features", ", ".join(dev.cpu_features) or "-"),
            ("temperatures", dev.extra["temperatures_c"] or "not exposed by the OS"),
            ("battery", dev.extra["battery"] or "none"),
            *_power_rows(dev.extra),
            ("load average", " ".join(f"{x:.2f}" for x in dev.extra["load_avg"])),
            *_calibration_rows(dev),
        ]:
            t.add_row(k, str(v))
        console.print(t)
        print_backend_devices(dev)

    @app.command()
    def devices(json_out: bool = typer.Option(False, "--json", help="print JSON")) -> None:
        """List the device catalog (use a name with --device, or a YAML file of your own)."""
        profiles = list(catalog().values())
        if json_out:
            print_json(profiles)
            return
        t = Table("name", "RAM", "model budget", "bandwidth", "compute", "power", "description")
        for d in profiles:
            t.add_row(d.name, human_bytes(d.total_ram_bytes), human_bytes(d.model_budget_bytes),
                      f"{d.bandwidth_gbps:g} GB/s",
                      f"{d.compute_gflops:g} GFLOPS" if d.compute_gflops else "-",
                      f"{d.power_budget_w:g} W" if d.power_budget_w else "-", d.description)
        console.print(t)


def _power_rows(extra: dict) -> list[tuple[str, str]]:
    """Power counters and thermal sensors with their paths; one line when there are none."""
    rows = [("power", extra.get("power", "not probed"))]
    rows += [("  source", line) for line in extra.get("power_sources", [])]
    sensors = extra.get("thermal_sensors") or {}
    rows.append(("thermal sensors", f"{len(sensors)} found" if sensors else
                 "none exposed by the OS (no temperature in the sustained timeline)"))
    rows += [(f"  {name}", path) for name, path in sensors.items()]
    freq = extra.get("cpufreq") or []
    rows.append(("cpu frequency", f"{len(freq)} cpufreq policies ({freq[0]}, …)" if freq else
                 "not exposed (throttling seen from speed and temperature only)"))
    return rows


def _calibration_rows(dev) -> list[tuple[str, str]]:
    cal = dev.decode_calibration
    if cal is None:
        return [("engine decode", dev.extra.get("engine_probe_error", "not measured (--no-engine)"))]
    probes = [(f"  {t['model'].removeprefix('synthetic-llama-').removesuffix('.gguf')} "
               f"@{t['fill']}", f"{t['measured_ms']:.1f} ms (constants "
               f"{t['predicted_default_ms']:.1f}, calibrated {t['predicted_ms']:.1f})")
              for t in cal.timings]
    return [("engine weight streaming", f"{cal.stream_gbps:.1f} GB/s"),
            ("engine compute", f"{compute_text(cal)} the AVX2 constants ({cal.method}; "
                               "each probed type pulled toward 1)"),
            ("engine attention", f"{attention_text(cal)} the AVX2 constants "
                                 "(K+V bytes per cached position and layer)"),
            ("engine probe decodes", f"{len(probes)}: file @ cached tokens, measured ms per token"),
            *probes]
