"""Sampled traffic without an engine: PII redaction before anything is written, cloud references
from a loopback cloud that records what reaches it (edge-only tasks never do), the rate cap,
"down" feedback marking a badcase once, and the engine's fate (SIGKILL, cgroup OOM counter)."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from edgepick.evaluate.items import load_eval_set
from edgepick.serve.availability import (EngineFate, ReadyClock, kernel_oom_killed,
                                         read_oom_kill, signal_name)
from edgepick.serve.metrics import ServeMetrics
from edgepick.serve.loop.references import CloudTarget, ReferenceTaker, reference_value
from edgepick.serve.loop.sampling import ReferencePolicy, SamplingPolicy, Sampler
from loopback_cloud import REFERENCE, RecordingCloud

def _chat(text: str) -> dict:
    return {"messages": [{"role": "user", "content": text}], "max_tokens": 8}


def _rows(path) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, path.read_text().splitlines())}


def test_redaction_runs_before_anything_is_written(tmp_path):
    out = tmp_path / "traffic.jsonl"
    policy = SamplingPolicy.model_validate({"redact": [
        {"pattern": r"\b1[3-9]\d{9}\b", "replace": "[phone]"},
        {"pattern": r"[\w.]+@[\w.]+", "replace": "[email]"}]})
    s = Sampler(1.0, out, metrics=ServeMetrics(), policy=policy)
    s.record("chat", _chat("Call 13812345678 or mail wei@example.com"), "Sure, 13812345678.",
             "stop", "generation", "m@1", request_id="r1")
    text = out.read_text()
    assert "13812345678" not in text and "wei@example.com" not in text
    row = _rows(out)["traffic-r1"]
    assert row["messages"][0]["content"] == "Call [phone] or mail [email]"
    assert row["meta"]["output"] == "Sure, [phone]." and row["meta"]["request_id"] == "r1"


def test_bad_redaction_pattern_is_one_clear_line(tmp_path):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="not a valid regular expression"):
        SamplingPolicy.model_validate({"redact": [{"pattern": "(unclosed"}]})


def test_down_feedback_marks_the_sampled_item_a_badcase_once(tmp_path):
    out = tmp_path / "traffic.jsonl"
    m = ServeMetrics()
    s = Sampler(1.0, out, metrics=m)
    s.record("chat", _chat("Hello"), "Hello there.", "stop", "qa", "m@1", request_id="a")
    s.record("chat", _chat("Hi"), "", "stop", "qa", "m@1", request_id="b")  # empty: judged
    assert s.feedback("a", "down", "wrong") and s.feedback("a", "down", None)
    assert s.feedback("b", "down", None)
    assert not s.feedback("never-sampled", "down", None)
    rows = _rows(out)
    assert rows["traffic-a"]["tags"] == ["badcase"]
    assert rows["traffic-a"]["meta"]["feedback"]["rating"] == "down"
    assert "badcase" in rows["traffic-b"]["tags"]
    get = m.registry.get_sample_value
    assert get("edgepick_badcases_total", {"task": "qa", "source": "feedback"}) == 1
    assert get("edgepick_badcases_total", {"task": "qa", "source": "judged"}) == 1
    assert get("edgepick_sampled_task_outputs_total", {"task": "qa", "verdict": "ok"}) == 1


def test_cloud_references_never_for_edge_only_tasks_and_within_the_rate(tmp_path):
    out = tmp_path / "traffic.jsonl"
    m = ServeMetrics()
    s = Sampler(1.0, out, metrics=m, edge_only_tasks=["summary"])
    with RecordingCloud() as cloud:
        taker = ReferenceTaker(s, CloudTarget(cloud.url, "cloud-model"),
                               ReferencePolicy(max_per_minute=3), m)
        s.references = taker

        async def go() -> None:
            runner = asyncio.create_task(taker.run())
            for i, task in enumerate(["qa", "summary", "generation", "summary", "qa", "qa"]):
                s.record("chat", _chat(f"question {i} about {task}"), "an answer", "stop", task,
                         "m@1", request_id=f"r{i}")
            deadline = time.monotonic() + 30
            while not taker.queue.empty() or len(cloud.bodies) < 3:
                assert time.monotonic() < deadline, "references not taken in time"
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.2)  # the last answer written
            runner.cancel()

        asyncio.run(go())
    sent = [b["messages"][-1]["content"] for b in cloud.bodies]
    assert len(sent) == 3 and not any("summary" in t for t in sent)  # rate cap: 3 a minute
    assert all(b["model"] == "cloud-model" and b["stream"] is False for b in cloud.bodies)
    rows = _rows(out)
    assert rows["traffic-r0"]["reference"] == REFERENCE
    assert rows["traffic-r0"]["meta"]["reference_source"] == "cloud"
    assert rows["traffic-r1"]["reference"] is None  # edge-only: kept on the device
    assert "rate_cap" in rows["traffic-r5"]["meta"]["reference_error"]
    get = m.registry.get_sample_value
    assert get("edgepick_sample_references_total", {"outcome": "answered"}) == 3
    assert get("edgepick_sample_references_total", {"outcome": "edge_only"}) == 2
    assert get("edgepick_sample_references_total", {"outcome": "rate_cap"}) == 1
    items, _ = load_eval_set(out)  # the referenced items are complete eval items; the others
    # load as reference-free ones (issue 29)
    assert {it.id for it in items if not it.reference_free} == {"traffic-r0", "traffic-r2",
                                                                  "traffic-r4"}
    assert {it.id for it in items if it.reference_free} == {"traffic-r1", "traffic-r3",
                                                              "traffic-r5"}


def test_items_waiting_for_a_reference_are_written_when_serve_stops(tmp_path):
    out = tmp_path / "traffic.jsonl"
    s = Sampler(1.0, out, metrics=ServeMetrics())
    s.references = ReferenceTaker(s, CloudTarget("http://127.0.0.1:9/v1"), ReferencePolicy())

    async def go() -> None:
        s.record("chat", _chat("q"), "a", "stop", "qa", "m@1", request_id="held")
        assert not out.exists()  # held until its reference is settled
        assert s.feedback("held", "down", None)  # applied to the held row
        runner = asyncio.create_task(s.references.run())
        await asyncio.sleep(0)
        runner.cancel()

    asyncio.run(go())
    row = _rows(out)["traffic-held"]
    assert row["reference"] is None and "badcase" in row["tags"]
    assert row["meta"]["reference_pending"] is False and row["meta"]["reference_error"]


def test_reference_forms():
    assert reference_value("extraction", '```json\n{"a": 1}\n```') == ({"a": 1}, None)
    assert reference_value("extraction", "no json")[0] is None
    assert reference_value("classification", "positive")[0] is None
    assert reference_value("qa", " Paris ") == ("Paris", None)


def test_engine_fate_by_signal_and_cgroup_counter(tmp_path):
    assert signal_name(-9) == "SIGKILL" and signal_name(1) == "exit"
    events = tmp_path / "memory.events"
    events.write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    assert read_oom_kill(events) == 1
    fate = EngineFate()
    fate._counter = (events, 1)
    events.write_text("low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\n")
    assert fate.exited(-9) == "oom" and fate.oom_confirmed == 1
    fate._counter = (events, 2)
    assert fate.exited(-9) == "killed" and fate.oom_confirmed == 1  # no new oom_kill
    fate._counter = None
    assert fate.exited(-9) == "oom" and fate.oom_suspected == 1  # nothing to confirm it with
    assert fate.exited(1) == "crash" and fate.exits == {"SIGKILL": 3, "exit": 1}
    # the kernel log, where readable, names the process it OOM-killed
    kmsg = tmp_path / "kmsg"
    kmsg.write_text("6,1,2,-;Out of memory: Killed process 4242 (llama-server) total-vm:1kB\n")
    assert kernel_oom_killed(4242, str(kmsg)) is True
    assert kernel_oom_killed(424, str(kmsg)) is False
    assert kernel_oom_killed(1, str(tmp_path / "absent")) is None
    fate = EngineFate(kmsg=str(kmsg))
    fate._pid = 4242
    assert fate.exited(-9) == "oom" and fate.oom_kernel == 1


def test_ready_clock():
    t = [0.0]
    c = ReadyClock(lambda: t[0])
    t[0] = 2
    c.mark(True)
    t[0] = 10
    c.mark(False)
    t[0] = 12
    assert c.uptime_s() == 12 and c.ready_s() == 8
