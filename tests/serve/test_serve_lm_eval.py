"""Real lm-eval against `edgepick serve`, unchanged (issue 25 item 7): a local multiple-choice task
through `local-completions` with `tokenizer_backend=remote` (prompt log-probabilities from
`echo` + `logprobs`, the tokenizer from /tokenizer_info and /tokenize), its accuracy compared with
edgepick's own scoring of the same items; and generation through `local-completions` and
`local-chat-completions`. The tasks and their data live in the test's tmp dir: nothing from a hub.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from parts import need_module
from serve_harness import serve

pytestmark = pytest.mark.slow  # each lm-eval run imports datasets and evaluate: a minute or more

ITEMS = [
    ("What color is the sky on a clear day?", ["blue", "green", "red"], 0),
    ("How many legs does a cat have?", ["two", "four", "six"], 1),
    ("What do bees make?", ["milk", "honey", "bread"], 1),
    ("Which is the largest?", ["an ant", "a mouse", "an elephant"], 2),
    ("What is frozen water called?", ["ice", "steam", "sand"], 0),
    ("Which animal barks?", ["a dog", "a fish", "a bird"], 0),
    ("What do you use to write on paper?", ["a spoon", "a pen", "a shoe"], 1),
    ("Where does the sun rise?", ["in the west", "in the east", "under the sea"], 1),
    ("What is two plus two?", ["three", "five", "four"], 2),
    ("Which season is the coldest?", ["winter", "summer", "spring"], 0),
]


def _task_dir(tmp: Path) -> Path:
    d = tmp / "tasks"
    d.mkdir()
    data = d / "items.jsonl"
    data.write_text("".join(json.dumps({"question": q, "choices": c, "answer": a}) + "\n"
                            for q, c, a in ITEMS))
    common = (f"dataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {data}\n"
              "test_split: test\ndoc_to_text: \"Question: {{question}}\\nAnswer:\"\n")
    (d / "edgepick_mc.yaml").write_text(
        "task: edgepick_mc\n" + common + "output_type: multiple_choice\n"
        "doc_to_choice: \"{{choices}}\"\ndoc_to_target: answer\n"
        "metric_list:\n  - metric: acc\n")
    (d / "edgepick_gen.yaml").write_text(
        "task: edgepick_gen\n" + common + "output_type: generate_until\n"
        "doc_to_target: \"{{choices[answer]}}\"\n"
        "generation_kwargs:\n  until: [\"\\n\"]\n  max_gen_toks: 8\n  do_sample: false\n"
        "metric_list:\n  - metric: exact_match\n")
    return d


def _lm_eval(tmp: Path, model: str, model_args: str, tasks: list[str],
             *extra: str) -> tuple[dict, dict[str, list]]:
    """Run the `lm-eval` command line as a user would, on one or more tasks in one run (each
    run indexes lm-eval's thousands of built-in task files first: seconds of CPU); its results
    and each task's logged samples."""
    need_module("lm_eval")
    out = tmp / f"out-{model}-{'-'.join(tasks)}"
    env = dict(os.environ, HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1",
               HF_HOME=str(tmp / "hf"), TOKENIZERS_PARALLELISM="false")
    cmd = [sys.executable, "-m", "lm_eval", "run", "--model", model, "--model_args", model_args,
           "--tasks", ",".join(tasks), "--include_path", str(tmp / "tasks"),
           "--output_path", str(out), "--log_samples", *extra]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (results,) = list(out.rglob("results_*.json"))
    samples = {}
    for task in tasks:
        (path,) = list(out.rglob(f"samples_{task}_*.jsonl"))
        samples[task] = [json.loads(line) for line in path.read_text().splitlines()
                         if line.strip()]
    return json.loads(results.read_text()), samples


@pytest.fixture(scope="module")
def served(tiny_model, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lm_eval")
    _task_dir(tmp)
    with serve(["-m", tiny_model, "--slots", "2", "--ctx", "512", "--max-tokens", "64"],
               tmp) as s:
        yield s, tmp


def _own_scores(model: str) -> list[list[float]]:
    """edgepick's own scoring of the same items: the log-probability of each choice after the
    question, from the same file through the Backend contract, the token pairs split as
    lm-eval splits them (the whole text encoded, the context's tokens cut off)."""
    from edgepick.backends import LoadOptions, get_backend
    from edgepick.backends.base import token_logprob
    from edgepick.records.candidate import Candidate, RuntimeSettings
    from edgepick.records.model_ref import ModelRef

    ref = ModelRef.of(model)  # a path: the test's model file
    backend = get_backend(ref.backend)
    backend.load(Candidate(ref=ref, settings=RuntimeSettings(n_ctx=512, n_batch=512,
                                                              n_ubatch=512)),
                 LoadOptions(need_logits=True))
    try:
        out = []
        for q, choices, _ in ITEMS:
            context = f"Question: {q}\nAnswer:"
            ctx = backend.tokenize(context, add_bos=False)
            row = []
            for c in choices:
                whole = backend.tokenize(context + " " + c, add_bos=False)
                cont = whole[len(ctx):]
                logits = backend.logits(ctx + cont)
                row.append(sum(token_logprob(logits[len(ctx) + i - 1], t)
                               for i, t in enumerate(cont)))
            out.append(row)
        return out
    finally:
        backend.unload()


@pytest.fixture(scope="module")
def completions_run(served):
    """`local-completions` with the remote tokenizer: the multiple-choice task and generation
    in one lm-eval run, read by the two tests below."""
    s, tmp = served
    args = (f"model=tiny,base_url={s.v1}/completions,tokenizer_backend=remote,"
            "num_concurrent=1,max_retries=1,timeout=120")
    return _lm_eval(tmp, "local-completions", args, ["edgepick_mc", "edgepick_gen"])


def test_lm_eval_multiple_choice_with_the_remote_tokenizer(completions_run, tiny_model):
    results, by_task = completions_run
    samples = by_task["edgepick_mc"]
    acc = results["results"]["edgepick_mc"]["acc,none"]
    assert len(samples) == len(ITEMS)
    own = _own_scores(tiny_model)
    own_right = [max(range(len(r)), key=r.__getitem__) == ITEMS[i][2] for i, r in enumerate(own)]
    assert acc == pytest.approx(sum(own_right) / len(ITEMS))
    for sample in samples:
        i = sample["doc_id"]
        theirs = [float(r[0]) for r in sample["filtered_resps"]]
        assert theirs == pytest.approx(own[i], abs=1e-3), (i, theirs, own[i])
        assert bool(sample["acc"]) == own_right[i]


def test_lm_eval_completions_generation(completions_run):
    results, by_task = completions_run
    samples = by_task["edgepick_gen"]
    assert "exact_match,none" in results["results"]["edgepick_gen"]
    assert len(samples) == len(ITEMS) and all(isinstance(x["resps"][0][0], str) for x in samples)


def test_lm_eval_chat_completions_generation(served):
    s, tmp = served
    args = f"model=tiny,base_url={s.v1}/chat/completions,max_retries=1"
    results, by_task = _lm_eval(tmp, "local-chat-completions", args, ["edgepick_gen"],
                                "--apply_chat_template")
    samples = by_task["edgepick_gen"]
    assert "exact_match,none" in results["results"]["edgepick_gen"]
    assert len(samples) == len(ITEMS) and all(isinstance(x["resps"][0][0], str) for x in samples)
