"""When nothing passes, `edgepick run` ends with what to do: serve the nearest candidate's file
(marked not recommended, with what it fails) or change what failed (docs/serve.md)."""

from __future__ import annotations

from types import SimpleNamespace as NS

from edgepick.cli.decision_print import nearest, print_none_next_steps
from edgepick.cli.output import console


def _ranked(name, fails):
    return NS(candidate=name, eliminated=True, reasons=[f"{f} fails" for f in fails],
              violations=[NS(text=f"{f} 40% > limit 5%") for f in fails])


def test_the_nearest_candidate_is_the_one_with_fewest_failed_gates(tmp_path):
    decision = NS(recommendation=None,
                  ranking=[_ranked("q4_0", ["unacceptable", "ttft"]),
                           _ranked("q8_0", ["unacceptable"])])
    summaries = [NS(candidate="q4_0", model=str(tmp_path / "m.Q4_0.gguf")),
                 NS(candidate="q8_0", model=str(tmp_path / "m.Q8_0.gguf"))]
    assert nearest(decision, summaries) == ("q8_0", str(tmp_path / "m.Q8_0.gguf"),
                                            ["unacceptable 40% > limit 5%"])
    with console.capture() as cap:
        print_none_next_steps(decision, summaries)
    text = " ".join(cap.get().split())
    assert f"edgepick serve -m {tmp_path / 'm.Q8_0.gguf'}" in text
    assert "not recommended" in text and "no deploy.yaml was written" in text


def test_an_endpoint_is_not_offered_to_serve_from_a_file():
    decision = NS(recommendation=None, ranking=[_ranked("cloud", ["x"])])
    assert nearest(decision, [NS(candidate="cloud", model="http://h/v1#m")]) is None
    with console.capture() as cap:
        print_none_next_steps(decision, [NS(candidate="cloud", model="http://h/v1#m")])
    assert "serve -m" not in cap.get() and "run again" in cap.get()
