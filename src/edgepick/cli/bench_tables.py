"""Bench results as rich tables (results, and each curve) for `edgepick bench`, and as flat CSV
rows."""

from __future__ import annotations

import csv
from pathlib import Path

from rich.table import Table

from edgepick.records.bench import BenchResult
from edgepick.units import mib, whole_pct

CSV_STATS = ("median", "min", "max", "p99")
CSV_METRICS = ("ttft_ms", "prefill_tps", "decode_tps", "itl_ms", "e2e_ms", "load_ms",
               "peak_rss_bytes", "peak_rss_swap_bytes", "throughput_tps")
CSV_SETTINGS = ("backend", "threads", "n_ctx", "n_batch", "n_ubatch", "kv_type", "flash_attn",
                "seed", "prompt_tokens", "gen_tokens", "warmup", "repeats", "concurrency",
                "sustain_s", "engine_version")


def _f(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def short(model: str) -> str:
    """A file's name, not its whole path; URLs and bundled names as given."""
    return model if "://" in model else Path(model).name


def results_table(results: list[BenchResult]) -> Table:
    # units in the title, short headers: the table reads as a table at 100 columns
    t = Table(title="edgepick bench, medians: TTFT, ITL (P50/P99), e2e in ms; prefill, decode "
                    "in tok/s; peak RSS in MiB", header_style="bold")
    t.add_column("model / config")  # no min_width: rich crops a table whose minimums do not fit
    for col in ("status", "TTFT", "prefill", "decode", "ITL", "e2e", "RSS", "note"):
        t.add_column(col)
    for r in results:
        note = r.error or ("stored" if r.cached else "")
        if r.sweep == "concurrency" and r.metric("throughput_tps") is not None:
            note = f"aggregate {r.metric('throughput_tps'):.1f} tok/s" + \
                (" (stored)" if r.cached else "")
        if r.sustain is not None and r.sustain.decay_pct is not None:
            note = f"decay {r.sustain.decay_pct:.1f}%" + (" FLAG >30%" if r.sustain.flagged else "")
        if r.contended and r.host_load is not None:
            share = (r.host_load.other_cpu_share or 0) + (r.host_load.steal_share or 0)
            note = (note + "; " if note else "") + f"[yellow]contended[/] (others {whole_pct(share)} CPU)"
        itl = "-" if "itl_ms" not in r.metrics else \
            f"{r.metric('itl_ms'):.1f}/{_f(r.metric('itl_ms', 'p99'))}"
        status = "[green]ok[/]" if r.status == "ok" else "[red]failed[/]"
        t.add_row(f"{short(r.model)}\n{r.config}", status, _f(r.metric("ttft_ms")),
                  _f(r.metric("prefill_tps")), _f(r.metric("decode_tps")), itl,
                  _f(r.metric("e2e_ms"), 0), mib(r.metric("peak_rss_bytes"), unit=False), note)
    return t


def _group(results: list[BenchResult]) -> dict[tuple, list[BenchResult]]:
    groups: dict[tuple, list[BenchResult]] = {}
    for r in results:
        groups.setdefault((short(r.model), r.settings.get("threads")), []).append(r)
    return groups


def curve_tables(results: list[BenchResult]) -> list[Table]:
    tables = []
    for (model, threads), rs in _group(results).items():
        ok = [r for r in rs if r.status == "ok"]
        lengths = sorted((r for r in ok if r.sweep == "prompt_length"),
                         key=lambda r: r.settings["prompt_tokens"])
        if len(lengths) > 1:
            t = Table(title=f"{model}, {threads} threads: TTFT and memory vs prompt length")
            for c in ("prompt tokens", "TTFT ms (median)", "TTFT ms (min–max)", "prefill tok/s",
                      "peak RSS MiB"):
                t.add_column(c)
            for r in lengths:
                t.add_row(str(r.settings["prompt_tokens"]), _f(r.metric("ttft_ms")),
                          f"{_f(r.metric('ttft_ms', 'min'))}–{_f(r.metric('ttft_ms', 'max'))}",
                          _f(r.metric("prefill_tps")), mib(r.metric("peak_rss_bytes"), unit=False))
            tables.append(t)
        conc = [r for r in ok if r.sweep == "concurrency"]
        if conc:
            base_len = conc[0].settings["prompt_tokens"]
            single = [r for r in lengths if r.settings["prompt_tokens"] == base_len]
            rows = sorted(single + conc, key=lambda r: r.settings["concurrency"])
            t = Table(title=f"{model}, {threads} threads: concurrent requests "
                            f"(prompt {base_len} tokens)")
            for c in ("requests", "TTFT ms", "e2e ms per request", "decode tok/s per request",
                      "aggregate tok/s", "peak RSS MiB"):
                t.add_column(c)
            for r in rows:
                agg = r.metric("throughput_tps")
                if agg is None:  # one request: its own decode rate is the aggregate
                    agg = r.metric("decode_tps")
                t.add_row(str(r.settings["concurrency"]), _f(r.metric("ttft_ms")),
                          _f(r.metric("e2e_ms"), 0), _f(r.metric("decode_tps")), _f(agg),
                          mib(r.metric("peak_rss_bytes"), unit=False))
            tables.append(t)
        for r in (r for r in ok if r.sustain is not None):
            s = r.sustain
            t = Table(title=f"{model}, {threads} threads: sustained run of {s.duration_s:g} s")
            t.add_column(f"window ({s.window_s:g} s)")
            t.add_column(f"tok/s ({s.requests} requests)")
            # only the timeline's columns something was read for (no sensor: no column)
            cols = [(c, fn) for c, fn in (
                ("hottest °C", lambda p: _f(p.temperature_c)),
                ("power W", lambda p: _f(p.power_w, 2)),
                ("RssAnon MiB", lambda p: mib(p.anon_swap_bytes, unit=False)))
                if any(fn(p) != "-" for p in s.timeline)]
            for c, _ in cols:
                t.add_column(c)
            points = {round(p.t_s, 2): p for p in s.timeline}
            for i, v in enumerate(s.window_tps):
                p = points.get(round(i * s.window_s, 2))
                t.add_row(f"{i * s.window_s:g}–{(i + 1) * s.window_s:g} s", _f(v),
                          *[fn(p) if p else "-" for _, fn in cols])
            verdict = "-" if s.decay_pct is None else f"{s.decay_pct:.1f}%" + \
                (" [red]over 30%: unfit for long sessions[/]" if s.flagged else "")
            t.add_row("decay first→last", verdict)
            visible = any(p.temperature_c is not None or p.cpu_freq_share is not None
                          for p in s.timeline)
            t.add_row("throttling", f"[red]throttled after {s.throttled_after_s:g} s[/]: "
                      f"{s.throttle_reason}" if s.throttled_after_s is not None else
                      "not seen" if visible else "unmeasured (no temperature sensor, no cpufreq)")
            growth = "-" if s.memory_growth_mib_per_1k is None else \
                f"{s.memory_growth_mib_per_1k:.2f} MiB per 1000 tokens" + \
                (f" [red]over {s.memory_growth_threshold:g}: growing[/]"
                 if s.memory_growth_flagged else "")
            t.add_row("memory growth", growth)
            tables.append(t)
        if any(r.energy and r.energy.power_w is not None for r in ok):
            tables.append(energy_table(model, threads, ok))
    return tables


def energy_table(model: str, threads, results: list[BenchResult]) -> Table:
    source = next(r.energy.source for r in results if r.energy and r.energy.source)
    t = Table(title=f"{model}, {threads} threads: energy ({source})")
    for c in ("configuration", "power W", "idle W", "net W", "J / generated token",
              "J / prompt token", "note"):
        t.add_column(c)
    for r in results:
        e = r.energy
        if e is None:
            continue
        t.add_row(r.config, _f(e.power_w, 2), _f(e.idle_power_w, 2), _f(e.net_power_w, 2),
                  _f(e.energy_per_token_j, 4), _f(e.prefill_energy_per_token_j, 5), e.note or "")
    return t


def flat_row(r: BenchResult) -> dict:
    row = {"model": r.model, "model_path": r.model_path, "sweep": r.sweep, "config": r.config,
           "status": r.status, "error": r.error or ""}
    for k in CSV_SETTINGS:
        row[k] = r.settings.get(k, "")
    for m in CSV_METRICS:
        for s in CSV_STATS:
            v = r.metric(m, s)
            row[f"{m}_{s}"] = "" if v is None else v
    row["sustain_decay_pct"] = "" if not r.sustain or r.sustain.decay_pct is None \
        else r.sustain.decay_pct
    row["sustain_window_tps"] = "" if not r.sustain else \
        " ".join(f"{v:.2f}" for v in r.sustain.window_tps)
    row["load_avg_before"] = " ".join(map(str, r.machine.load_avg_before))
    row["temperature_c_before"] = r.machine.temperature_c_before or ""
    e = r.energy
    for k in ("power_w", "idle_power_w", "energy_per_token_j", "prefill_energy_per_token_j"):
        v = getattr(e, k) if e else None
        row[k] = "" if v is None else v
    row["contended"] = r.contended
    row["other_cpu_share"] = "" if not r.host_load or r.host_load.other_cpu_share is None \
        else r.host_load.other_cpu_share
    row["key"] = r.key
    return row


def write_csv(results: list[BenchResult], path: str | Path) -> None:
    rows = [flat_row(r) for r in results]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        if not rows:
            return
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
