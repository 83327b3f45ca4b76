"""`/v1/embeddings` (issue 25): served by the deploy's embedding engine (a second locked
llama-server with `--embeddings --pooling mean`), through the official `openai` client and
LangChain's `OpenAIEmbeddings`, with vectors checked against llama-cpp-python in process on the
same file; a 501 in OpenAI's shape when the deploy enables none."""

from __future__ import annotations

import httpx
import numpy as np
import openai
import pytest
from parts import need_module

from edgepick.records.deploy import DeployConfig, DeployModel, EmbeddingEngine
from edgepick.registry.store import sha256_of
from serve_harness import chat_and_embedding_deploy, serve

KEY = "embed-key"
TEXTS = ["The cat sat on the mat.", "Quantized models run on small devices."]


@pytest.fixture(scope="module")
def server(tiny_model, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve_embeddings")
    path = chat_and_embedding_deploy(tmp, "tiny-chat", tiny_model, tiny_model, embed_slots=2)
    with serve([str(path), "--slots", "1", "--queue", "2", "--api-key", KEY, "--threads", "1"],
               tmp) as s:
        yield s


@pytest.fixture(scope="module")
def oracle(tiny_model):
    """llama.cpp in process, mean-pooled, on the same file: an independent path to the vector."""
    llama_cpp = need_module("llama_cpp")
    llm = llama_cpp.Llama(model_path=tiny_model, embedding=True, n_ctx=512, n_threads=1,
                          pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN, verbose=False)
    yield lambda text: np.asarray(llm.embed(text), dtype=np.float64)
    llm.close()


def _cos(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_openai_client_embeddings_match_llama_cpp(server, oracle):
    client = server.openai(KEY)
    out = client.embeddings.create(model="anything", input=TEXTS)  # the client asks for base64
    assert [d.index for d in out.data] == [0, 1]
    assert out.usage.prompt_tokens > 0 and out.usage.total_tokens == out.usage.prompt_tokens
    assert out.model != "anything"
    for text, got in zip(TEXTS, out.data):
        assert _cos(got.embedding, oracle(text)) >= 0.999
    floats = client.embeddings.create(model="x", input=TEXTS[0], encoding_format="float")
    assert _cos(floats.data[0].embedding, out.data[0].embedding) >= 0.9999
    # token ids are one input; a list of them is several
    ids = httpx.post(server.url + "/tokenize", json={"prompt": TEXTS[0]},
                     headers={"Authorization": f"Bearer {KEY}"}, timeout=30).json()["tokens"]
    by_ids = client.embeddings.create(model="x", input=[ids, ids], encoding_format="float")
    assert len(by_ids.data) == 2 and _cos(by_ids.data[0].embedding, out.data[0].embedding) > 0.99
    width = len(floats.data[0].embedding)
    assert len(client.embeddings.create(model="x", input="hi", dimensions=width).data) == 1
    assert server.metric("edgepick_requests_total", KEY, endpoint="/v1/embeddings",
                         status="200") >= 4
    assert server.metric("edgepick_embedding_inputs_total", KEY) >= 6


def test_embedding_refusals_are_openai_shaped(server):
    client = server.openai(KEY)
    with pytest.raises(openai.BadRequestError) as exc:
        client.embeddings.create(model="x", input="hi", dimensions=3)
    assert exc.value.param == "dimensions" and exc.value.code == "unsupported_value"
    for body, param in (({"input": 5}, "input"), ({}, "input"),
                        ({"input": "hi", "encoding_format": "int8"}, "encoding_format"),
                        ({"input": "hi", "slot_id": 0}, "slot_id")):
        r = httpx.post(server.v1 + "/embeddings", json=body, timeout=30,
                       headers={"Authorization": f"Bearer {KEY}", "x-request-id": "emb-1"})
        assert r.status_code == 400, (body, r.text)
        err = r.json()["error"]
        assert err["param"] == param and isinstance(err["code"], str)
        assert r.headers["x-request-id"] == "emb-1"
    # an input longer than the embedding engine's n_ctx: llama-server says 500, the client 400
    r = httpx.post(server.v1 + "/embeddings", json={"input": "word " * 700}, timeout=60,
                   headers={"Authorization": f"Bearer {KEY}"})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "context_length_exceeded"
    assert r.json()["error"]["param"] == "input"
    # a text the tokenizer empties (SmolLM2 drops "\x04" and adds no BOS): llama-server says
    # only "Input content cannot be empty"; serve names the input (schemathesis seed 2202)
    for given, param in (("\x04", "input"), (["hi", "\x04"], "input[1]")):
        r = httpx.post(server.v1 + "/embeddings", json={"input": given}, timeout=30,
                       headers={"Authorization": f"Bearer {KEY}"})
        assert r.status_code == 400, r.text
        assert (r.json()["error"]["code"], r.json()["error"]["param"]) == ("empty_input", param)
    r = httpx.post(server.v1 + "/embeddings", json={"input": "hi"}, timeout=30)
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
    ids = [m.id for m in client.models.list()]
    assert ids[0] == "tiny-chat" and len(ids) == 2  # the chat model first, then the embedder
    assert len(server.engine_pids()) == 2  # two locked children


def test_langchain_openai_embeddings(server, oracle):
    lc = need_module("langchain_openai")
    # LangChain tokenizes with tiktoken unless told not to: those ids mean nothing to another
    # model's vocabulary, so it is told to send the text (as its docs say for non-OpenAI servers)
    emb = lc.OpenAIEmbeddings(base_url=server.v1, api_key=KEY, model="x", max_retries=0,
                              check_embedding_ctx_length=False)
    vecs = emb.embed_documents(TEXTS)
    assert len(vecs) == 2 and _cos(vecs[1], oracle(TEXTS[1])) >= 0.999
    assert _cos(emb.embed_query(TEXTS[0]), oracle(TEXTS[0])) >= 0.999


def test_no_embedding_engine_is_openai_501(tiny_model, tmp_path):
    with serve(["-m", tiny_model, "--slots", "1", "--ctx", "256", "--threads", "1"],
               tmp_path) as s:
        client = s.openai("x")
        with pytest.raises(openai.APIStatusError) as exc:
            client.embeddings.create(model="x", input="hi")
        assert exc.value.status_code == 501 and exc.value.code == "not_implemented"
        assert len(s.engine_pids()) == 1


def _embedding_child(s) -> tuple[int, int]:
    import psutil

    for pid, port in zip(s.engine_pids(), s.engine_ports()):
        if "--embeddings" in psutil.Process(pid).cmdline():
            return pid, port
    raise AssertionError("no embedding engine child")


def test_embedding_engine_is_locked_probed_and_restarted(tiny_model, tmp_path):
    import os
    import signal

    from serve_harness import wait_until

    cfg = DeployConfig(model=DeployModel(name="tiny-chat", path=tiny_model,
                                         sha256=sha256_of(tiny_model)),
                       embeddings=EmbeddingEngine(model=tiny_model, sha256=sha256_of(tiny_model)))
    cfg.runtime.n_ctx = 256
    path = cfg.dump(tmp_path / "deploy.yaml")
    env = {"EDGEPICK_SERVE_PROBE_TIMEOUT": "1", "EDGEPICK_SERVE_HUNG_AFTER": "4"}
    with serve([str(path), "--slots", "1", "--threads", "1"], tmp_path, env=env) as s:
        pid, port = _embedding_child(s)
        engine = f"http://127.0.0.1:{port}"
        for headers in ({}, {"Authorization": "Bearer nope"}):
            r = httpx.post(engine + "/v1/embeddings", json={"input": "hi"}, headers=headers,
                           timeout=10)
            assert r.status_code == 401, r.text[:200]
        with open(f"/proc/{pid}/environ", "rb") as fh:
            key = [v for v in fh.read().split(b"\0") if v.startswith(b"LLAMA_API_KEY=")]
        (chat,) = [p for p in s.engine_pids() if p != pid]
        with open(f"/proc/{chat}/environ", "rb") as fh:
            assert key and key[0] not in fh.read().split(b"\0")  # a key of its own
        os.kill(pid, signal.SIGSTOP)
        try:
            wait_until("embedding engine unresponsive", lambda: httpx.get(
                s.url + "/health/ready", timeout=5).json()["embeddings"]["status"]
                == "unresponsive", 30)
            assert s.healthy()  # chat still serves: its readiness is its own
            wait_until("restart counted", lambda: s.metric(
                "edgepick_engine_restarts_total", reason="embedding_hung") == 1, 60)
        finally:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        wait_until("embedding engine ready again", lambda: httpx.get(
            s.url + "/health/ready", timeout=5).json()["embeddings"]["status"] == "ready", 60)
        assert _embedding_child(s)[0] != pid
        assert s.metric("edgepick_engine_restarts_total", reason="hung") == 0
        r = httpx.post(s.v1 + "/embeddings", json={"input": "hi"}, timeout=60)
        assert r.status_code == 200 and r.json()["data"][0]["embedding"]
