"""The canary after a live update: a version that passed the probe but then serves worse (its
sampling loops, so sampled outputs turn unacceptable) is rolled back by the server itself, with
the reason in the registry's events and in /metrics; one that serves as well passes the window;
the previous version is kept while the window is open. The engine is a stand-in pool whose
answer depends on the version it serves (tests/fake_edge.py)."""

from __future__ import annotations

import dataclasses
import time

import httpx
import numpy as np
import pytest

from fake_edge import FakePool, FakeSpec, chat_body, running
from gguf_synth import write_gguf

from edgepick.errors import EdgepickError
from edgepick.registry.store import Registry

GOOD = "Paris is the capital of France, on the Seine."
LOOPING = "the answer is " * 30  # what a sampler stuck in a loop sends


@dataclasses.dataclass
class Spec(FakeSpec):
    path: str = ""


class VersionedPool(FakePool):
    """Answers GOOD on every version but `bad`, which loops."""

    bad = "2"

    async def switch_to(self, spec, cause: str) -> None:
        self.spec = spec
        self.metrics.swaps.labels(cause, spec.version).inc()
        self.metrics.active_model.labels(spec.name, spec.version).set(1)

    async def forward(self, kind, body, stream, deadline):
        served = await super().forward(kind, body, stream, deadline)
        text = LOOPING if self.spec.version == self.bad else GOOD
        served.body = chat_body(text)
        return served


@pytest.fixture()
def server(tmp_path):
    from edgepick.serve.http.app import ServeState, create_app
    from edgepick.serve.pool.control import RegistryControl
    from edgepick.serve.settings import ServeSettings

    reg = Registry(tmp_path / "reg", create=True)
    for v in ("1", "2", "3"):
        f = write_gguf(tmp_path / f"m{v}.gguf", {"general.name": f"v{v}"},
                       [("w", "F32", np.full((2, 32), float(v)))])
        reg.add(f, "fake-model", v)
    reg.commit("fake-model", "1")
    pool = VersionedPool(Spec(path=str(reg.path_of("fake-model", "1"))))
    admin = RegistryControl(reg, pool)
    state = ServeState(pool, ServeSettings(sample_rate=1.0), admin=admin)
    with running(create_app(state)) as port:
        yield f"http://127.0.0.1:{port}", reg, pool, admin


def _chat(base: str, n: int) -> None:
    for _ in range(n):
        r = httpx.post(f"{base}/v1/chat/completions", timeout=10,
                       json={"messages": [{"role": "user", "content": "Capital of France?"}]})
        assert r.status_code == 200, r.text


CANARY = {"window_s": 30, "check_every_s": 0.05, "min_requests": 8, "min_sampled": 8}


def _wait(cond, what: str, timeout: float = 15) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, what
        time.sleep(0.05)


def test_a_looping_update_is_rolled_back_by_the_canary(server):
    base, reg, pool, admin = server
    _chat(base, 12)  # version 1's record: every sampled answer fine
    r = httpx.post(f"{base}/admin/models/activate", timeout=30,
                   json={"name": "fake-model", "version": "2", "canary": CANARY})
    assert r.status_code == 200, r.text
    assert reg.model("fake-model").active == "2"
    assert reg.model("fake-model").canary.previous == "1"
    with pytest.raises(EdgepickError, match="kept until the canary"):
        reg.remove("fake-model", "1")
    _chat(base, 12)  # version 2 loops
    _wait(lambda: reg.model("fake-model").active == "1", "the canary did not roll back")
    entry = reg.model("fake-model")
    assert pool.spec.version == "1" and entry.canary is None
    rolled = [e for e in entry.events if e.action == "canary-rollback"]
    assert rolled and "unacceptable_rate" in rolled[-1].detail
    back = [e for e in entry.events if e.action == "rollback"][-1]
    assert back.version == "1" and "canary: unacceptable_rate" in back.detail
    metrics = httpx.get(f"{base}/metrics").text
    assert 'edgepick_canary_rollbacks_total{figure="unacceptable_rate",version="2"} 1.0' in metrics
    assert 'edgepick_model_swaps_total{cause="canary-rollback",to_version="1"} 1.0' in metrics
    assert admin.canary.outcome.startswith("rolled back: unacceptable_rate")
    from cli_runner import run_cli

    shown = run_cli("models", "history", "fake-model", "--registry", str(reg.root))
    assert shown.returncode == 0 and "canary-rollback" in shown.stdout, shown.stderr


def test_a_window_with_too_few_requests_is_undetermined_not_passed(server):
    base, reg, pool, admin = server
    _chat(base, 10)
    short = dict(CANARY, window_s=1.0)
    r = httpx.post(f"{base}/admin/models/activate", timeout=30,
                   json={"name": "fake-model", "version": "3", "canary": short})
    assert r.status_code == 200, r.text
    _chat(base, 4)  # fewer than min_requests: nothing can be said of the new version
    _wait(lambda: admin.canary.outcome is not None, "the window did not close")
    entry = reg.model("fake-model")
    outcome = admin.canary.outcome
    assert outcome.startswith("undetermined:") and entry.active == "3" and entry.canary is None
    assert "error_rate: undetermined" in outcome and "more would settle it" in outcome
    assert "ttft_p99: undetermined" in outcome
    assert [e.action for e in entry.events][-2:] == ["canary-open", "canary-undetermined"]
    reg.remove("fake-model", "1")  # the window closed: the old version may go now


def test_figures_compare_with_their_intervals():
    from edgepick.records.update import CanaryPolicy
    from edgepick.registry.canary import Figures, worse

    p = CanaryPolicy(min_requests=10, min_sampled=10)
    old = Figures(requests=100, errors=1, sampled=40, unacceptable=2, ttft_p99_s=0.2,
                  memory=100e6)
    same = Figures(requests=50, errors=1, sampled=20, unacceptable=2, ttft_p99_s=0.22,
                   memory=100e6)
    assert worse(same, old, p, peak_memory=110e6) == []
    few = Figures(requests=5, errors=5, sampled=5, unacceptable=5, ttft_p99_s=9, memory=0)
    assert worse(few, old, p, peak_memory=0) == []  # too little evidence to say anything
    bad = Figures(requests=50, errors=20, sampled=20, unacceptable=2, ttft_p99_s=0.5,
                  memory=300e6)
    got = " | ".join(worse(bad, old, p, peak_memory=300e6))
    assert "error_rate" in got and "ttft_p99" in got and "memory" in got
    assert "unacceptable" not in got


def test_a_figure_passes_only_when_its_interval_excludes_worse():
    from edgepick.records.update import CanaryPolicy
    from edgepick.registry.canary import Figures, judge
    from edgepick.registry.canary_verdict import P99_LEAST, _p99_upper_rank

    p = CanaryPolicy(min_requests=20, min_sampled=10)
    old = Figures(requests=400, errors=0, sampled=0, unacceptable=0, ttft_p99_s=0.2,
                  memory=100e6)
    # 8 requests: the error rate cannot exclude worse, nor can a P99 be bounded
    few = Figures(requests=8, errors=0, sampled=0, unacceptable=0, ttft_p99_s=0.1, memory=100e6)
    got = {j.figure: j for j in judge(few, old, p, 100e6, [(0.1, 8.0), (float("inf"), 8.0)])}
    assert got["error_rate"].state == "undetermined" and got["error_rate"].more > 300
    assert got["ttft_p99"].state == "undetermined"
    assert got["ttft_p99"].more == P99_LEAST - 8
    assert got["quality"].state == "undetermined"  # nothing scored and no probe
    assert got["memory"].state == "not_worse"
    # as many requests as the previous version, all fast and clean: every figure settles
    many = Figures(requests=400, errors=0, sampled=30, unacceptable=0, ttft_p99_s=0.1,
                   memory=100e6)
    old_sampled = dataclasses.replace(old, sampled=30)
    buckets = [(0.1, 400.0), (0.25, 400.0), (float("inf"), 400.0)]
    states = {j.figure: j.state for j in judge(many, old_sampled, p, 100e6, buckets)}
    assert set(states.values()) == {"not_worse"}, states
    assert _p99_upper_rank(P99_LEAST - 1) is None and _p99_upper_rank(P99_LEAST) == P99_LEAST == 368
    assert 990 < _p99_upper_rank(1000) < 1000


def test_the_probe_alone_catches_a_garbling_version():
    from edgepick.records.update import CanaryPolicy
    from edgepick.registry.canary import Figures, judge
    from edgepick.registry.canary_probe import ProbeResult

    none = Figures(requests=0, errors=0, sampled=0, unacceptable=0, ttft_p99_s=None, memory=0)
    was, now = ProbeResult("q4", bad=1, answered=16), ProbeResult("q2k", bad=13, answered=16)
    got = {j.figure: j for j in judge(none, none, CanaryPolicy(), 0, [], (was, now))}
    assert got["probe"].state == "worse" and "quality" not in got
    same = ProbeResult("q4b", bad=1, answered=16)
    got = {j.figure: j for j in judge(none, none, CanaryPolicy(), 0, [], (was, same))}
    assert got["probe"].state == "not_worse"


def test_the_probe_pairs_its_answers_where_the_rates_overlap():
    """SmolLM2-135M's Q8_0 fails 7 of 16 demo items and its Q2_K 10: the rates' intervals
    overlap, but the same items scored lower on 9 and higher on 1 (a sign test's p = 0.011);
    a version whose scores moved both ways is not worse, and one that lost a few items with
    none gained is not passed either."""
    from edgepick.records.update import CanaryPolicy
    from edgepick.registry.canary import Figures, judge
    from edgepick.registry.canary_probe import ProbeResult
    from edgepick.registry.canary_verdict import paired, sign_test

    none = Figures(requests=0, errors=0, sampled=0, unacceptable=0, ttft_p99_s=None, memory=0)
    ids = [f"i{n}" for n in range(16)]
    old = [1.0] * 10 + [0.0] * 6
    low = [0.0] * 9 + [1.0] * 1 + [1.0] + [0.0] * 5  # 9 down, 1 up (i10)
    was = ProbeResult("q8", bad=7, answered=16, scores=[(i, s, "'x'") for i, s in zip(ids, old)])
    now = ProbeResult("q2k", bad=10, answered=16,
                      scores=[(i, s, f"'{i} garbled'") for i, s in zip(ids, low)])
    assert abs(sign_test(9, 1) - 11 / 1024) < 1e-12
    got = {j.figure: j for j in judge(none, none, CanaryPolicy(), 0, [], (was, now))}
    assert got["probe"].state == "worse", got["probe"]
    assert "9 of 16 items scored lower, 1 higher" in got["probe"].detail
    assert "i0: 'i0 garbled'" in got["probe"].detail  # the answers that went down, quoted
    mixed = [1.0] * 7 + [0.0] * 3 + [1.0] * 3 + [0.0] * 3  # 3 down, 3 up
    state, seen = paired(was.scores, [(i, s, "") for i, s in zip(ids, mixed)])
    assert state == "not_worse" and "3 of 16 items scored lower, 3 higher" in seen
    few = [0.0] * 3 + [1.0] * 7 + [0.0] * 6  # 3 down, none up: p = 0.125, not settled
    now_few = ProbeResult("q4", bad=7, answered=16, scores=[(i, s, "") for i, s in zip(ids, few)])
    got = {j.figure: j for j in judge(none, none, CanaryPolicy(), 0, [], (was, now_few))}
    assert got["probe"].state == "undetermined", got["probe"]
