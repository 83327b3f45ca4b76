"""`route eval` judges edge and cloud answers right or wrong: items without a reference
(sampled traffic, issue 29) are skipped in one line, as before they loaded at all."""

from __future__ import annotations

import json


def test_items_without_a_reference_are_skipped(cli, tmp_path):
    path = tmp_path / "traffic.jsonl"
    path.write_text("".join(json.dumps({"id": f"t{i}", "task": "qa", "prompt": f"q{i}",
                                        "reference": None}) + "\n" for i in range(3)))
    got = cli("route", "eval", "--edge", "tiny", "--cloud", "tiny", "--data", str(path))
    assert got.returncode != 0
    assert "skipped: 3 item(s) without a reference" in got.stderr
    assert "no valid items to evaluate" in got.stderr and "Traceback" not in got.stderr
