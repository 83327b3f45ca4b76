"""deploy.yaml's constraint per task, applied by serve (issue 34 item 5's done-when): a deploy of
the real SmolLM2 with a q8_0 KV cache, flash attention, a LoRA adapter and a JSON schema for the
`extraction` task. Every request of that task (raw HTTP, streamed, and through the official
`openai` client) answers JSON valid against the schema; a request of another task, and one whose
client sent its own `response_format`, are not held to it."""

from __future__ import annotations

import json

import httpx
import jsonschema
import psutil

from edgepick.records.candidate import AdapterSetting, RuntimeSettings
from edgepick.records.deploy import DeployConfig, DeployModel, TaskConstraint
from edgepick.registry.store import sha256_of
from serve_harness import serve

SCHEMA = {"type": "object", "additionalProperties": False, "required": ["name", "age"],
          "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 24},
                         "age": {"type": "integer", "minimum": 0, "maximum": 150}}}
PROMPTS = ["Alice is 30 years old and lives in Paris.",
           "My grandfather Bob turned 81 last week.",
           "Write a short poem about the sea.",  # nothing to extract: still schema-valid JSON
           "Carol, 45, is a nurse."]
NAME = "smollm2@kv=q8_0,fa=on,lora=tuned,constrain=grammar"


def _deploy(model: str, tmp_path) -> DeployConfig:
    from lora_synth import write_lora

    lora = write_lora(model, tmp_path / "tuned.gguf", rank=8, blocks=4, scale_b=0.05)
    runtime = RuntimeSettings(threads=1, n_ctx=1024, kv_type="q8_0", flash_attn=True,
                              constrain="grammar",
                              adapter=AdapterSetting(path=str(lora), sha256=sha256_of(lora)),
                              variant="kv=q8_0,fa=on,lora=tuned,constrain=grammar")
    return DeployConfig(model=DeployModel(name=NAME, path=model, sha256=sha256_of(model)),
                        runtime=runtime,
                        constraints={"extraction": TaskConstraint(json_schema=SCHEMA)})


def _chat(s, task: str | None, content: str, **extra) -> httpx.Response:
    headers = {"authorization": "Bearer x"} | ({"x-edgepick-task": task} if task else {})
    body = {"model": NAME, "max_tokens": 96, "temperature": 0,
            "messages": [{"role": "user", "content": f"Extract the person as JSON. {content}"}]}
    return httpx.post(s.v1 + "/chat/completions", json=body | extra, headers=headers,
                      timeout=120)


def test_every_request_of_the_constrained_task_answers_schema_valid_json(smollm2_q4_1, tmp_path):
    cfg = _deploy(smollm2_q4_1, tmp_path)
    deploy = cfg.dump(tmp_path / "deploy.yaml")
    assert DeployConfig.load(deploy).constraints["extraction"].json_schema == SCHEMA
    with serve([str(deploy), "--slots", "1"], tmp_path) as s:
        (pid,) = s.engine_pids()
        cmd = psutil.Process(pid).cmdline()
        assert cmd[cmd.index("-ctk") + 1] == "q8_0" and cmd[cmd.index("-fa") + 1] == "on"
        assert "--lora-scaled" in cmd
        for prompt in PROMPTS:
            r = _chat(s, "extraction", prompt)
            assert r.status_code == 200, r.text
            assert r.headers["x-edgepick-constraint"] == "deploy"
            jsonschema.validate(json.loads(r.json()["choices"][0]["message"]["content"]), SCHEMA)
        # the official client, by metadata instead of the header, streamed
        client = s.openai("x", timeout=120)
        stream = client.chat.completions.create(
            model=NAME, max_tokens=96, temperature=0, stream=True, metadata={"task": "extraction"},
            messages=[{"role": "user", "content": "Extract the person as JSON. Dan is 52."}])
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        jsonschema.validate(json.loads(text), SCHEMA)
        raw = client.chat.completions.with_raw_response.create(
            model=NAME, max_tokens=96, temperature=0,
            extra_headers={"x-edgepick-task": "extraction"},
            messages=[{"role": "user", "content": "Extract the person as JSON. Eve is 7."}])
        assert raw.headers["x-edgepick-constraint"] == "deploy"
        jsonschema.validate(json.loads(raw.parse().choices[0].message.content), SCHEMA)
        # another task, and no task: free text, nothing said
        for task in ("chat", None):
            r = _chat(s, task, PROMPTS[2])
            assert r.status_code == 200 and "x-edgepick-constraint" not in r.headers
        # the client's own constraint wins, and the answer says so
        own = {"type": "object", "required": ["city"], "additionalProperties": False,
               "properties": {"city": {"type": "string", "maxLength": 16}}}
        r = _chat(s, "extraction", PROMPTS[0], response_format={
            "type": "json_schema", "json_schema": {"name": "own", "schema": own}})
        assert r.status_code == 200 and r.headers["x-edgepick-constraint"] == "client"
        jsonschema.validate(json.loads(r.json()["choices"][0]["message"]["content"]), own)


def test_the_fields_a_constraint_puts_in_a_request():
    """Without an engine: a label set becomes llama-server's grammar, a schema on
    /v1/completions its `json_schema` (llama-server reads `response_format` on chat only), a task
    routed to the cloud is left alone, and tools count as the client's own constraint."""
    from edgepick.records.deploy import TaskRoute
    from edgepick.serve.router_api import RouteRequest
    from edgepick.serve.http.task_constraints import TaskConstraints

    cfg = DeployConfig(model=DeployModel(name="m", path="/m.gguf", sha256=""),
                       routes=[TaskRoute(task="math", route="cloud")],
                       constraints={"extraction": TaskConstraint(json_schema=SCHEMA),
                                    "sentiment": TaskConstraint(labels=["positive", "negative"]),
                                    "math": TaskConstraint(labels=["1", "2"])})
    tc = TaskConstraints(cfg)

    def applied(kind, task, body=None):
        rr = RouteRequest(kind, dict(body or {"prompt": "x"}), False, 0.0, task=task)
        tc.apply(rr)
        return rr

    rr = applied("chat", "sentiment")
    assert rr.body["grammar"] == 'root ::= "positive" | "negative"\n' and rr.constraint == "deploy"
    rr = applied("completion", "extraction")
    assert rr.body["json_schema"] == SCHEMA and "response_format" not in rr.body
    assert applied("chat", "extraction").body["response_format"]["json_schema"]["schema"] == SCHEMA
    assert applied("chat", "math").constraint is None  # the cloud's: not measured on the device
    rr = applied("chat", "extraction", {"tools": [{"type": "function"}]})
    assert rr.constraint == "client" and "response_format" not in rr.body
