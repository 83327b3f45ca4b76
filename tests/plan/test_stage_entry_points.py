"""Every stage is called the same way, `run(request, store, progress) -> record`, stores what it
measured under its own kind and key, and on a second run reuses (and so owns) the same rows."""

from __future__ import annotations

import importlib
import inspect

import pytest

from edgepick.progress import ProgressEvent, silent
from edgepick.records.candidate import Candidate, RuntimeSettings
from edgepick.inputs import resolve_ref
from edgepick.records.model_ref import ModelRef
from edgepick.store import ResultStore

STAGES = ["edgepick.prune.stage", "edgepick.fit.stage", "edgepick.quantize.stage",
          "edgepick.convert.stage",
          "edgepick.bench.runner", "edgepick.evaluate.stage", "edgepick.evaluate.fidelity_stage",
          "edgepick.evaluate.consistency_stage"]


@pytest.mark.parametrize("module", STAGES)
def test_one_entry_point_of_one_shape(module):
    params = list(inspect.signature(importlib.import_module(module).run).parameters)
    assert params[:3] == ["req", "store", "progress"]


def _quantizer() -> bool:
    from pathlib import Path

    from edgepick.llama_tools import tool_path

    try:
        return Path(tool_path("llama-quantize")).is_file()
    except Exception:  # noqa: BLE001 - not built: the other stages are still checked
        return False


def _requests(tiny: ModelRef, out):
    from edgepick.bench.sweeps import BenchRequest
    from edgepick.cli.cmd_eval import demo_eval_path
    from edgepick.devices.catalog import load_device
    from edgepick.evaluate.consistency_stage import ConsistencyRequest
    from edgepick.evaluate.fidelity import bundled_text
    from edgepick.evaluate.fidelity_stage import FidelityRequest
    from edgepick.evaluate.stage import EvalRequest
    from edgepick.fit.stage import FitRequest

    from edgepick.quantize.stage import QuantizeRequest

    rt = RuntimeSettings(threads=1, n_ctx=256)
    cand = Candidate(ref=tiny, settings=rt)
    built = [("edgepick.quantize.stage", "quantize",
              QuantizeRequest.ladder(tiny, ["Q8_0"], out, threads=1))] if _quantizer() else []
    return built + [
        ("edgepick.fit.stage", "fit",
         FitRequest.for_models([tiny], ["native"], ctxs=[256],
                               device=load_device("raspberry-pi-5"))),
        ("edgepick.bench.runner", "bench",
         BenchRequest(models=[tiny], settings=rt, prompt_lengths=[8], gen_tokens=2, warmup=0,
                      repeats=1)),
        # eval re-scores on every run (cheap); what it must not redo is inference
        ("edgepick.evaluate.stage", "eval_output",
         EvalRequest(data=demo_eval_path(), reference=cand, candidates=[cand], limit=1)),
        ("edgepick.evaluate.fidelity_stage", "fidelity",
         FidelityRequest(reference=tiny, candidate=tiny, text=str(bundled_text("fidelity")),
                         ctx=32, max_chunks=1, threads=1, cache=False)),
        ("edgepick.evaluate.consistency_stage", "consistency",
         ConsistencyRequest(reference=tiny, candidate=tiny, data=_one_prompt(out),
                            max_tokens=2, threads=1)),
    ]


def _one_prompt(folder) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "one.jsonl"
    path.write_text('{"id": "p1", "task": "qa", "prompt": "Hello?"}\n', encoding="utf-8")
    return str(path)


def test_stages_store_their_rows_and_a_rerun_owns_them_without_measuring(store_path, tmp_path):
    tiny = resolve_ref("tiny")
    for module, kind, req in _requests(tiny, tmp_path / "q"):
        run = importlib.import_module(module).run
        ticks: list[ProgressEvent] = []
        with ResultStore(store_path) as st:
            first = st.begin_run(f"first {kind}")
            run(req, st, ticks.append)
            rows = {k: p for k, p, _ in st.rows_with_runs(kind)}
        assert rows and ticks, kind
        assert all(isinstance(t, ProgressEvent) for t in ticks), kind
        with ResultStore(store_path) as st:
            second = st.begin_run(f"second {kind}")
            run(req, st, silent)
            again = list(st.rows_with_runs(kind))
        assert {k: p for k, p, _ in again} == rows, f"{kind}: a rerun measured again"
        assert all(owners[-2:] == [first, second] for _, _, owners in again), kind
