"""The canary on real builds served by llama-server: SmolLM2-135M at Q8_0 serves, a package
moves it to a Q2_K build made with llama-quantize, and `models update --server` lets it through
the KLD probe (the deploy's limits are loose on purpose, as a careless deploy's would be). Nobody
scores the traffic and no client sends a request: the canary's quality probe alone asks both
versions the deploy's eval items and rolls the Q2_K build back, and the registry's history
says why with the answers that went down. The same items answered by Q8_0 itself fail several
(a 135M model); the pairs, not the rates, show Q2_K worse."""

from __future__ import annotations

import time

import httpx
import yaml

from serve_harness import serve
from update_pairs import _quant

from edgepick.registry.store import Registry
from edgepick.update.diff import diff

NAME = "smollm2"


def test_a_q2_k_build_served_by_llama_server_is_rolled_back_by_the_probe(cli, smollm2_f16,
                                                                         tmp_path):
    from parts import need_tool

    from edgepick.assets.bundled import cache_dir

    need_tool("llama-quantize")
    folder = cache_dir() / "update-probe-smollm2"  # shared with tests/update/test_models_update
    folder.mkdir(parents=True, exist_ok=True)
    q8 = _quant(smollm2_f16, folder / "q8_0.gguf", "Q8_0")
    q2 = _quant(smollm2_f16, folder / "q2_k.gguf", "Q2_K")
    package = diff(q8, q2, tmp_path / "q8-to-q2k.epd").path
    root = tmp_path / "registry"
    reg = Registry(root, create=True)
    reg.add(q8, NAME, "q8")
    reg.commit(NAME, "q8")
    deploy = tmp_path / "deploy.yaml"
    deploy.write_text(yaml.safe_dump({"update": {
        "max_kld": 2, "min_same_top1": 0, "ctx": 64, "chunks": 2, "n_items": 0,
        "canary": {"window_s": 300, "check_every_s": 1, "probe_items": 32}}}))

    with serve(["--registry", str(root), "-m", NAME, "--slots", "1", "--ctx", "1024"],
               tmp_path) as s:
        out = cli("models", "update", NAME, str(package), "--registry", str(root), "--server",
                  s.url, "--deploy", str(deploy), "--version", "q2k")
        assert out.returncode == 0, out.stderr
        assert "q8 → q2k" in out.stdout and "32 eval items" in " ".join(out.stdout.split())
        end = time.monotonic() + 240
        while not any(e.action.startswith("canary-") and e.action != "canary-open"
                      for e in Registry(root).model(NAME).events):
            assert time.monotonic() < end, "the canary decided nothing"
            time.sleep(1)
        entry = Registry(root).model(NAME)
        assert entry.active == "q8", [e.model_dump() for e in entry.events]
        rolled = next(e for e in entry.events if e.action == "canary-rollback")
        assert rolled.detail.startswith("probe: "), rolled.detail
        # the evidence: items scored lower than on Q8_0, quoted, with the test's p-value
        assert "items scored lower" in rolled.detail and "sign test p = " in rolled.detail
        assert "memory" not in rolled.detail  # repacked Q4_0 inside Q2_K is no memory regression
        assert s.metric("edgepick_requests_total") == 0  # no client asked anything
        assert s.metric("edgepick_canary_rollbacks_total", figure="probe", version="q2k") == 1
        assert httpx.get(s.url + "/health", timeout=10).json()["version"] == "q8"
        shown = cli("models", "history", NAME, "--registry", str(root))
        assert "canary-rollback" in shown.stdout and "scored lower" in shown.stdout
