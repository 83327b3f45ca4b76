"""`edgepick doctor DEPLOY` with the quick health checks, timed (issue 36: under 3 minutes on a
2-core host). The deploy is the bundled SmolLM2-135M Q4_1 as decide writes it, with the F16 it
came from as --reference, so every quick check that can run here runs (the quantization check
included); a fresh results store and doctor folder, then the same again with the store kept, to
show what reuse saves. The host's other work during the run is printed beside the time: on a
busy host the run is slower, and host_load is reported as a finding, as it should be.

Target: the first (cold-store) run under 180 s. `python -m benchmarks doctor_quick`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

TARGET_S = 180.0


def main() -> int:
    home = Path(tempfile.mkdtemp(prefix="edgepick-doctor-bench-"))
    os.environ["EDGEPICK_HOME"] = str(home)
    from edgepick.assets import bundled
    from edgepick.bench.hostload import OwnTree, describe, load_between, snapshot
    from edgepick.doctor.runner import DoctorRequest, run
    from edgepick.records.deploy import DeployConfig, DeployModel
    from edgepick.records.model_ref import ModelRef
    from edgepick.store import ResultStore
    from edgepick.store.identity import file_sha256

    model, ref = str(bundled.smollm2_q4_1()), str(bundled.smollm2_f16())
    deploy = DeployConfig(model=DeployModel(name="smollm2-Q4_1", path=model,
                                            sha256=file_sha256(model)),
                          context_tokens={"p50": 120, "p95": 400, "p99": 700},
                          output_tokens={"p50": 64, "p95": 160})
    path = deploy.dump(home / "deploy.yaml")
    req = DoctorRequest(target=str(path), reference=ModelRef.file(ref))
    times = []
    try:
        with ResultStore(home / "results.sqlite") as store:
            for label in ("cold store", "store kept"):
                own = OwnTree()
                a, t0 = snapshot(own), time.perf_counter()
                rep = run(req, store)
                wall = time.perf_counter() - t0
                times.append(wall)
                load = load_between(a, snapshot(own)) if a else None
                print(f"{label:11} {wall:6.1f} s  findings: "
                      f"{[f.cause for f in rep.findings] or 'none'}  host: {describe(load)}")
                for c in rep.checks:
                    print(f"    {c.check:18} {c.status:8} {c.seconds:6.1f} s"
                          + ("  (store)" if c.reused else ""))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    print(f"quick checks on a deploy: {times[0]:.0f} s cold (target < {TARGET_S:.0f} s), "
          f"{times[1]:.0f} s with the store kept ({times[1] / times[0]:.2f} of cold)")
    return 0 if times[0] < TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
