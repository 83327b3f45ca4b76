"""Sequential evaluation: the items go in looks, and after each look every quality
gate is re-judged with an anytime-valid confidence sequence (evaluate/anytime.py); what is
settled stops.

- Cells are (candidate, task type). A look adds `look_items` items to every open cell, taken in
  the fixed order of the task's items: round-robin over difficulty inside the task, the tasks
  themselves round-robin as the fixed-N cut (eval_sets.spread) chose them. Whatever stops
  early has used a prefix of what fixed N would use, so at the cap the two are the same run.
- A candidate's cells stay open while any gate that can still change the decision is open:
  one of its whole-candidate gates, the task's own gates (a hybrid routes on them), or its
  rank among the survivors while their quality intervals overlap. A candidate that fails a
  gate no routing avoids stops altogether.
- The reference is paired: it answers exactly the items some candidate has needed.
- Outputs are stored one by one, so a killed run replays the same looks from the store.
- With a deadline, each look spends the time on the least settled cells first and the run
  ends where the deadline falls, naming what is left undetermined and the items next in line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from edgepick.evaluate import anytime
from edgepick.evaluate.futility import futile
from edgepick.clock import now
from edgepick.evaluate.seq_gates import EvalGate, Judged, interval, judge
from edgepick.records.evaluation import CellStop, GateStop, SequentialCandidate, SequentialInfo

LOOK_ITEMS = 4  # per open cell and look: small enough that a clear verdict stops early


def task_order(items: list) -> dict[str, list[int]]:
    """Item indices per task (tasks in order of appearance), round-robin over difficulty."""
    by_task: dict[str, dict[str, list[int]]] = {}
    for i, it in enumerate(items):
        by_task.setdefault(it.task, {}).setdefault(it.difficulty or "unrated", []).append(i)
    out = {}
    for task, by_diff in by_task.items():
        queues = [list(q) for q in by_diff.values()]
        seq: list[int] = []
        while any(queues):
            for q in queues:
                if q:
                    seq.append(q.pop(0))
        out[task] = seq
    return out


@dataclass
class Cell:
    n: int = 0
    open: bool = True
    why: str = ""  # what kept it open at its last look, or why it closed
    look: int = 0  # the last look that gave it items


@dataclass
class CandState:
    cand: object
    cells: dict[str, Cell]
    stopped: str = ""  # why it stopped for good ("" while running)
    stops: dict[tuple[str, str | None], GateStop] = field(default_factory=dict)
    last: dict[tuple[str, str | None], Judged] = field(default_factory=dict)
    rank_open: bool = False  # a survivor whose quality interval still overlaps another's
    rank_with: list[str] = field(default_factory=list)  # those others, at the latest look
    settled_look: int | None = None  # since when every gate it was judged on is settled
    last_look: int = 0  # the last look that gave it items


@dataclass
class Sequential:
    """Everything one sequential evaluation needs besides the models and the store."""

    gates: list[EvalGate]
    look_items: int = LOOK_ITEMS
    deadline: float | None = None  # clock.now() at which to stop generating
    budget_s: float | None = None
    # candidate -> the gate outside evaluation it fails (memory, speed): left out, named
    not_evaluated: dict[str, str] = field(default_factory=dict)


def run_looks(items: list, reference, candidates: list, seq: Sequential, generate, score,
              k: int = 1):
    """Drive the looks. `generate(model, indices, deadline) -> {index: output}` (stored
    outputs included; may return fewer when the deadline passes); `score(indices, outputs) ->
    outcomes` aligned with indices. Returns (candidate index lists, reference indices, outputs by
    model position (0 = reference), SequentialInfo)."""
    order = task_order(items)
    caps = {t: len(ix) for t, ix in order.items()}
    states = [CandState(c, {t: Cell() for t in order}) for c in candidates]
    outs: list[dict[int, dict]] = [dict() for _ in range(1 + len(candidates))]
    cand_gates = [g for g in seq.gates if "candidate" in g.scopes]
    task_gates = [g for g in seq.gates if "task" in g.scopes]
    cache: dict[tuple[int, int], object] = {}

    def scored(pos: int, ix: list[int]) -> list:
        """Outcomes of model `pos` (0 = reference) on items ix, each scored once."""
        miss = [i for i in ix if (pos, i) not in cache]
        if miss:
            cache.update(zip(((pos, i) for i in miss), score(miss, [outs[pos][i] for i in miss])))
        return [cache[(pos, i)] for i in ix]

    look = 0
    exhausted = False
    while True:
        want = {}
        for ci, st in enumerate(states):
            if st.stopped:
                continue
            grow = {t: min(caps[t], c.n + seq.look_items) for t, c in st.cells.items() if c.open}
            if any(grow[t] > st.cells[t].n for t in grow):
                want[ci] = grow
        if not want:
            break
        if seq.deadline is not None and now() >= seq.deadline:
            exhausted = True
            break
        look += 1
        # least settled cells first: only matters when a deadline cuts the look short
        prio = sorted(want, key=lambda ci: -_open_distance(states[ci]))
        new_idx = {ci: [i for t, n in want[ci].items() for i in order[t][states[ci].cells[t].n:n]]
                   for ci in prio}
        ref_need = sorted({i for ci in prio for i in new_idx[ci]} - set(outs[0]),
                          key=lambda i: min(p for p, ci in enumerate(prio) if i in new_idx[ci]))
        outs[0].update(generate(reference, ref_need, seq.deadline))
        for ci in prio:
            todo = [i for i in new_idx[ci] if i in outs[0] and i not in outs[1 + ci]]
            outs[1 + ci].update(generate(candidates[ci], todo, seq.deadline))
        for ci in prio:  # a cell keeps the prefix both sides answered
            st = states[ci]
            for t, n in want[ci].items():
                seqn = order[t]
                m = st.cells[t].n
                while m < n and seqn[m] in outs[0] and seqn[m] in outs[1 + ci]:
                    m += 1
                if m < n:
                    exhausted = True
                if m > st.cells[t].n:
                    st.cells[t].look = st.last_look = look
                st.cells[t].n = m
        for ci, st in enumerate(states):
            if not st.stopped:
                _judge(st, order, ci, scored, cand_gates, task_gates, look, k, caps,
                       sorted(outs[0]))
        _ranking(states, order, scored, caps)
        if exhausted:
            break
    info = _info(states, order, outs, seq, look, exhausted, k, cand_gates, task_gates, scored,
                 caps, items)
    cand_ix = [sorted(i for t in order for i in order[t][:st.cells[t].n]) for st in states]
    return cand_ix, sorted(outs[0]), outs, info


def _open_distance(st: CandState) -> float:
    open_ = [j.distance for j in st.last.values() if j.verdict == "undetermined"]
    return max(open_, default=1.0)


def _outcomes(st, order, ci, scored):
    ix = sorted(i for t in order for i in order[t][:st.cells[t].n])
    return scored(1 + ci, ix), scored(0, ix)


def _judge(st: CandState, order, ci, scored, cand_gates, task_gates, look, k, caps, ref_known):
    cand, ref = _outcomes(st, order, ci, scored)
    open_gates = []
    for g in cand_gates:
        j = judge(g, cand, ref, k)
        _note(st, g, None, j, look)
        if j.verdict == "fail" and not g.routable:
            st.stopped = f"fails {g.metric}, which no routing avoids"
        if j.verdict == "undetermined":
            open_gates.append(f"{g.metric} over all tasks")
    for t in order:
        cell = st.cells[t]
        why = list(open_gates)
        if cell.n:
            tc = [o for o in cand if o.task == t]
            tr = [o for o in ref if o.task == t]
            for g in task_gates:
                j = judge(g, tc, tr, k)
                if j.n == 0:  # the task has no such figure (strict form, tool calls)
                    continue
                _note(st, g, t, j, look)
                if j.verdict == "undetermined":
                    why.append(f"{g.metric} in {t}")
        else:
            why.append("no items yet")
        if st.rank_open:
            why.append(_rank_why(st))
        _close(cell, why, caps[t], look)
    settled = all(j.verdict != "undetermined" for j in st.last.values())
    st.settled_look = (st.settled_look or look) if settled and st.last else None
    if not st.stopped and any(c.open for c in st.cells.values()):
        st.stopped = futile(cand, ref, scored(0, ref_known), cand_gates, task_gates, caps,
                            k) or ""
    if not st.stopped and not any(c.open for c in st.cells.values()):
        st.stopped = "settled" if not open_gates and settled else "cap"


def _close(cell: Cell, why: list[str], cap: int, look: int) -> None:
    """Open while something it can still change is open; the reason is kept for the notes."""
    cell.open = bool(why) and cell.n < cap
    if cell.open:
        cell.why = "open: " + ", ".join(why)
    elif why:
        cell.why = f"all {cap} items used, still open: " + ", ".join(why)
    else:
        cell.why = f"settled at look {look}"


def _rank_why(st: CandState) -> str:
    return "rank against " + ", ".join(st.rank_with) + " (quality intervals overlap)"


def _note(st: CandState, g: EvalGate, task, j: Judged, look: int) -> None:
    key = (g.metric, task)
    st.last[key] = j
    prev = st.stops.get(key)
    settled = j.verdict != "undetermined"
    if settled and (prev is None or prev.look is None or prev.verdict != j.verdict):
        st.stops[key] = GateStop(metric=g.metric, task=task, verdict=j.verdict, look=look,
                                 items=j.n)
    elif not settled:
        st.stops[key] = GateStop(metric=g.metric, task=task, verdict="undetermined", items=j.n)


def _ranking(states, order, scored, caps) -> None:
    """Survivors (every whole-candidate gate passed) keep going while their quality confidence
    sequences overlap: their order could still change."""
    surv = []
    for ci, st in enumerate(states):
        st.rank_open = False
        cand_keys = [k for k in st.last if k[1] is None]
        if cand_keys and all(st.last[k].verdict == "pass" for k in cand_keys):
            cand, _ = _outcomes(st, order, ci, scored)
            surv.append((ci, anytime.confidence_sequence([o.score for o in cand])))
    for ci, (lo, hi) in surv:
        st = states[ci]
        close = [states[cj].cand.name for cj, (lo2, hi2) in surv
                 if cj != ci and not (hi < lo2 or hi2 < lo)]
        if close and not st.stopped.startswith(("fails", "futile")):
            st.rank_open, st.rank_with = True, close
            for t, cell in st.cells.items():
                if cell.n < caps[t]:
                    cell.open = True
                    cell.why = "open: " + _rank_why(st)
                    if st.stopped in ("settled", "cap"):
                        st.stopped = ""


def _info(states, order, outs, seq, look, exhausted, k, cand_gates, task_gates, scored, caps,
          items) -> SequentialInfo:
    fixed = sum(caps.values())
    cands, undetermined, to_settle = [], [], {}
    for ci, st in enumerate(states):
        n = sum(c.n for c in st.cells.values())
        cand, ref = _outcomes(st, order, ci, scored)
        stops = []
        for (metric, task), gs in sorted(st.stops.items(), key=lambda kv: (kv[0][1] or "", kv[0][0])):
            g = next(x for x in (cand_gates if task is None else task_gates) if x.metric == metric)
            sel_c = cand if task is None else [o for o in cand if o.task == task]
            sel_r = ref if task is None else [o for o in ref if o.task == task]
            lo, hi = interval(g, sel_c, sel_r)
            stops.append(gs.model_copy(update={"low": lo, "high": hi}))
            if gs.verdict == "undetermined":
                name = f"{st.cand.name}: {metric}" + (f" ({task})" if task else "")
                undetermined.append(name)
                tasks = [task] if task else list(order)
                nxt = [items[i].id for t in tasks for i in order[t][st.cells[t].n:][:seq.look_items]]
                to_settle[name] = nxt or ["none left in the eval set: add items"]
        why = st.stopped or ("budget" if exhausted else "cap")
        cands.append(SequentialCandidate(name=st.cand.name, items=n, generations=n * k,
                                         fixed_items=fixed, stopped_look=_stop_look(stops, look),
                                         why=why, gates=stops, went_on=_went_on(st),
                                         cells=_cells(st, caps, why, exhausted)))
    return SequentialInfo(alpha=anytime.ALPHA, looks=look, look_items=seq.look_items,
                          fixed_items=fixed, planned_per_task=dict(caps),
                          reference_items=len(outs[0]), candidates=cands,
                          budget_s=seq.budget_s, budget_exhausted=exhausted,
                          not_evaluated=dict(seq.not_evaluated),
                          undetermined=undetermined, to_settle=to_settle)


def _went_on(st: CandState) -> str:
    """Why a candidate whose every gate was settled still got items: its rank was open."""
    if st.settled_look is None or st.last_look <= st.settled_look or not st.rank_with:
        return ""
    return (f"every gate settled at look {st.settled_look}, it went on to look {st.last_look}: "
            f"its {_rank_why(st)} could still change")


def _cells(st: CandState, caps: dict[str, int], why: str, exhausted: bool) -> list[CellStop]:
    out = []
    for t, c in st.cells.items():
        if c.open and why.startswith(("fails", "futile")):
            end = f"stopped with the candidate ({why})"
        elif c.open and exhausted:
            end = "time budget spent while " + c.why
        else:
            end = c.why
        out.append(CellStop(task=t, items=c.n, planned=caps[t], last_look=c.look or None,
                            why=end))
    return out


def _stop_look(stops: list[GateStop], last: int) -> int | None:
    if any(s.verdict == "undetermined" for s in stops) or not stops:
        return last or None
    return max(s.look or 0 for s in stops) or None
