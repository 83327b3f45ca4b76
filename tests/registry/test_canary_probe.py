"""The canary's quality probe on a server whose traffic nobody scores: the activation carries
eval items, the previous version answers them before the switch and the new one after; a
version that garbles its answers (as a Q2_K build of SmolLM2 did: "*Ava*, *Ava*\\n*Ava") is
rolled back by the server with no client request at all, and one that answers as well is not."""

from __future__ import annotations

import dataclasses
import time

import httpx
import numpy as np
import pytest

from fake_edge import FakePool, FakeSpec, chat_body, running
from gguf_synth import write_gguf

from edgepick.evaluate.eval_sets import DataSpec, load_sets
from edgepick.registry.store import Registry

GARBLED = "*Ava*, *Ava*\n*Ava"
ITEMS = [it for it in load_sets([DataSpec(set="demo", limit=40)]).items if not it.tools][:16]
ANSWERS = {str(it.chat_messages()[-1]["content"]): it.reference for it in ITEMS}


@dataclasses.dataclass
class Spec(FakeSpec):
    path: str = ""


class AnsweringPool(FakePool):
    """Version "bad" garbles; every other version answers each item with its reference."""

    async def switch_to(self, spec, cause: str) -> None:
        self.spec = spec
        self.metrics.swaps.labels(cause, spec.version).inc()

    async def forward(self, kind, body, stream, deadline):
        served = await super().forward(kind, body, stream, deadline)
        ref = ANSWERS.get(str(body["messages"][-1]["content"]), "")
        good = ref if isinstance(ref, str) else __import__("json").dumps(ref)
        served.body = chat_body(GARBLED if self.spec.version == "bad" else good)
        return served


@pytest.fixture()
def server(tmp_path):
    from edgepick.serve.http.app import ServeState, create_app
    from edgepick.serve.pool.control import RegistryControl
    from edgepick.serve.settings import ServeSettings

    reg = Registry(tmp_path / "reg", create=True)
    for v in ("good", "bad", "good2"):
        f = write_gguf(tmp_path / f"{v}.gguf", {"general.name": v},
                       [("w", "F32", np.full((2, 32), float(len(v))))])
        reg.add(f, "fake-model", v)
    reg.commit("fake-model", "good")
    pool = AnsweringPool(Spec(path=str(reg.path_of("fake-model", "good"))))
    admin = RegistryControl(reg, pool)
    state = ServeState(pool, ServeSettings(sample_rate=0.0), admin=admin)  # nothing scored
    with running(create_app(state)) as port:
        yield f"http://127.0.0.1:{port}", reg, pool, admin


def _activate(base: str, version: str, window_s: float) -> None:
    items = [it.model_dump(mode="json", by_alias=True, exclude_none=True) for it in ITEMS]
    r = httpx.post(f"{base}/admin/models/activate", timeout=60, json={
        "name": "fake-model", "version": version, "probe_items": items,
        "canary": {"window_s": window_s, "check_every_s": 0.05}})
    assert r.status_code == 200, r.text


def _outcome(admin, timeout: float = 20) -> str:
    end = time.monotonic() + timeout
    while getattr(admin, "canary", None) is None or admin.canary.outcome is None:
        assert time.monotonic() < end, "the canary did not decide"
        time.sleep(0.05)
    return admin.canary.outcome


def test_a_garbling_version_is_rolled_back_by_the_probe_without_traffic(server):
    base, reg, pool, admin = server
    _activate(base, "bad", window_s=30)
    outcome = _outcome(admin)
    assert outcome.startswith("rolled back: probe:"), outcome
    assert "*Ava*" in outcome  # the answers that made it worse are quoted
    entry = reg.model("fake-model")
    assert entry.active == "good" and pool.spec.version == "good"
    assert any(e.action == "canary-rollback" and "probe" in e.detail for e in entry.events)
    metrics = httpx.get(f"{base}/metrics").text
    assert 'edgepick_canary_rollbacks_total{figure="probe",version="bad"} 1.0' in metrics
    assert 'edgepick_requests_total' not in metrics or 'status="200"} 1' not in metrics


def test_a_version_that_answers_as_well_is_not_rolled_back_but_not_passed_either(server):
    base, reg, pool, admin = server
    _activate(base, "good2", window_s=0.5)
    outcome = _outcome(admin)
    # the probe settles, but with no traffic the error rate and TTFT say nothing
    assert outcome.startswith("undetermined:") and "probe" not in outcome, outcome
    assert reg.model("fake-model").active == "good2"
    assert admin.canary.judgements[[j.figure for j in admin.canary.judgements].index("probe")
                                   ].state == "not_worse"


def test_a_malformed_probe_item_is_refused_in_one_line(server):
    base, reg, pool, admin = server
    r = httpx.post(f"{base}/admin/models/activate", timeout=30, json={
        "name": "fake-model", "version": "good2", "probe_items": [{"id": "x"}],
        "canary": {"window_s": 5}})
    assert r.status_code == 400 and "probe_items[0]" in r.text, r.text
    assert reg.model("fake-model").active == "good"
