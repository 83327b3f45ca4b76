"""Realistic stored payloads, built with the stages' own record classes, for decide and report tests."""

from __future__ import annotations

from edgepick.records.bench import BenchResult, MetricStats, SustainReport
from edgepick.records.candidate import Candidate
from edgepick.records.fit import StoredFit
from edgepick.records.model_ref import ModelRef
from edgepick.records.evaluation import (BootstrapSettings, CandidateEval, EvalResult, GroupGap,
                                         ItemOutcome, Unacceptable, Badcase)
from edgepick.store import ResultStore


def stats(median: float, unit: str, spread: float = 0.1, p99: float | None = None) -> MetricStats:
    return MetricStats(median=median, min=median * (1 - spread), max=median * (1 + spread),
                       p99=p99, unit=unit, n=5)


def metric(median: float | None = None, *, min: float | None = None, max: float | None = None,
           p99: float | None = None, n: int = 5, unit: str = "") -> MetricStats:
    """A MetricStats from what a test cares about; min and max default to the median, the
    median to the max (a peak-memory figure is read at its max)."""
    median = max if median is None else median
    return MetricStats(median=median, min=median if min is None else min,
                       max=median if max is None else max, p99=p99, unit=unit, n=n)


def bench(model: str = "m.gguf", *, sweep: str = "prompt_length", settings: dict | None = None,
          metrics: dict | None = None, key: str | None = None, **fields) -> BenchResult:
    """One valid BenchResult: `metrics` maps a name to a MetricStats or to metric()'s keywords;
    any other field of the record is given as a keyword."""
    ms = {k: v if isinstance(v, MetricStats) else metric(**v) for k, v in (metrics or {}).items()}
    return BenchResult.model_validate({
        "model": model, "model_path": model, "backend": "llama_cpp", "sweep": sweep,
        "config": sweep, "key": key or f"{model}-{sweep}", "settings": settings or {},
        "status": "ok", "metrics": ms, **fields})


def fit(model: str, total_bytes: int, **fields) -> StoredFit:
    """One fit row as the fit stage stores it, for a 0.5B Q4_0 at 2048 tokens on a laptop."""
    return StoredFit.model_validate({
        "model": model, "quant": "Q4_0", "ctx": 2048, "kv_type": "f16", "device": "laptop",
        "weights_bytes": total_bytes // 2, "weights_exact": True,
        "kv_cache_bytes": total_bytes // 4, "overhead_bytes": total_bytes // 4,
        "total_bytes": total_bytes, "budget_bytes": 8 * 2**30, "margin": 0.1, "verdict": "fits",
        "kv_fill_tokens": 1024, "bytes_per_token": total_bytes // 2, "decode_tps_bound": 40.0,
        "decode_tps_estimate": 30.0, "efficiency": 0.75, "prefill_tps_estimate": None,
        **fields})


def item(item_id: str, task: str, **fields) -> ItemOutcome:
    """One scored item outcome; a correct, well-formed answer unless told otherwise."""
    return ItemOutcome.model_validate({"item_id": item_id, "task": task, "output": "",
                                       "finish_reason": "stop", "score": 1.0, "correct": True,
                                       "format_ok": True, "badcase": False, **fields})


def bench_rows(model: str, ttft_ms: float, decode: float, peak: int, prompt_tokens=(128, 512),
               decay_pct: float | None = 8.0) -> list[BenchResult]:
    rows = []
    for i, pt in enumerate(prompt_tokens):
        t = ttft_ms * (pt / prompt_tokens[0])
        rows.append(BenchResult(
            model=model, model_path=model, backend="llama_cpp", sweep="prompt_length",
            config=f"threads=2 prompt={pt}", key=f"{model}-{pt}",
            settings={"threads": 2, "n_ctx": 2048, "prompt_tokens": pt, "gen_tokens": 64},
            status="ok",
            metrics={"ttft_ms": stats(t, "ms", p99=t * 1.4), "decode_tps": stats(decode, "tok/s"),
                     "prefill_tps": stats(pt / t * 1000, "tok/s"),
                     "itl_ms": stats(1000 / decode, "ms", p99=1500 / decode),
                     "peak_rss_bytes": stats(peak + i * 2**20, "bytes", 0.0)}))
    if decay_pct is not None:
        tps = [decode, decode * (1 - decay_pct / 200), decode * (1 - decay_pct / 100)]
        rows.append(BenchResult(
            model=model, model_path=model, backend="llama_cpp", sweep="sustain",
            config="sustain=30s", key=f"{model}-sustain", settings={"threads": 2}, status="ok",
            metrics={"peak_rss_bytes": stats(peak, "bytes", 0.0)},
            sustain=SustainReport(duration_s=30, window_s=10, window_tps=tps,
                                  decay_pct=decay_pct, flagged=decay_pct > 30)))
    return rows


def gap(score: float, ref: float, n: int = 40, fmt: float = 1.0, unacc: float = 0.0,
        **fields) -> GroupGap:
    g = ref - score
    return GroupGap.model_validate(dict(
        n=n, score=score, ref_score=ref, gap_abs=g, gap_rel=g / ref if ref else None,
        ci95=[g - 0.05, g + 0.05], badcase_rate=1 - score, ref_badcase_rate=1 - ref,
        badcases_per_1000=g * 1000, format_ok_rate=fmt, ref_format_ok_rate=1.0,
        unacceptable_rate=unacc, ref_unacceptable_rate=0.0, **fields))


def cand_eval(model: str, name: str, tasks: dict[str, tuple[float, float]], fmt: float = 1.0,
              unacc: float = 0.01, task_fields: dict | None = None, **fields) -> CandidateEval:
    """`task_fields` are further GroupGap fields of every task (metrics, say); `fields` of the
    CandidateEval (items, say)."""
    per_task = {t: gap(s, r, fmt=fmt if t == "extraction" else 1.0, **(task_fields or {}))
                for t, (s, r) in tasks.items()}
    mean = sum(s for s, _ in tasks.values()) / len(tasks)
    ref = sum(r for _, r in tasks.values()) / len(tasks)
    n = 40 * len(tasks)
    return CandidateEval(
        name=name, candidate=Candidate(ref=ModelRef.file(model), label=name), per_task=per_task,
        per_difficulty={}, overall=gap(mean, ref, n=n, fmt=fmt, unacc=unacc),
        unacceptable_rate=unacc, unacceptable=Unacceptable(n=n, count=int(unacc * n), rate=unacc),
        badcases=[Badcase(item_id="ex-007", task="extraction", expected={"city": "Hangzhou"},
                          got='{"city": "Hangzhou"', why="invalid JSON")],
        generated=n, reused=0).model_copy(update=fields)


def eval_result(cands: list[CandidateEval], ref_model: str = "/models/ref-f16.gguf") -> EvalResult:
    ref = cands[0].model_copy(update={"name": "reference",
                                      "candidate": Candidate(ref=ModelRef.file(ref_model),
                                                            label="reference")})
    return EvalResult(data="demo_eval.jsonl", data_sha256="0" * 64, n_items=200, n_invalid_lines=0,
                      reference=ref, candidates=cands,
                      bootstrap=BootstrapSettings(resamples=1000, seed=0),
                      max_tokens={"extraction": 96}, scorer_version="1")


# Two builds of one model: q4 fast but weaker at extraction, q8 slower but better at it.
FAST, ACCURATE = "/models/smol-q4_0.gguf", "/models/smol-q8_0.gguf"
TASKS_FAST = {"classification": (0.70, 0.72), "extraction": (0.40, 0.52), "qa": (0.35, 0.38)}
TASKS_ACC = {"classification": (0.71, 0.72), "extraction": (0.50, 0.52), "qa": (0.37, 0.38)}


def filled_store(path: str, fast_decay: float = 8.0) -> ResultStore:
    store = ResultStore(path)
    for r in bench_rows(FAST, ttft_ms=90, decode=62, peak=160 * 2**20, decay_pct=fast_decay):
        store.put("bench", r.key, r.model_dump(mode="json"))
    for r in bench_rows(ACCURATE, ttft_ms=140, decode=36, peak=230 * 2**20):
        store.put("bench", r.key, r.model_dump(mode="json"))
    ev = eval_result([cand_eval(FAST, "smol-q4_0", TASKS_FAST, fmt=0.93),
                      cand_eval(ACCURATE, "smol-q8_0", TASKS_ACC, fmt=0.98)])
    store.put("eval", "e1", ev.model_dump(mode="json"))
    return store
