"""The fastest runtime settings whose fidelity and gates still pass, without the whole grid
(seed 000 §4.4 and seed 001 §4.3: threads and batch sizes are tuned per device;
seed 004 §5.2: the KV cache is the memory to save).

1. **Never run** what cannot run or fit: a combination llama.cpp refuses (the engine's
   `settings_problem`, e.g. a quantized V cache without flash attention) or whose fit verdict
   is "no" on the device is dropped before anything is measured.
2. **One axis at a time.** From the base settings, each axis's values are measured with the
   other axes at their best so far (threads, then the batch sizes, mmap, flash attention, the
   KV type). A value whose median breaks one of the scenario's speed gates is dropped, and so is
   one slower than the best; what the search never reached is counted as not measured. The grid
   costs the product of the axes' sizes; this costs about their sum.
3. **Fidelity guards the answers.** A faster value of a setting that can change the logits (the
   KV type, flash attention, the micro-batch) is taken only when its KLD against the f16-KV
   baseline of the same file, at the scenario's longest context, stays within `kld_max`.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

from edgepick.backends.registry import backend_class
from edgepick.bench.hostload import CONTENDED_SHARE, describe
from edgepick.bench.runner import measure_config
from edgepick.bench.sweeps import BenchRequest, expand
from edgepick.errors import EdgepickError
from edgepick.evaluate.fidelity import bundled_text
from edgepick.evaluate.fidelity_stage import FidelityRequest, run as fidelity
from edgepick.fit.planner import fit_one
from edgepick.models.spec import spec_of
from edgepick.progress import ProgressEvent, Tick, silent
from edgepick.records.candidate import RuntimeSettings
from edgepick.records.device import DeviceProfile
from edgepick.records.model_ref import ModelRef
from edgepick.records.tune import TunePoint, TuneResult

ORDER = ("threads", "n_ubatch", "n_batch", "mmap", "flash_attn", "kv_type")
CHANGES_ANSWERS = ("flash_attn", "kv_type", "n_ubatch")
BASELINE = {"kv_type": "f16", "flash_attn": True}


class TuneRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    model: ModelRef
    device: DeviceProfile
    scenario: object  # a decide Scenario (its speed gates and context lengths)
    base: RuntimeSettings = Field(default_factory=RuntimeSettings)
    axes: dict[str, list] = Field(default_factory=dict)  # field -> values to try
    kld_max: float = Field(0.01, gt=0)  # nats: the most a faster setting may move the logits
    repeats: int = Field(3, ge=1)
    gen_tokens: int = Field(32, ge=2)
    fidelity_text: str | None = None  # default: the bundled text
    fidelity_chunks: int = Field(2, ge=1)
    # a busy host's speeds say more about the neighbours (bench/hostload.py): with any
    # measurement contended, tune refuses to choose unless this is set
    allow_contended: bool = False
    contended_share: float = Field(CONTENDED_SHARE, gt=0, le=1)
    quiet_wait_s: float = Field(0.0, ge=0)  # before each point, wait at most this for quiet


def _key(rt: RuntimeSettings) -> tuple:
    return tuple(getattr(rt, f) for f in ORDER)


def _diff(rt: RuntimeSettings, base: RuntimeSettings) -> dict:
    return {f: getattr(rt, f) for f in ORDER if getattr(rt, f) != getattr(base, f)}


def prompt_length(req: TuneRequest) -> int:
    ct = getattr(req.scenario, "context_tokens", None)
    want = next((x for x in ((ct.p99, ct.p95, ct.p50) if ct else ()) if x), 128)
    return max(8, min(want, req.base.n_ctx - req.gen_tokens - 8))


def run(req: TuneRequest, store=None, progress: Tick = silent) -> TuneResult:
    """Search, measure and choose; `store` is not written (the measurements are the search's)."""
    axes = {f: list(dict.fromkeys(v)) for f, v in req.axes.items() if v}
    grid = [req.base.model_copy(update=dict(zip(axes, values)))
            for values in itertools.product(*axes.values())] if axes else [req.base]
    ctx = prompt_length(req)
    points: dict[tuple, TunePoint] = {}
    for rt in grid:
        why, outcome = _never_run(req, rt)
        points[_key(rt)] = TunePoint(settings=_diff(rt, req.base), outcome=outcome or
                                     "not_measured", why=why or "the axis search never reached it")
    search = _Search(req, ctx, points, progress)
    best = search.start(grid)
    for field in [f for f in ORDER if f in axes]:
        best = search.along(best, field, axes[field])
    points[_key(best)].outcome = "chosen"
    res = TuneResult(model=req.model.label, device=req.device.name,
                     scenario=getattr(req.scenario, "name", ""), ctx=ctx, chosen=best,
                     grid=len(grid), measured=search.measured, points=list(points.values()),
                     contended=[f"{_words(p.settings)}: {p.contended}"
                                for p in points.values() if p.contended],
                     allowed_contended=req.allow_contended)
    if res.contended and not req.allow_contended:
        raise ContendedChoice(res)
    return res


class ContendedChoice(EdgepickError):
    """Measurements taken beside other work: no winner is chosen from them unless told to."""

    def __init__(self, res: TuneResult) -> None:
        self.result = res
        super().__init__(
            f"the host was busy during {len(res.contended)} of {res.measured} measurements "
            f"({res.contended[0]}): their speeds say more about the other work than about the "
            "settings, so tune chooses nothing; stop the other work and run again, or pass "
            "--allow-contended to choose from them anyway")


def _never_run(req: TuneRequest, rt: RuntimeSettings) -> tuple[str | None, str | None]:
    """(why, "cannot_run" | "does_not_fit") for a combination never to run; (None, None) else."""
    problem = backend_class(req.model.backend).settings_problem(rt)
    if problem:
        return problem, "cannot_run"
    try:
        est = fit_one(spec_of(str(req.model.path)), None, rt.n_ctx, req.device,
                      kv_type=rt.kv_type, flash_attn=rt.flash_attn, n_batch=rt.n_batch,
                      n_ubatch=rt.n_ubatch, mmap=rt.mmap)
    except EdgepickError as exc:
        return str(exc), "cannot_run"
    if est.verdict == "no":
        return (f"fit: {est.total_bytes / 2**20:.0f} MiB over the "
                f"{est.budget_bytes / 2**20:.0f} MiB budget of {req.device.name}"), "does_not_fit"
    return None, None


class _Search:
    def __init__(self, req: TuneRequest, ctx: int, points: dict, progress: Tick) -> None:
        self.req, self.ctx, self.points, self.progress = req, ctx, points, progress
        self.measured = 0
        self._kld: dict[tuple, tuple[float, float]] = {}

    def start(self, grid: list[RuntimeSettings]) -> RuntimeSettings:
        """The base when it can run, else the first combination that can."""
        for rt in [self.req.base, *grid]:
            p = self.points.get(_key(rt))
            if p is not None and p.outcome == "not_measured":
                self._measure(rt)
                if p.outcome == "kept":
                    return rt

        whys = sorted({p.why for p in self.points.values() if p.outcome != "not_measured"})
        raise EdgepickError("no combination of these settings runs and passes the scenario's "
                            "speed gates on this device: " + "; ".join(whys))

    def along(self, best: RuntimeSettings, field: str, values: list) -> RuntimeSettings:
        """The best value of `field`, the others held at `best`'s."""
        for v in values:
            rt = self._nearest(best, field, v)
            if rt is None or _key(rt) == _key(best):
                continue
            p = self.points[_key(rt)]
            if p.outcome != "not_measured":  # measured already (a nearest point reached twice)
                continue
            self._measure(rt)
            if p.outcome != "kept":
                continue
            if p.decode_tps <= self.points[_key(best)].decode_tps:
                p.outcome, p.why = "slower", f"slower than {_words(_diff(best, self.req.base))}"
                continue
            if field in CHANGES_ANSWERS and not self._faithful(rt, p):
                continue
            self.points[_key(best)].outcome = "slower"
            self.points[_key(best)].why = f"slower than {_words(_diff(rt, self.req.base))}"
            best = rt
        return best

    def _nearest(self, best: RuntimeSettings, field: str, v) -> RuntimeSettings | None:
        """`best` with `field` = v, or, when that cannot run or fit (a quantized V cache needs
        flash attention), the runnable combination with that value nearest to `best`."""
        rt = best.model_copy(update={field: v})
        if self.points[_key(rt)].outcome not in ("cannot_run", "does_not_fit"):
            return rt
        open_ = [dict(zip(ORDER, k)) for k, p in self.points.items() if p.outcome not in (
            "cannot_run", "does_not_fit") and dict(zip(ORDER, k))[field] == v]
        if not open_:
            return None
        near = min(open_, key=lambda c: sum(c[f] != getattr(best, f) for f in ORDER))
        return best.model_copy(update=near)

    def _measure(self, rt: RuntimeSettings) -> None:
        p = self.points[_key(rt)]
        self.progress(ProgressEvent(self.measured, len(self.points), _words(p.settings)))
        req = BenchRequest(models=[self.req.model], settings=rt, prompt_lengths=[self.ctx],
                           gen_tokens=self.req.gen_tokens, warmup=1, repeats=self.req.repeats,
                           contended_share=self.req.contended_share,
                           quiet_wait_s=self.req.quiet_wait_s)
        res = measure_config(expand(req)[0], req)
        self.measured += 1
        if res.contended:
            load = res.host_load.model_dump() if res.host_load else None
            p.contended = describe(load)
        if res.status != "ok":
            p.outcome, p.why = "cannot_run", res.error or "the engine failed"
            return
        p.decode_tps = res.metrics["decode_tps"].median
        p.ttft_ms = res.metrics["ttft_ms"].median
        p.outcome, p.why = "kept", ""
        broken = _gate(self.req.scenario, p)
        if broken:
            p.outcome, p.why = "fails_gate", broken

    def _faithful(self, rt: RuntimeSettings, p: TunePoint) -> bool:
        if all(getattr(rt, f) == v for f, v in BASELINE.items()):
            return True
        ctx = min(self.ctx if self.ctx >= 64 else 64, rt.n_ctx)
        text = self.req.fidelity_text or str(bundled_text())
        res = fidelity(FidelityRequest(reference=self.req.model, candidate=self.req.model,
                                       text=text, ctx=ctx, max_chunks=self.req.fidelity_chunks,
                                       threads=rt.threads, settings=rt, cache=False), None)
        p.kld_mean, p.top1 = res.kld_mean, res.same_top1
        if res.kld_mean > self.req.kld_max:
            p.outcome = "unfaithful"
            p.why = (f"KLD {res.kld_mean:.4f} nats at {ctx} tokens against the f16-KV baseline, "
                     f"over {self.req.kld_max}")
            return False
        return True


def _gate(scenario, p: TunePoint) -> str | None:
    """The scenario's speed gate this point's median breaks, in words; None."""
    c = getattr(scenario, "constraints", None)
    if c is None:
        return None
    dmin, tmax = c.limit("decode_tps_min"), c.limit("ttft_p50_ms_max")
    if dmin is not None and p.decode_tps is not None and p.decode_tps < dmin:
        return f"decode {p.decode_tps:.1f} tok/s < decode_tps_min {dmin}"
    if tmax is not None and p.ttft_ms is not None and p.ttft_ms > tmax:
        return f"TTFT {p.ttft_ms:.0f} ms > ttft_p50_ms_max {tmax}"
    return None


def _words(settings: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in settings.items()) or "the base settings"


def fragment(res: TuneResult) -> str:
    """A plan fragment holding the chosen settings, with what the search did as comments."""
    rt = {k: v for k, v in res.chosen.model_dump().items() if k != "variant"}
    head = [f"# edgepick tune {res.model} on {res.device} for {res.scenario}: measured "
            f"{res.measured} of {res.grid} combinations at a {res.ctx}-token prompt"]
    head += [f"#   {n} {why.replace('_', ' ')}" for why, n in sorted(res.skipped().items())]
    return "\n".join(head) + "\n" + yaml.safe_dump({"runtime": rt}, sort_keys=False)


def write_fragment(res: TuneResult, out: str | Path) -> Path:
    out = Path(out)
    out.write_text(fragment(res), encoding="utf-8")
    return out
