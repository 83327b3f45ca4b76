"""Broken files and deploys for doctor, each built once per session from the bundled SmolLM2."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from edgepick.doctor.runner import DoctorRequest, run
from edgepick.records.candidate import RuntimeSettings
from edgepick.records.deploy import DeployConfig, DeployModel, Sampling
from edgepick.store import ResultStore
from edgepick.store.identity import file_sha256


@pytest.fixture(scope="session")
def broken(tmp_path_factory, smollm2_f16, smollm2_q4_1) -> dict[str, str]:
    """q2k: a Q2_K of the F16; no_template: the Q4_1 with its chat template removed (gguf's own
    gguf-new-metadata); truncated: the Q4_1 cut in half."""
    from edgepick.llama_tools import tool_path

    d = tmp_path_factory.mktemp("doctor-files")
    q2k = d / "smollm2.Q2_K.gguf"
    subprocess.run([tool_path("llama-quantize"), smollm2_f16, str(q2k), "Q2_K", "2"],
                   check=True, capture_output=True)
    no_template = d / "smollm2.no-template.gguf"
    subprocess.run([str(Path(sys.executable).parent / "gguf-new-metadata"), "--force",
                    "--remove-metadata", "tokenizer.chat_template", smollm2_q4_1,
                    str(no_template)],
                   check=True, capture_output=True)
    truncated = d / "smollm2.truncated.gguf"
    data = Path(smollm2_q4_1).read_bytes()
    truncated.write_bytes(data[: len(data) // 2])
    return {"q2k": str(q2k), "no_template": str(no_template), "truncated": str(truncated)}


@pytest.fixture
def write_deploy(tmp_path):
    def write(model: str, name: str = "deploy.yaml", **fields) -> str:
        runtime = RuntimeSettings(**fields.pop("runtime", {}))
        sampling = fields.pop("sampling", None)
        cfg = DeployConfig(model=DeployModel(name=Path(model).stem, path=model,
                                             sha256=file_sha256(model)),
                           runtime=runtime, sampling=Sampling(**sampling) if sampling else None,
                           **fields)
        return str(cfg.dump(tmp_path / name))
    return write


@pytest.fixture
def doctor(tmp_path):
    """Run doctor through its entry point with a results store of this test."""
    store = ResultStore(tmp_path / "doctor.sqlite")

    def call(target: str, **kw):
        return run(DoctorRequest(target=target, **kw), store)

    yield call
    store.close()


@pytest.fixture
def hog():
    """Two busy processes beside the measurement, one per core of this host."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    yield procs
    for p in procs:
        p.kill()
        p.wait()


@pytest.fixture(scope="session")
def spare_copy(tmp_path_factory, smollm2_q4_1) -> str:
    d = tmp_path_factory.mktemp("doctor-copy")
    return str(shutil.copy(smollm2_q4_1, d / "smollm2.Q4_1.gguf"))
