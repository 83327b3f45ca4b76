"""Each pipeline stage as a function over the run's state, calling the stage's Python API.

A stage whose module is not installed is skipped with a note ("stage not available"); nothing is
made up in its place. Every result goes through the results store, so a rerun measures nothing
twice: bench and eval skip stored rows themselves, fidelity and quantize are keyed here.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from edgepick.records.candidate import Candidate

Tick = Callable[[int, int, str], None]  # (done, total, what)


@dataclass
class RunCandidate:
    name: str
    model: str  # resolved path, or URL; for a planned build, the path it will be written to
    backend: str
    reference: str | None = None  # same-tokenizer reference for fidelity
    source: str | None = None  # planned build: quantize `source` to `qtype`
    qtype: str | None = None
    imatrix: str | None = None
    skipped: str | None = None  # why it is not measured (does not fit, build failed)


@dataclass
class RunState:
    lp: object  # LoadedPlan
    store: object  # ResultStore
    device: object  # DeviceProfile
    candidates: list[RunCandidate] = field(default_factory=list)
    keys: dict[str, set[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def active(self, local_only: bool = False) -> list[RunCandidate]:
        return [c for c in self.candidates if not c.skipped
                and (not local_only or "://" not in c.model)]

    def candidate(self, c: RunCandidate) -> Candidate:
        return Candidate(model=c.model, backend=c.backend, label=c.name,
                         settings=self.lp.plan.runtime.settings())

    def key(self, kind: str, key: str) -> None:
        self.keys.setdefault(kind, set()).add(key)


def _hash(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:32]


def fit_stage(st: RunState, tick: Tick) -> None:
    """Predict memory and speed; drop what cannot fit before spending time on it."""
    from edgepick.decide.summary import spec_of
    from edgepick.fit.planner import fit_one

    plan = st.lp.plan
    rt = plan.runtime
    todo = [c for c in st.candidates if "://" not in c.model]
    for i, c in enumerate(todo):
        tick(i, len(todo), c.name)
        spec = spec_of(c.source or c.model)
        est = fit_one(spec, c.qtype, rt.n_ctx, st.device, kv_type=rt.kv_type,
                      margin=plan.fit.margin, n_ubatch=rt.n_ubatch)
        payload = est.model_dump(mode="json")
        payload["model"] = c.model  # the file the estimate is for (the build's target path)
        key = _hash(["fit", payload, st.device.model_dump(mode="json")])
        if not st.store.has("fit", key):  # a rerun rewrites nothing it already holds
            st.store.put("fit", key, payload, label=c.name)
        st.key("fit", key)
        if est.verdict == "no" and plan.fit.skip_no_fit:
            c.skipped = (f"does not fit: predicted {est.total_bytes / 2**20:.0f} MiB > "
                         f"{est.budget_bytes / 2**20:.0f} MiB budget of {st.device.name}")
            st.notes.append(f"fit: {c.name} skipped — {c.skipped}")
        elif est.verdict == "tight":
            st.notes.append(f"fit: {c.name} fits only without the {plan.fit.margin:.0%} margin")
    tick(len(todo), len(todo), "done")


def quantize_stage(st: RunState, tick: Tick) -> None:
    from edgepick.decide.summary import spec_of
    from edgepick.quantize.ladder import FLOAT_TYPES, build

    todo = [c for c in st.active() if c.source]
    for i, c in enumerate(todo):
        tick(i, len(todo), f"{c.name} ({c.qtype})")
        quantized = {t: n for t, n in spec_of(c.source).quant_types.items() if t not in FLOAT_TYPES}
        try:
            rec = build(c.source, c.model, c.qtype, imatrix=c.imatrix, quantized=quantized,
                        threads=st.lp.plan.runtime.threads)
        except Exception as exc:  # noqa: BLE001 - one failed build must not stop the others
            c.skipped = f"build failed: {exc}"
            st.notes.append(f"quantize: {c.name} {c.skipped}")
            continue
        key = _hash(["q", rec.path])
        if not (rec.skipped and st.store.has("quantize", key)):  # reused build: nothing new
            st.store.put("quantize", key, rec.model_dump(mode="json"), label=c.name)
        st.key("quantize", key)
        if rec.requantized:
            st.notes.append(f"quantize: {c.name} was built from an already quantized source; "
                            "requantizing compounds error")
    tick(len(todo), len(todo), "done")


def bench_stage(st: RunState, tick: Tick) -> None:
    from edgepick.bench.runner import run_bench
    from edgepick.bench.sweeps import BenchRequest, expand
    from edgepick.units import parse_size

    plan = st.lp.plan
    b, rt = plan.bench, plan.runtime
    mem = None if b.mem_limit is None else (st.device.model_budget_bytes if b.mem_limit == "budget"
                                             else parse_size(b.mem_limit))
    groups: dict[str, list[RunCandidate]] = {}
    for c in st.active():
        groups.setdefault(c.backend, []).append(c)
    reqs = [BenchRequest(models=[c.model for c in cs], backend=backend, threads=[rt.threads],
                         n_ctx=rt.n_ctx, n_batch=rt.n_batch, n_ubatch=rt.n_ubatch,
                         kv_type=rt.kv_type, flash_attn=rt.flash_attn, seed=rt.seed,
                         prompt_lengths=b.prompt_lengths, gen_tokens=b.gen_tokens,
                         warmup=b.warmup, repeats=b.repeats, concurrency=b.concurrency,
                         sustain_s=b.sustain_s, mem_limit=mem, timeout_s=b.timeout_s)
            for backend, cs in groups.items()]
    total = sum(len(expand(r)) for r in reqs)
    done = 0
    names = {c.model: c.name for c in st.active()}
    for req in reqs:
        def on_start(cfg, i, n):
            tick(done, total, f"{names.get(cfg.model, cfg.model)} {cfg.label}")

        for res in run_bench(req, st.store, on_start=on_start):
            done += 1
            if res.key:
                st.key("bench", res.key)
            if res.status != "ok":
                st.notes.append(f"bench: {names.get(res.model, res.model)} {res.config} "
                                f"failed: {res.error}")
    tick(total, total, "done")


def _spread(items: list, limit: int | None) -> list:
    """The first `limit` items taken round-robin over tasks, so every task stays represented."""
    if limit is None or limit >= len(items):
        return items
    by_task: dict[str, list] = {}
    for it in items:
        by_task.setdefault(it.task, []).append(it)
    out, queues = [], list(by_task.values())
    while len(out) < limit:
        for q in queues:
            if q and len(out) < limit:
                out.append(q.pop(0))
    return out


def eval_stage(st: RunState, tick: Tick) -> None:
    from edgepick.evaluate.dataset import file_sha256, load_eval_set
    from edgepick.evaluate.pipeline import run_eval
    from edgepick.evaluate.runner import candidate_from_spec

    plan = st.lp.plan
    data = st.lp.eval_data()
    items, problems = load_eval_set(data)
    for p in problems[:5]:
        st.notes.append(f"eval: skipped bad line — {p}")
    items = _spread(items, plan.eval.limit)
    ref = candidate_from_spec(st.lp.resolve(plan.eval.reference), plan.runtime.settings())
    cands = [st.candidate(c) for c in st.active()]
    total = len(items) * (1 + len(cands))
    state = {"done": 0, "who": "", "model": -1}

    def on_start(name: str, missing: int) -> None:  # once per model; only missing items run
        state["model"] += 1
        state["who"] = name
        state["done"] = state["model"] * len(items) + len(items) - missing
        tick(state["done"], total, name)

    def on_item() -> None:
        state["done"] += 1
        tick(state["done"], total, state["who"])

    sha = _hash([file_sha256(data), [it.id for it in items]])
    result = run_eval(items, ref, cands, st.store, data_path=data, data_sha=sha,
                      problems=[str(p) for p in problems], budgets=plan.eval.max_tokens or None,
                      on_start=on_start, on_item=on_item)
    st.key("eval", result.key)
    tick(total, total, "done")


def fidelity_stage(st: RunState, tick: Tick) -> None:
    from edgepick.evaluate.fidelity import fidelity
    from edgepick.store.identity import model_identity

    plan = st.lp.plan
    f = plan.fidelity
    text = st.lp.fidelity_text()
    todo = [c for c in st.active(local_only=True) if c.reference]
    if not todo:
        st.notes.append("fidelity: no candidate names a same-tokenizer reference; skipped")
    for i, c in enumerate(todo):
        from edgepick.assets.bundled import resolve_model

        ref = resolve_model(c.reference)
        if os.path.realpath(ref) == os.path.realpath(c.model):
            continue  # the reference itself: KLD 0 by definition
        key = _hash(["fidelity", model_identity(ref), model_identity(c.model),
                     model_identity(text), f.ctx, f.max_chunks])
        st.key("fidelity", key)
        if st.store.has("fidelity", key):
            continue

        def progress(what: str, done: int, total: int, _i=i) -> None:
            tick(_i, len(todo), f"{c.name}: {what} {done}/{total}")

        tick(i, len(todo), c.name)
        res = fidelity(ref, c.model, Path(text), ctx=f.ctx, threads=plan.runtime.threads,
                       max_chunks=f.max_chunks, progress=progress)
        st.store.put("fidelity", key, res.model_dump(mode="json"), label=c.name)
    tick(len(todo), len(todo), "done")


STAGES: list[tuple[str, Callable[[RunState, Tick], None], str]] = [
    ("fit", fit_stage, "edgepick.fit.planner"),
    ("quantize", quantize_stage, "edgepick.quantize.ladder"),
    ("bench", bench_stage, "edgepick.bench.runner"),
    ("eval", eval_stage, "edgepick.evaluate.pipeline"),
    ("fidelity", fidelity_stage, "edgepick.evaluate.fidelity"),
]
