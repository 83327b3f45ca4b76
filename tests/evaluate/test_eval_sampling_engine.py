"""The eval stage under sampling through the real in-process engine (issue 26 item 3): two
samples per item on the tiny model, drawn by llama.cpp's seeded sampler, stored, and read back."""

from __future__ import annotations

import json

from edgepick.evaluate.stage import EvalRequest, run
from edgepick.records import Candidate, RuntimeSettings
from edgepick.store import ResultStore

SAMPLING = {"temperature": 0.9, "top_p": 0.95, "top_k": 40, "repeat_penalty": 1.1}


def test_two_samples_per_item_end_to_end(tiny_model, tmp_path):
    data = tmp_path / "set.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "task": "yes_no", "prompt": p,
                                        "reference": "yes"}) + "\n"
                            for i, p in enumerate(["Is the sky blue?", "Is water wet?",
                                                   "Do birds fly?"])), encoding="utf-8")

    def cand(label: str, seed: int) -> Candidate:
        return Candidate(model=tiny_model, label=label,
                         settings=RuntimeSettings(n_ctx=512, threads=1, seed=seed))

    req = dict(data=str(data), reference=cand("ref", 42), candidates=[cand("tiny", 100)],
               max_tokens={"yes_no": 8})
    store = ResultStore(tmp_path / "results.sqlite")
    try:
        greedy = run(EvalRequest(**req), store).candidates[0]
        first = run(EvalRequest(**req, sampling=SAMPLING, samples=2), store)
        again = run(EvalRequest(**req, sampling=SAMPLING, samples=2), store)
    finally:
        store.close()
    c = first.candidates[0]
    assert first.samples == 2 and first.sampling == SAMPLING
    assert c.generated == 3 * 2 and c.reused == 0
    assert all([s.seed for s in it.samples] == [100, 101] for it in c.items)
    outs = [s.output for it in c.items for s in it.samples]
    assert len(set(outs)) > 1  # six seeded draws of 8 tokens all alike: not sampling
    assert outs != [it.output for it in greedy.items for _ in range(2)]
    # a second run reads every sample back from the store, unchanged
    r = again.candidates[0]
    assert r.generated == 0 and r.reused == 6
    assert [s.output for it in r.items for s in it.samples] == outs
