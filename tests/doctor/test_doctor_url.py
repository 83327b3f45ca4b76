"""doctor against the URL of a running `edgepick serve`: the engine's memory read from /metrics
over a run of requests (issue 36). The leak is a child of the engine that allocates 256 MiB
once the test opens its gate, while doctor's requests run (tests/serve_harness.hog_engine)."""

from __future__ import annotations

import threading

import httpx

from serve_harness import hog_engine, serve


def _open_gate_after_requests(url: str, gate, stop: threading.Event, after: int) -> None:
    while not stop.wait(0.05):
        try:
            text = httpx.get(url + "/metrics", timeout=5).text
        except httpx.HTTPError:
            continue
        done = sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("edgepick_requests_total{"))
        if done >= after:
            gate.write_text("")
            return


def test_memory_growth_of_a_running_server(doctor, tiny_model, tmp_path):
    env, gate = hog_engine(tmp_path, 256)
    with serve(["-m", tiny_model], tmp_path, env=env) as s:
        healthy = doctor(s.url, symptom="memory-growth")  # the gate still shut: no leak
        assert not healthy.findings, [c.model_dump() for c in healthy.checks]
        stop = threading.Event()
        opener = threading.Thread(target=_open_gate_after_requests,
                                  args=(s.url, gate, stop, 24 + 4 + 3))
        opener.start()
        try:
            rep = doctor(s.url, symptom="memory-growth")
        finally:
            stop.set()
            opener.join()
    assert rep.kind == "url"
    f = rep.findings[0]
    assert f.cause == "memory_growth", [c.model_dump() for c in rep.checks]
    assert f.evidence[0].value > 2.0
    assert {c.check: c.note for c in healthy.checks if c.status == "skipped"} == {
        "memory_budget": "needs a local GGUF (the target is a URL)"}
