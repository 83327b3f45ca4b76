"""What a job runs on a node: the stages' own entry points (bench, eval, fidelity) against the
job's scratch store. Requests carry the files they read (the eval set, the fidelity text), so a
node needs edgepick and the model files, never the driver's disk.
"""

from __future__ import annotations

import hashlib
import socket
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from edgepick.bench import runner as bench_runner
from edgepick.bench.sweeps import NETWORK_KIND, BenchRequest
from edgepick.errors import EdgepickError
from edgepick.evaluate import fidelity_stage, stage as eval_stage
from edgepick.evaluate.eval_result import EVAL_KIND
from edgepick.evaluate.eval_sets import specs_of
from edgepick.evaluate.outputs import collect_outputs
from edgepick.records.candidate import Candidate
from edgepick.records.model_ref import parse_endpoint


@dataclass
class Shipped:
    """A file a job reads, carried with it: used in place when the node holds the same bytes at
    the same path (a shared folder), else written to the job's temporary folder."""

    path: str
    data: bytes

    @classmethod
    def of(cls, path: str) -> "Shipped":
        return cls(path, Path(path).read_bytes())

    def here(self, tmp: str) -> str:
        try:
            if hashlib.sha256(Path(self.path).read_bytes()).digest() == \
                    hashlib.sha256(self.data).digest():
                return self.path
        except OSError:
            pass
        local = Path(tmp) / Path(self.path).name
        local.write_bytes(self.data)
        return str(local)


@dataclass
class BenchJobRequest:
    bench: BenchRequest
    network_key: str | None = None  # an endpoint: also time the round trip, stored under this key


@dataclass
class OutputsJobRequest:
    candidate: Candidate
    items: list  # EvalItem
    budgets: dict[str, int]
    sampling: dict | None = None
    samples: int = 1
    parallel: int = 1  # items decoded together, as the local eval stage decodes the reference's


@dataclass
class EvalJobRequest:
    eval: object  # evaluate.stage.EvalRequest
    sets: list[Shipped]  # each eval set the request names, in its order
    label: str  # the sets as the driver names them (the record's `data`)


@dataclass
class FidelityJobRequest:
    fidelity: object  # evaluate.fidelity_stage.FidelityRequest
    text: Shipped


def measure_rtt(url: str, samples: int = 7) -> dict:
    """Network round trip to an OpenAI-compatible server: GET /v1/models timed `samples` times
    after one warm-up, no inference involved, so it can be set beside TTFT (which includes it)."""
    base, _ = parse_endpoint(url)
    times = []
    with httpx.Client(timeout=httpx.Timeout(30.0, connect=10.0)) as client:
        try:
            client.get(f"{base}/models")
            for _ in range(samples):
                t0 = time.perf_counter()
                client.get(f"{base}/models").raise_for_status()
                times.append((time.perf_counter() - t0) * 1e3)
        except httpx.HTTPError as exc:
            raise EdgepickError(f"{base}: round-trip probe failed ({exc})") from None
    return {"endpoint": base, "what": "GET /v1/models", "unit": "ms", "n": len(times),
            "median": statistics.median(times), "min": min(times), "max": max(times)}


def bench(req: BenchJobRequest, store) -> None:
    if req.network_key:
        rtt = measure_rtt(req.bench.models[0].locator)
        rtt.update(status="ok", node=socket.gethostname(), measured=time.time())
        store.put(NETWORK_KIND, req.network_key, rtt)
    bench_runner.run(req.bench, store)


def outputs(req: OutputsJobRequest, store) -> None:
    """One model's eval outputs (the reference's, once for every device)."""
    collect_outputs(req.candidate, req.items, store, req.budgets, sampling=req.sampling,
                    samples=req.samples, parallel=req.parallel)


def evaluate(req: EvalJobRequest, store) -> None:
    ev = req.eval
    with tempfile.TemporaryDirectory(prefix="edgepick-eval-") as tmp:
        specs = [s.model_copy(update={"set": f.here(tmp)})
                 for s, f in zip(specs_of(ev.data, ev.limit), req.sets)]
        res = eval_stage.run(ev.model_copy(update={"data": specs}), store)
    if res is None:
        return
    # The record names the driver's files, whichever copies were read (the same bytes).
    store.put(EVAL_KIND, res.key, dict(res.model_dump(mode="json"), data=req.label))


def fidelity(req: FidelityJobRequest, store) -> None:

    with tempfile.TemporaryDirectory(prefix="edgepick-fidelity-") as tmp:
        fidelity_stage.run(req.fidelity.model_copy(update={"text": req.text.here(tmp)}), store)

