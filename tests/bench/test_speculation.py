"""Speculative decoding measured through llama-server (the `llama_server` engine): the server
runs with exactly the kind's flags, its own `timings` report drafted and accepted tokens, the
decode speed the client measures agrees with the server's within 5%, greedy text (and sampled
text for one seed) is unchanged by speculation, a foreign draft is refused in one line, and the
per-task figures carry their intervals."""

from __future__ import annotations

import pytest

from edgepick.assets.bundled import gemma3_270m_q4_k_m, smollm2_q4_1
from edgepick.backends import LoadOptions, get_backend
from edgepick.bench.speculation import figures, run_requests, timing_agreement
from edgepick.errors import EdgepickError
from edgepick.evaluate.items import EvalItem
from edgepick.records.candidate import Candidate, RuntimeSettings
from edgepick.records.model_ref import ModelRef
from tests.parts import need_tool

# a prompt whose answer copies a span of itself, so an n-gram kind has something to draft from
COPY = ("Repeat the following list exactly, twice, one item per line:\n"
        "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike")


SAMPLED = {"temperature": 1.0, "top_p": 1.0, "top_k": 0, "seed": 7}


@pytest.fixture(scope="module")
def target() -> ModelRef:
    need_tool("llama-server")
    return ModelRef.of(str(smollm2_q4_1()), backend="llama_server")


def _loaded(target, spec):
    b = get_backend("llama_server")
    b.load(Candidate(ref=target, settings=RuntimeSettings(threads=2, n_ctx=512,
                                                          speculative=spec)), LoadOptions())
    return b


def test_a_draft_speculates_with_its_flags_and_keeps_greedy_text(target):
    plain = _loaded(target, None)
    try:
        want = plain.generate([{"role": "user", "content": COPY}], 20, chat=True)
        want_sampled = plain.generate([{"role": "user", "content": COPY}], 20, chat=True,
                                      sampling=SAMPLED)
        assert "--spec-type" not in plain.command
    finally:
        plain.unload()
    spec = {"type": "draft-simple", "model": str(smollm2_q4_1()), "n_max": 4}
    b = _loaded(target, spec)
    try:
        i = b.command.index("--spec-type")  # what the running engine was started with
        assert b.command[i:i + 6] == ["--spec-type", "draft-simple", "-md", str(smollm2_q4_1()),
                                      "--spec-draft-n-max", "4"]
        with open(f"/proc/{b.proc.pid}/cmdline", "rb") as fh:
            assert b"--spec-type\0draft-simple\0" in fh.read()
        got = b.generate([{"role": "user", "content": COPY}], 20, chat=True)
        got_sampled = b.generate([{"role": "user", "content": COPY}], 20, chat=True,
                                 sampling=SAMPLED)
    finally:
        b.unload()
    t = got.engine_timings
    assert t["draft_n"] > 0 and 0 <= t["draft_n_accepted"] <= t["draft_n"]
    assert t["draft_ms"] > 0  # the kind's own time, from the server's log
    assert got.text == want.text  # greedy: the target's tokens whatever the draft proposed
    # sampled: each emitted token is drawn from the target's own logits, one draw per token
    # (common/sampling.cpp common_sampler_sample_and_accept_n), so one seed gives one text
    assert got_sampled.text == want_sampled.text and got_sampled.text != got.text


def test_a_draft_with_another_vocabulary_is_refused_in_one_line(target):
    b = get_backend("llama_server")
    spec = {"type": "draft-simple", "model": str(gemma3_270m_q4_k_m())}
    with pytest.raises(EdgepickError) as exc:
        b.load(Candidate(ref=target, settings=RuntimeSettings(speculative=spec)))
    msg = str(exc.value)
    assert "\n" not in msg and str(gemma3_270m_q4_k_m()) in msg and str(smollm2_q4_1()) in msg
    assert b.proc is None  # nothing started


def test_per_task_figures_and_the_servers_own_timings_agree(target):
    items = [EvalItem(id=f"x{i}", task="extraction", prompt=COPY.replace("twice", w),
                      reference="", max_tokens=16) for i, w in enumerate(["twice", "two times"])]
    items += [EvalItem(id="q0", task="qa", prompt="Name three colours.", reference="",
                       max_tokens=8)]
    base = RuntimeSettings(threads=2, n_ctx=512)
    kinds = [base.model_copy(update={"speculative": RuntimeSettings(
        speculative={"type": "draft-simple", "model": str(smollm2_q4_1()),
                     "n_max": 4}).speculative})]
    reqs = run_requests(target, base, kinds, items, {})
    assert {r.setting for r in reqs} == {"none", "draft-simple:SmolLM2-135M-Instruct.Q4_1:4"}
    rows = {(f.task, f.setting): f for f in figures(reqs)}
    ex = rows[("extraction", "draft-simple:SmolLM2-135M-Instruct.Q4_1:4")]
    assert ex.items == 2 and ex.speedup_low <= ex.speedup <= ex.speedup_high
    assert ex.acceptance_low <= ex.acceptance <= ex.acceptance_high
    assert ex.mean_accepted_len >= 1 and 0 < ex.draft_share < 1
    assert ex.verdict in ("wins", "loses", "undetermined")
    assert ex.identical == 2  # greedy text unchanged
    # the client's decode speed (token arrivals) against llama-server's own timings
    assert timing_agreement(reqs) < 0.05
