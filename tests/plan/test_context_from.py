"""`context_from: prompts.jsonl`: the product's prompts, counted with each candidate's own
tokenizer, give its context percentiles, its bench lengths and its gates' lengths (issue 26)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from edgepick.backends.registry import get_backend
from edgepick.decide.scenarios import ContextTokens, Scenario
from edgepick.errors import InputError
from edgepick.plan.bench_lengths import bench_lengths
from edgepick.plan.context_from import (context_path, gated_scenario, nearest_rank,
                                        read_prompts)
from edgepick.plan.loader import load_plan
from edgepick.plan.requests import _context_from
from edgepick.records.candidate import Candidate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PROMPTS = [{"prompt": "Hi"}, {"prompt": "What is the capital of France? " * 3},
           {"messages": [{"role": "system", "content": "Be brief."},
                         {"role": "user", "content": "Name three colours."}]},
           {"prompt": "Summarise: " + "the quick brown fox jumps over the lazy dog. " * 12},
           {"prompt": "One two three four five six seven"}]


def _write(path: Path, rows) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def _engine_counts(model: str) -> list[int]:
    """The prompt lengths the engine itself reports when it runs each prompt."""
    b = get_backend("llama_cpp")
    b.load(Candidate(model=model))
    try:
        return [b.generate(r.get("prompt") or r["messages"], 1,
                           chat="messages" in r).prompt_tokens for r in PROMPTS]
    finally:
        b.unload()


def test_prompts_are_counted_with_the_candidates_tokenizer(tmp_path, tiny_model):
    lp = load_plan(EXAMPLES / "tiny.yaml")
    _write(tmp_path / "prompts.jsonl", PROMPTS)
    lp.plan.scenario.overrides = {"context_from": str(tmp_path / "prompts.jsonl")}
    cand = SimpleNamespace(name="tiny-f16")
    st = SimpleNamespace(lp=lp, context={}, notes=[],
                         candidate=lambda c: Candidate(model=tiny_model, label=c.name))
    sc = Scenario(name="x", context_from="prompts.jsonl")
    counted = _context_from(st, [cand], sc)

    counts = _engine_counts(tiny_model)
    want = ContextTokens(p50=nearest_rank(counts, 50), p95=nearest_rank(counts, 95),
                         p99=nearest_rank(counts, 99))
    assert sorted(counts)[2] == want.p50 and max(counts) == want.p95 == want.p99
    assert counted == {"tiny-f16": want}
    assert st.notes == [f"context from prompts.jsonl: P50 {want.p50}, P95 {want.p95}, "
                        f"P99 {want.p99} tokens (5 prompts, tiny-f16's tokenizer)"]
    lengths, gen, notes = bench_lengths([32, 64], 8, 512, sc, counted["tiny-f16"])
    assert lengths == [32, 64] + sorted({want.p50, want.p95} - {32, 64}) and gen == 8
    assert notes == []
    # every candidate counted alike: the decision gates at those lengths
    assert gated_scenario(sc, counted, []).context_tokens == want


def test_tokenizers_that_disagree_are_said_and_given_lengths_win():
    sc = Scenario(name="x", context_from="p.jsonl")
    a, b = ContextTokens(p50=10, p95=20, p99=30), ContextTokens(p50=11, p95=20, p99=30)
    notes: list[str] = []
    assert gated_scenario(sc, {"a": a, "b": b}, notes).context_tokens is None
    assert len(notes) == 1 and "count context_from differently" in notes[0]
    given = Scenario(name="y", context_tokens={"p50": 5})
    assert gated_scenario(given, {"a": a}, []).context_tokens.p50 == 5


def test_nearest_rank():
    assert [nearest_rank(list(range(1, 101)), p) for p in (50, 95, 99)] == [50, 95, 99]
    assert nearest_rank([7], 99) == 7 and nearest_rank([3, 1, 2], 50) == 2


def test_a_bad_line_is_one_line_naming_file_and_line(tmp_path):
    path = _write(tmp_path / "p.jsonl", [{"prompt": "ok"}, {"text": "no prompt"}])
    with pytest.raises(InputError) as err:
        read_prompts(path)
    assert str(err.value) == (f"{path}:2: expected a JSON object with 'prompt' (a string) or "
                              "'messages' (a chat list)")
    _write(path, [{"prompt": "ok"}, "", "{broken"])
    with pytest.raises(InputError, match=r"p\.jsonl:3: broken JSON"):
        read_prompts(path)


def test_the_path_is_relative_to_the_file_that_names_it(tmp_path):
    lp = load_plan(EXAMPLES / "tiny.yaml")
    lp.plan.scenario.overrides = {"context_from": "prompts.jsonl"}
    assert context_path(lp) == str(EXAMPLES / "prompts.jsonl")
    (tmp_path / "sc").mkdir()
    (tmp_path / "sc" / "mine.yaml").write_text("name: mine\ncontext_from: p.jsonl\n")
    lp.plan.scenario.name, lp.plan.scenario.overrides = str(tmp_path / "sc" / "mine.yaml"), {}
    assert context_path(lp) == str(tmp_path / "sc" / "p.jsonl")


@pytest.mark.slow
def test_run_benches_and_gates_at_the_counted_lengths(tmp_path, tiny_model):
    from edgepick.plan.runner import run_plan
    from edgepick.store import ResultStore

    lp = load_plan(EXAMPLES / "tiny.yaml")
    lp.plan.output = str(tmp_path / "run")
    lp.plan.bench.quiet_wait_s = 0  # waiting for a quiet host: tests/bench/test_host_load.py
    lp.plan.quantize = []
    lp.plan.eval.enabled = lp.plan.fidelity.enabled = lp.plan.report.enabled = False
    _write(tmp_path / "prompts.jsonl", PROMPTS)
    lp.plan.scenario.overrides = {"context_from": str(tmp_path / "prompts.jsonl"),
                                  "constraints": {"ttft_p50_ms_max": 60000,
                                                  "ttft_p99_ms_max": 60000}}
    counts = _engine_counts(tiny_model)
    p50, p99 = nearest_rank(counts, 50), nearest_rank(counts, 99)
    res = run_plan(lp)
    with ResultStore(lp.store_path) as st:
        lengths = {p["settings"]["prompt_tokens"] for _, p in st.items("bench")
                   if p.get("sweep") == "prompt_length"}
    assert lengths == {32, 64, p50, p99}
    assert any(n.startswith(f"context from {tmp_path / 'prompts.jsonl'}: P50 {p50}")
               for n in res.notes)
    gates = {g.metric: g for g in res.decision.ranking[0].gates}
    assert gates["ttft_p50_ms"].at_tokens == p50 and gates["ttft_p50_ms"].verdict != "unmeasured"
    assert gates["ttft_p99_ms"].at_tokens == p99 and gates["ttft_p99_ms"].verdict != "unmeasured"
