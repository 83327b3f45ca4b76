"""`edgepick tune` (issue 34 item 8) on the tiny model: combinations llama.cpp refuses are never
run, the axis search measures fewer points than the grid and says why it skipped the rest, the
chosen settings come out as a plan fragment a plan accepts, and when no setting passes the
scenario's gates tune says so in one line instead of choosing one."""

from __future__ import annotations

import pytest
import yaml

from edgepick.errors import EdgepickError
from edgepick.records.candidate import RuntimeSettings

AXES = {"threads": [1], "n_ubatch": [128, 512], "flash_attn": [True, False],
        "kv_type": ["f16", "q8_0"]}


def _request(tmp_path, decode_min: float, **kw):
    # a neighbour's load (another test worker) must not decide these tests: contention has its
    # own test below
    kw.setdefault("allow_contended", True)
    from edgepick.decide.scenarios import load_scenario
    from edgepick.devices import load_device
    from edgepick.inputs import resolve_ref
    from edgepick.tune.search import TuneRequest

    sc = tmp_path / "sc.yaml"
    sc.write_text(f"name: loose\nconstraints: {{decode_tps_min: {decode_min}, "
                  "ttft_p50_ms_max: 600000, peak_memory_max: null}\n", encoding="utf-8")
    return TuneRequest(model=resolve_ref("tiny"), device=load_device("raspberry-pi-5"),
                       scenario=load_scenario(str(sc)), base=RuntimeSettings(n_ctx=512, threads=1),
                       axes=AXES, repeats=1, gen_tokens=8, **kw)


def test_tune_measures_less_than_the_grid_and_says_why(tmp_path):
    from edgepick.tune.search import fragment, run

    res = run(_request(tmp_path, 0.1), None)
    assert res.grid == 8
    refused = [p for p in res.points if p.outcome == "cannot_run"]
    assert len(refused) == 2 and all("flash attention" in p.why for p in refused)
    assert res.measured < res.grid - len(refused)  # an axis search, not the grid
    assert sum(res.skipped().values()) == res.grid - res.measured
    (chosen,) = [p for p in res.points if p.outcome == "chosen"]
    assert chosen.decode_tps is not None
    text = fragment(res)
    assert f"measured {res.measured} of 8 combinations" in text and "cannot run" in text
    assert RuntimeSettings.model_validate(yaml.safe_load(text)["runtime"]) == \
        res.chosen.model_copy(update={"variant": None})
    # a faster setting that moves the logits is only kept within kld_max
    for p in res.points:
        if p.kld_mean is not None and p.outcome == "chosen":
            assert p.kld_mean <= 0.01


def test_no_setting_passing_the_gates_is_one_line_not_a_choice(tmp_path):
    from edgepick.tune.search import run

    with pytest.raises(EdgepickError) as exc:
        run(_request(tmp_path, 1e9), None)
    assert "passes the scenario's speed gates" in str(exc.value) and "\n" not in str(exc.value)


def test_a_cpu_hog_beside_tune_is_flagged_and_nothing_is_chosen(tmp_path):
    """Two busy processes (one per core of this host) beside the measurements: every point is
    contended, as bench would flag it, and tune refuses to choose unless told to."""
    import subprocess
    import sys

    from edgepick.tune.search import ContendedChoice, run

    axes = {"threads": [1, 2]}
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        with pytest.raises(ContendedChoice) as exc:
            run(_request(tmp_path, 0.1, allow_contended=False)
                .model_copy(update={"axes": axes}), None)
        res = exc.value.result
        assert res.contended and "other work" in res.contended[0]
        assert "--allow-contended" in str(exc.value) and "\n" not in str(exc.value)
        allowed = run(_request(tmp_path, 0.1, allow_contended=True)
                      .model_copy(update={"axes": axes}), None)
        assert allowed.contended and allowed.allowed_contended
    finally:
        for h in hogs:
            h.kill()
            h.wait()
