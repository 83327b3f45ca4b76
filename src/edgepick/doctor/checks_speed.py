"""Speed checks: other work's CPU share while the model decodes (host_load; the bench's
contended marking, seed 000 §5.2, seed 004 §6.3), sustained speed against temperature and
frequency (thermal_throttling; seed 001 §5.4, seed 004 §6.3), and the first request against later
ones (cold_start; seed 001 §5.4 "首次推理特别慢")."""

from __future__ import annotations

import os
import statistics
import time

import psutil

from edgepick.backends import get_backend
from edgepick.bench.hostload import (CONTENDED_SHARE, OwnTree, describe, is_contended, load_between,
                                     snapshot)
from edgepick.doctor.checks import Skip, finding
from edgepick.doctor.checks_memory import SUSTAIN_S, sustained
from edgepick.doctor.finding import Evidence, Fix
from edgepick.units import whole_pct

WINDOW_TOKENS = 16
MIN_WINDOW_S = 2.0
COLD_RATIO = 3.0  # the first request this many times slower than the later ones …
COLD_MIN_S = 0.3  # … and at least this much slower


def _others(own_pids: set[int]) -> dict[int, psutil.Process]:
    out = {}
    for p in psutil.process_iter(["pid", "name", "cmdline"]):
        if p.pid in own_pids or p.pid == 0:
            continue
        try:
            p.cpu_percent(None)  # first call starts the process's own interval
            out[p.pid] = p
        except psutil.Error:
            continue
    return out


def _top(procs: dict[int, psutil.Process], n: int = 3) -> list[tuple[int, str, float]]:
    rows = []
    for pid, p in procs.items():
        try:
            share = p.cpu_percent(None)
            if share > 5:
                cmd = " ".join(p.info.get("cmdline") or [p.info.get("name") or "?"])
                rows.append((pid, cmd[:60], share))
        except psutil.Error:
            continue
    return sorted(rows, key=lambda r: -r[2])[:n]


def host_load(ctx):
    """Other work's share of all CPUs while the target decodes (never reused: a reading of the
    moment), with the processes behind it."""
    own = OwnTree()
    me = {os.getpid()} | {c.pid for c in psutil.Process().children(recursive=True)
                          if c.pid not in own.before}
    procs = _others(me)
    a = snapshot(own)
    if a is None:
        raise Skip("/proc/stat cannot be read here")
    tps = None
    t0 = time.monotonic()
    if ctx.target.model_path:
        eng = ctx.engine()
        g = eng.generate(ctx.prompts[0].messages, WINDOW_TOKENS, chat=True, ignore_eos=True)
        tps = g.decode_tps
    left = MIN_WINDOW_S - (time.monotonic() - t0)
    if left > 0:
        time.sleep(left)
    b = snapshot(own)
    load = load_between(a, b)
    if not is_contended(load):
        return None
    top = _top(procs)
    share = load["other_cpu_share"] + load.get("steal_share", 0)
    pids = " ".join(str(pid) for pid, _, _ in top)
    ev = [Evidence(what="other work's share of all CPUs while decoding", value=share,
                   limit=CONTENDED_SHARE, unit="share", command=ctx.doctor_cmd("slow")),
          Evidence(what="host", value=describe(load))]
    if tps is not None:
        base = ctx.target.deploy.baseline.decode_tps if ctx.target.deploy else None
        ev.append(Evidence(what="decode speed now", value=round(tps, 1), baseline=base,
                           unit="tok/s"))
    if top:
        ev.append(Evidence(what="busiest other processes (pid, command, % of one CPU)",
                           value=[list(t) for t in top]))
    return finding(
        ctx, "host_load",
        f"other work used {whole_pct(share)} of the CPUs while the model decoded (contended "
        f"above {whole_pct(CONTENDED_SHARE)})",
        Fix(text="stop or pause the other work before measuring or serving"
                 + (f" (busiest: {', '.join(f'{pid} {cmd}' for pid, cmd, _ in top)})" if top
                    else "") + "; bench waits for a quiet host with --quiet-wait",
            command=f"kill -STOP {pids}" if pids else None),
        min(0.95, 0.45 + share), ev, detail=top[0][1] if top else None)


def thermal_throttling(ctx):
    rep = sustained(ctx)
    if rep.get("error"):
        raise Skip(f"the sustained run failed: {rep['error']}")
    points = rep.get("timeline") or []
    if not any(p.get("temperature_c") is not None or p.get("cpu_freq_share") is not None
               for p in points):
        raise Skip("no temperature sensor or CPU frequency is readable on this host")
    if rep.get("throttled_after_s") is None:
        return None
    return finding(ctx, "thermal_throttling",
                   f"throttled after {rep['throttled_after_s']:g} s: {rep['throttle_reason']}",
                   Fix(text="limit continuous generation (shorter answers, pauses between "
                            "long runs), improve cooling, or choose a smaller build whose "
                            "sustained power fits the device (seed 004 §6.3, seed 001 §4.4)"),
                   0.85, [Evidence(what="throttling onset", value=rep["throttled_after_s"],
                                   unit="s", command=f"edgepick bench -m "
                                   f"{ctx.target.model_path} --sustain {SUSTAIN_S:g}"),
                          Evidence(what="timeline", value=points[:6])])


def cold_start(ctx):
    """A freshly loaded engine's first request against the next three, same prompt."""
    def measure() -> dict:
        cand = ctx.candidate()
        eng = get_backend(cand.backend)
        load_s = eng.load(cand)
        try:
            ttfts = []
            for _ in range(4):
                g = eng.generate(ctx.prompts[0].messages, 4, chat=True)
                ttfts.append(g.ttft_s or 0.0)
        finally:
            eng.unload()
        return {"load_s": load_s, "first_s": ttfts[0], "later_s": statistics.median(ttfts[1:])}

    m = ctx.measured("cold_start", [ctx.prompts[0].messages], measure)
    first, later = m["first_s"], m["later_s"]
    if not (first > COLD_RATIO * later and first - later > COLD_MIN_S):
        return None
    return finding(ctx, "cold_start",
                   f"the first request took {first:.2f} s to its first token, later ones "
                   f"{later:.2f} s (load {m['load_s']:.1f} s)",
                   Fix(text="send one short warm-up request right after the model loads, "
                            "before traffic (seed 001 §5.4: 预热推理); keep the file in the page "
                            "cache (mmap) and the engine loaded between requests"),
                   0.85, [Evidence(what="TTFT first request", value=round(first, 3),
                                   baseline=round(later, 3), unit="s",
                                   command=ctx.doctor_cmd("slow-first-token"))])
