"""Does speculative decoding pay, per task, on the scenario's own prompts and output lengths?

Acceptance depends on the text (extraction copies spans of its prompt, open chat does not), so
each eval item is decoded greedily, at its task's output budget, under plain decoding and under
each kind, on llama-server started with serve's own command line (the `llama_server` engine:
llama-cpp-python runs none of llama.cpp's kinds in process). All servers are up at once and the
settings take turns item by item in every order, so the host's drift hits them alike.

Per request: decode speed from the stream's token arrivals and from the server's own `timings`
(predicted_n / predicted_ms), drafted and accepted tokens from `timings` (draft_n,
draft_n_accepted), verification steps from the server's /metrics counters
(spec_decode_num_drafts_total) read before and after, and the kinds' own time from the server's
log (serve/engine/llama_server_backend.py). Per task and kind:

- speed-up: the geometric mean over the items the kind drafted on of (kind's decode speed ÷
  plain's), each item's speeds the median of its repeats, with a 95% Student t interval of the
  log ratios over those items (a percentile bootstrap over five items or fewer is far too
  narrow: over three it cannot reach below the smallest ratio) (on an item it drafted nothing for, it ran plain decoding's steps: a difference
  there is the host's); fewer than MIN_DRAFTING_ITEMS such items leave it undetermined;
- acceptance rate: accepted ÷ drafted, with a 95% bootstrap interval over items (the item is
  the unit: its tokens are not independent);
- mean accepted length: 1 + accepted ÷ verification steps (llama-server's own `mean len`);
- the draft's share of decode time, and the share of items whose greedy text is identical.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict

import numpy as np
from pydantic import BaseModel

from edgepick.backends import LoadOptions, get_backend
from edgepick.evaluate.intervals import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from edgepick.evaluate.items import EvalItem
from edgepick.evaluate.outputs import budget
from edgepick.progress import ProgressEvent, Tick, silent
from edgepick.records.candidate import Candidate, RuntimeSettings
from edgepick.records.model_ref import ModelRef
from edgepick.records.speculative import SpecFigures
from edgepick.stats import wilson

ENGINE = "llama_server"
# each server's untimed first request: not an eval item, since ngram-mod's pool (shared by
# every request a server runs) would then hold that item's answer before it is measured
WARMUP = [{"role": "user", "content": "Say hello."}]
_COUNTER = "llamacpp:spec_decode_num_drafts_total"
MIN_DRAFTING_ITEMS = 3  # fewer items drafted on: the speed-up is undetermined, whatever it reads


class SpecRequest(BaseModel):
    """One greedy generation under one setting."""

    item: str
    task: str
    setting: str  # "none" or the kind's tag
    text: str
    generated: int
    client_tps: float | None  # tokens after the first ÷ time after the first, at the client
    # the same from the server's own timings: (predicted_n - 1) ÷ predicted_ms (its clock starts
    # when the first token is sampled, which predicted_n counts)
    engine_tps: float | None
    drafted: int = 0
    accepted: int = 0
    steps: int = 0  # verification steps (/metrics)
    draft_ms: float | None = None
    predicted_ms: float | None = None


# Student's t distribution's 97.5% quantile by degrees of freedom (any statistics table; e.g.
# NIST/SEMATECH e-Handbook of Statistical Methods, table 1.3.6.7.2); between rows the row below
# is used, which only widens the interval
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
         9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042, 60: 2.000, 120: 1.980}


def t975(df: int) -> float:
    """The two-sided 95% t quantile for `df` degrees of freedom (1.96 beyond the table)."""
    return _T975[max(k for k in _T975 if k <= df)] if df <= 120 else 1.96


def _bootstrap(stat, n: int) -> tuple[float, float]:
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    idx = rng.integers(0, n, size=(BOOTSTRAP_RESAMPLES, n))
    with np.errstate(invalid="ignore", divide="ignore"):  # a resample that drafted nothing
        vals = np.array([stat(i) for i in idx], dtype=float)
    vals = vals[np.isfinite(vals)]
    return float(np.percentile(vals, 2.5)), float(np.percentile(vals, 97.5))


def _steps(backend) -> int:
    """The server's cumulative verification steps (its /metrics counter)."""
    r = backend._http().get(f"{backend.root}/metrics")
    m = re.search(rf"^{re.escape(_COUNTER)}\s+([0-9.eE+-]+)$", r.text, re.M)
    return int(float(m.group(1))) if m else 0


def _one(backend, it: EvalItem, setting: str, max_tokens: int) -> SpecRequest:
    before = _steps(backend)
    g = backend.generate(it.chat_messages(), max_tokens, chat=True)
    t = g.engine_timings or {}
    n, ms = t.get("predicted_n"), t.get("predicted_ms")
    # tokens, not chunks: llama-server holds back a token that ends inside a UTF-8 character
    # and sends it with the next, so Chinese text arrives in fewer chunks than tokens
    span = g.token_times[-1] - g.token_times[0] if len(g.token_times) > 1 else 0.0
    client = (g.generated_tokens - 1) / span if span > 0 and g.generated_tokens > 1 else None
    return SpecRequest(item=it.id, task=it.task, setting=setting, text=g.text,
                       generated=g.generated_tokens, client_tps=client,
                       engine_tps=(n - 1) / ms * 1e3 if n and n > 1 and ms else None,
                       drafted=int(t.get("draft_n", 0)), accepted=int(t.get("draft_n_accepted", 0)),
                       steps=_steps(backend) - before, draft_ms=t.get("draft_ms"),
                       predicted_ms=t.get("predicted_ms"))


def run_requests(model: ModelRef, base: RuntimeSettings, settings: list[RuntimeSettings],
                 items: list[EvalItem], budgets: dict[str, int], repeats: int = 1,
                 warmup: int = 1, progress: Tick = silent) -> list[SpecRequest]:
    """Every item under plain decoding and each setting, `repeats` times (after `warmup` untimed
    requests per server), the settings' order rotated and reversed from item to item. More
    than one repeat flatters the n-gram kinds: a server's pool then holds the item's own earlier
    answer."""
    all_settings = [base.model_copy(update={"speculative": None})] + list(settings)
    names = ["none"] + [s.speculative.tag() for s in settings]
    backends = []
    try:
        for rt in all_settings:
            b = get_backend(ENGINE)
            b.load(Candidate(ref=model.model_copy(update={"backend": ENGINE}), settings=rt),
                   LoadOptions())
            backends.append(b)
        for b in backends:
            for _ in range(warmup):
                b.generate(WARMUP, 8, chat=True)
        out = []
        n = len(backends)
        total = repeats * len(items) * n
        for r in range(repeats):
            for i, it in enumerate(items):
                j = r * len(items) + i
                for k in _order(n, j):
                    progress(ProgressEvent(len(out), total, f"{it.task} {it.id} {names[k]}"))
                    out.append(_one(backends[k], it, names[k], budget(it, budgets)))
        progress(ProgressEvent(total, total, "done"))
        return out
    finally:
        for b in backends:
            b.unload()


def _order(n: int, j: int) -> list[int]:
    """The servers' order for the j-th item: every rotation in turn, each forwards then
    backwards, so each setting takes every place equally often (with three settings a plain
    ABBA would keep the middle one in the middle, and a place has effects of its own on a busy
    host)."""
    rot = [(k + j // 2) % n for k in range(n)]
    return rot if j % 2 == 0 else rot[::-1]


def figures(requests: list[SpecRequest]) -> list[SpecFigures]:
    """Per task and kind, against plain decoding on the same items (module docstring)."""
    by: dict[tuple, list[SpecRequest]] = defaultdict(list)
    for r in requests:
        by[(r.task, r.setting, r.item)].append(r)
    out = []
    tasks = sorted({r.task for r in requests})
    kinds = list(dict.fromkeys(r.setting for r in requests if r.setting != "none"))
    for task in tasks:
        ids = sorted({r.item for r in requests if r.task == task})
        for kind in kinds:
            rows = [(by[(task, "none", i)], by[(task, kind, i)]) for i in ids
                    if by[(task, "none", i)] and by[(task, kind, i)]]
            if rows:
                out.append(_figures(task, kind, rows))
    return out


def _median(rs: list[SpecRequest], field: str) -> float | None:
    vals = [getattr(r, field) for r in rs if getattr(r, field)]
    return statistics.median(vals) if vals else None


def _figures(task: str, kind: str, rows: list[tuple[list, list]]) -> SpecFigures:
    n = len(rows)
    # the speed-up over the items the kind drafted on: on the others it ran plain decoding's
    # steps (its own lookup time is draft_share), so their speed ratio is the host's noise, not
    # its doing (on a busy 2-core host, 9x between two such requests of one item)
    active = [(p, s) for p, s in rows if sum(r.drafted for r in s) > 0] or rows
    logs = np.array([np.log(_median(s, "engine_tps") / _median(p, "engine_tps"))
                     if _median(s, "engine_tps") and _median(p, "engine_tps") else np.nan
                     for p, s in active])
    ok = logs[np.isfinite(logs)]
    speed = lo = hi = None
    if ok.size:
        speed = float(np.exp(ok.mean()))
    if ok.size > 1:
        half = t975(ok.size - 1) * float(ok.std(ddof=1)) / np.sqrt(ok.size)
        lo, hi = float(np.exp(ok.mean() - half)), float(np.exp(ok.mean() + half))
    drafted = np.array([sum(r.drafted for r in s) for _, s in rows], dtype=float)
    accepted = np.array([sum(r.accepted for r in s) for _, s in rows], dtype=float)
    steps = sum(r.steps for _, s in rows for r in s)
    acc = acc_lo = acc_hi = None
    if drafted.sum() > 0:
        acc = float(accepted.sum() / drafted.sum())
        acc_lo, acc_hi = _bootstrap(lambda i: accepted[i].sum() / drafted[i].sum(), n)
    draft_ms = [r.draft_ms for _, s in rows for r in s if r.draft_ms is not None]
    pred_ms = [r.predicted_ms for _, s in rows for r in s if r.draft_ms is not None]
    same = sum(p[0].text == s[0].text for p, s in rows)
    id_lo, id_hi = wilson(same, n)
    drafting = int((drafted > 0).sum())
    verdict = "undetermined" if lo is None or lo <= 1 <= hi else ("wins" if lo > 1 else "loses")
    if drafted.sum() == 0:  # it never drafted: a difference in speed is not its doing
        verdict = "idle"
    elif drafting < MIN_DRAFTING_ITEMS:  # an interval over one or two items says nothing
        verdict = "undetermined"
    return SpecFigures(
        task=task, setting=kind, items=n, speedup=speed, speedup_low=lo, speedup_high=hi,
        acceptance=acc, acceptance_low=acc_lo, acceptance_high=acc_hi,
        mean_accepted_len=1 + float(accepted.sum()) / steps if steps else None,
        draft_share=sum(draft_ms) / sum(pred_ms) if draft_ms and sum(pred_ms) else None,
        identical=same, identical_low=id_lo, identical_high=id_hi, verdict=verdict,
        drafting_items=drafting)


def timing_agreement(requests: list[SpecRequest]) -> float | None:
    """The largest relative gap, over the settings, between the client's decode speed and the
    server's own on the same requests: tokens after the first over the time after the first,
    summed over a setting's requests on either clock. (A gap of the medians compared one item's
    speed at the client with another item's at the server: n-gram kinds' speeds spread so widely
    over items that the two medians fell on different items, 16% apart while no request's own
    two speeds were.)"""
    gaps = []
    for setting in dict.fromkeys(r.setting for r in requests):
        rs = [r for r in requests if r.setting == setting and r.client_tps and r.engine_tps
              and r.generated > 1]
        if rs:
            n = sum(r.generated - 1 for r in rs)
            client = n / sum((r.generated - 1) / r.client_tps for r in rs)
            engine = n / sum((r.generated - 1) / r.engine_tps for r in rs)
            gaps.append(abs(client - engine) / engine)
    return max(gaps) if gaps else None
