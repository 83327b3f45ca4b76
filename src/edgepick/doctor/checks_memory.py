"""Memory checks: fit's need and the measured need against the budget, and which phase peaks,
load (the weights) or inference (KV cache and compute buffers) (memory_budget; seed 001 §5.3,
seed 004 §6.1); MiB per 1000 tokens over a sustained run (memory_growth; seed 000 §5.3, seed
003 §8.2)."""

from __future__ import annotations

import importlib
import shlex
import time

import psutil

from edgepick.bench.need import measure_need as worker, need_bytes
from edgepick.bench.runner import measure_config
from edgepick.bench.sustained import memory_growth as slope_of
from edgepick.bench.sweeps import BenchRequest, expand
from edgepick.devices.catalog import load_device
from edgepick.devices.probe import cpu_features
from edgepick.doctor.checks import Skip, finding
from edgepick.doctor.finding import Evidence, Fix
from edgepick.errors import EdgepickError
from edgepick.fit.planner import fit_one
from edgepick.launch import run_isolated
from edgepick.models.spec import spec_of
from edgepick.monitor.live import scrape
from edgepick.records.device import DeviceProfile
from edgepick.units import human_bytes as format_bytes

SUSTAIN_S = 12.0  # a few hundred tokens on a busy 2-core host: enough for a stable slope
MIN_CTX = 256


def _device(ctx, budget: int):
    if ctx.target.device and ctx.target.device != "local":
        try:
            return load_device(ctx.target.device)
        except EdgepickError:
            pass


    return DeviceProfile(name="this host", total_ram_bytes=psutil.virtual_memory().total,
                         model_budget_bytes=budget, bandwidth_gbps=10.0,
                         cpu_features=cpu_features())


def fit_need(ctx, n_ctx: int | None = None, kv_type: str | None = None,
             quant: str | None = None) -> int | None:
    """fit's predicted need (anonymous memory + file pages read) at these settings."""
    s = ctx.target.settings
    est = fit_one(spec_of(ctx.target.model_path), quant, n_ctx or s.n_ctx,
                  _device(ctx, ctx.target.budget(ctx.budget_bytes).bytes),
                  kv_type=kv_type or s.kv_type, n_ubatch=s.n_ubatch, swa_full=s.swa_full,
                  mmap=s.mmap)
    return est.total_bytes


def _weights_need(ctx) -> int:
    return sum(t.n_bytes for t in spec_of(ctx.target.model_path).tensors)


def measure_need(ctx, **changes) -> dict:
    """The need measured in a worker (bench/need.py): load, a prompt, a few tokens."""
    cand = ctx.candidate(**changes)
    n_ctx = cand.settings.n_ctx
    out = run_isolated(worker, cand.model_dump(mode="json"), min(128, n_ctx // 2), 16,
                       timeout=300)
    if not out.ok:
        return {"error": out.error}
    v = out.value
    return {"need": need_bytes(v["anon"], v.get("file_read"), v["hwm"], cand.settings.mmap),
            "anon": v["anon"], "file_read": v.get("file_read"), "hwm": v["hwm"]}


def _shorter_contexts(ctx) -> list[int]:
    """The deploy's context halved down to what its prompts and answers need (MIN_CTX at least)."""
    s = ctx.target.settings
    floor = max(MIN_CTX, (ctx.target.context_p99 or 0) + (ctx.target.output_p95 or 0))
    out, n = [], s.n_ctx // 2
    while n >= floor:
        out.append(n)
        n //= 2
    return out


def _fix(ctx, budget: int, scale: float) -> tuple[dict, dict] | None:
    """The first settings (a shorter context, a quantized KV cache, both) whose need, as fit
    predicts it scaled by measured ÷ predicted, stays within the budget, and then measures
    within it too (at most three measured)."""
    s = ctx.target.settings
    ctxs = _shorter_contexts(ctx)
    tries: list[dict] = [{"n_ctx": c} for c in ctxs]
    if s.flash_attn and s.kv_type in ("f16", "f32", "bf16"):  # a quantized V cache needs it
        tries += [{"kv_type": "q8_0"}] + [{"n_ctx": c, "kv_type": "q8_0"} for c in ctxs]
    measured = 0
    for t in tries:
        need = fit_need(ctx, t.get("n_ctx"), t.get("kv_type"))
        if need is None or need * scale > budget or measured == 3:
            continue
        measured += 1
        check = ctx.measured("memory_need", [], lambda: measure_need(ctx, **t), changes=t)
        if (check.get("need") or need * scale) <= budget:
            return t, check if check.get("need") else {"predicted": int(need * scale)}
    return None


LOWER_TYPES = ("Q6_K", "Q5_K_M", "Q4_K_M", "Q4_0", "Q3_K_M", "Q2_K")  # best quality first


def _lower_quant(ctx, budget: int, scale: float) -> tuple[str, int, int | None] | None:
    """The highest-precision llama.cpp type, smaller than the file's own, whose need fits: at
    the deploy's context, else at the longest shorter context that fits with it."""
    own = fit_need(ctx)
    for n_ctx in [None, *_shorter_contexts(ctx)]:
        for t in LOWER_TYPES:
            need = fit_need(ctx, n_ctx, quant=t)
            if need is not None and need < own and need * scale <= budget:
                return t, int(need * scale), n_ctx
    return None


def memory_budget(ctx):
    budget = ctx.target.budget(ctx.budget_bytes)
    predicted = fit_need(ctx)
    m = ctx.measured("memory_need", [], lambda: measure_need(ctx))
    measured = m.get("need")
    need = measured or predicted
    if need is None:
        raise Skip("neither fit nor a measurement gives the need")
    if need <= budget.bytes:
        return None
    weights = _weights_need(ctx)
    phase = "load (the weights alone)" if weights > budget.bytes else \
        "inference (KV cache and compute buffers on top of the weights)"
    ev = [Evidence(what="need (measured: anonymous + file pages read)", value=measured,
                   limit=budget.bytes, unit="bytes",
                   command=ctx.doctor_cmd("oom")),
          Evidence(what="need (fit's prediction)", value=predicted, limit=budget.bytes,
                   unit="bytes", command=f"edgepick fit -m {ctx.target.model_path} --ctx "
                                         f"{ctx.target.settings.n_ctx} --kv-type "
                                         f"{ctx.target.settings.kv_type}"),
          Evidence(what="weights", value=weights, unit="bytes"),
          Evidence(what=f"budget ({budget.source})", value=budget.bytes, unit="bytes")]
    if m.get("error"):
        ev[0].value = f"not measured: {m['error']}"
    scale = (measured / predicted) if measured and predicted else 1.0
    found = None if weights > budget.bytes else _fix(ctx, budget.bytes, scale)
    if found is not None:
        change, check = found
        fix = Fix(text="within the budget with " + ", ".join(f"{k} {v}" for k, v in
                                                             change.items()),
                  deploy_edit={f"runtime.{k}": v for k, v in change.items()},
                  verified=(f"measured need {format_bytes(check['need'])}" if check.get("need")
                            else f"fit's need {format_bytes(check['predicted'])}"))
    elif (lower := _lower_quant(ctx, budget.bytes, scale)) is not None:
        t, after, n_ctx = lower
        src = ctx.reference.path if ctx.reference is not None and ctx.reference.path else \
            ctx.target.model_path
        at = f" at a {n_ctx}-token context" if n_ctx else ""
        fix = Fix(text=f"the weights alone ({format_bytes(weights)}) leave no room: a {t} build "
                       f"needs {format_bytes(after)}{at} by fit (choose it after `edgepick "
                       f"doctor OUT --symptom garbled` shows its quality holds)",
                  command=f"llama-quantize --allow-requantize {src} OUT.{t}.gguf {t}",
                  deploy_edit={"runtime.n_ctx": n_ctx} if n_ctx else {})
    else:
        shortest = ([ctx.target.settings.n_ctx] + _shorter_contexts(ctx))[-1]
        needs = {t: fit_need(ctx, shortest, quant=t) for t in LOWER_TYPES}
        least = min((n, t) for t, n in needs.items() if n is not None) if any(
            n is not None for n in needs.values()) else None
        smallest = (f"; even {least[1]} at a {shortest}-token context needs "
                    f"{format_bytes(int(least[0] * scale))} by fit") if least else ""
        fix = Fix(text=f"the weights alone ({format_bytes(weights)}) "
                       + ("exceed" if weights > budget.bytes else "nearly fill")
                       + f" the budget of {format_bytes(budget.bytes)}{smallest}: choose a "
                         "smaller model or a device with more memory (the command lists this "
                         "model's lower-bit builds against the budget)",
                  command=shlex.join(["edgepick", "fit", "-m", ctx.target.model_path, "--quant",
                                      ",".join(LOWER_TYPES), "--ctx", str(shortest)]))
    return finding(ctx, "memory_budget",
                   f"need {format_bytes(need)} over the budget {format_bytes(budget.bytes)} "
                   f"({budget.source}); it peaks at {phase}", fix, 0.95 if measured else 0.8, ev,
                   detail=phase.split(" (")[0])


# -- the sustained run (memory growth, and the thermal check's timeline) ----------------------
def sustained(ctx) -> dict:
    """bench's sustained run of fixed-size requests, its report as stored (reused when this
    file and these settings were run before)."""
    def measure() -> dict:
        cand = ctx.candidate()
        req = BenchRequest(models=[cand.ref], settings=cand.settings, prompt_lengths=[16],
                           gen_tokens=16, warmup=1, repeats=1, sustain_s=SUSTAIN_S)
        cfg = [c for c in expand(req) if c.sweep == "sustain"][0]
        worker = None
        if ctx.sustain_worker:
            mod, _, fn = ctx.sustain_worker.partition(":")
            worker = getattr(importlib.import_module(mod), fn)
        res = measure_config(cfg, req, worker=worker)
        if res.status != "ok" or res.sustain is None:
            return {"error": res.error or "no sustained report"}
        return res.sustain.model_dump(mode="json")

    return ctx.measured("sustained", [SUSTAIN_S, ctx.sustain_worker], measure)


LIVE_WARMUP, LIVE_REQUESTS, LIVE_TOKENS = 4, 20, 32  # a fresh server's first buffers: warm-up


def _live(ctx) -> dict:
    """A running `edgepick serve`: its engine's RssAnon+VmSwap gauge (/metrics) read after each
    of a run of fixed-size requests, the slope per 1000 generated tokens (bench's fit)."""
    def gauge() -> float | None:
        s = scrape(ctx.target.url)
        return s.total("edgepick_engine_memory_bytes") if s.has(
            "edgepick_engine_memory_bytes") else None

    eng = ctx.engine()
    for i in range(LIVE_WARMUP):
        eng.generate(ctx.prompts[i % len(ctx.prompts)].messages, LIVE_TOKENS, chat=True,
                     ignore_eos=True)
    t0, tokens = time.monotonic(), 0
    points = [(0.0, 0, gauge())]
    for i in range(LIVE_REQUESTS):
        g = eng.generate(ctx.prompts[i % len(ctx.prompts)].messages, LIVE_TOKENS, chat=True,
                         ignore_eos=True)
        tokens += g.generated_tokens
        points.append((time.monotonic() - t0, tokens, gauge()))
        ctx.tick(i + 1, LIVE_REQUESTS, "requests to the server")
    if points[0][2] is None:
        return {"error": "the server exposes no edgepick_engine_memory_bytes"}
    slope, flagged = slope_of(points)
    return {"memory_growth_mib_per_1k": slope, "memory_growth_flagged": flagged,
            "memory_growth_threshold": 2.0, "tokens": tokens}


def memory_growth(ctx):
    if ctx.target.model_path is None:
        rep = _live(ctx)  # never stored: a server's memory is a reading of the moment
    else:
        rep = sustained(ctx)
    if rep.get("error"):
        raise Skip(f"the sustained run failed: {rep['error']}")
    slope = rep.get("memory_growth_mib_per_1k")
    if slope is None:
        raise Skip("the sustained run had too few requests to fit a slope")
    if not rep.get("memory_growth_flagged"):
        return None
    limit = rep.get("memory_growth_threshold") or 2.0
    return finding(ctx, "memory_growth",
                   f"anonymous memory grows {slope:.1f} MiB per 1000 generated tokens over a "
                   f"run of fixed-size requests (limit {limit:g})",
                   Fix(text="run an engine build without the leak; until then restart the "
                            "engine before it reaches the budget (serve --mem-limit drains and "
                            "restarts it) (seed 000 §5.3, seed 003 §8.2)"),
                   min(0.95, 0.6 + 0.05 * slope / limit),
                   [Evidence(what="memory growth", value=slope, limit=limit,
                             unit="MiB/1k tokens",
                             command=(f"edgepick bench -m {ctx.target.model_path} --sustain "
                                      f"{SUSTAIN_S:g}") if ctx.target.model_path else
                             ctx.doctor_cmd("memory-growth"))],
                   detail=f"{slope:.1f} MiB/1k tokens")
