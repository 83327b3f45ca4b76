"""The openai_http backend against a real OpenAI-compatible server: llama.cpp's llama-server,
started here on a free loopback port with the tiny model, and always stopped."""

from __future__ import annotations

import json

import httpx
import pytest
from llama_server import free_port, llama_server

from edgepick.backends import get_backend
from edgepick.errors import EdgepickError
from edgepick.records.candidate import Candidate


@pytest.fixture(scope="module")
def server(tiny_model, tmp_path_factory):
    with llama_server(tiny_model, "tiny", tmp_path_factory.mktemp("server"), parallel=2) as url:
        yield url


@pytest.fixture
def http_backend(server):
    b = get_backend("openai_http")
    b.load(Candidate(model=server, backend="openai_http"))
    yield b
    b.unload()


def test_streaming_generation_matches_the_engine_in_process(http_backend, tiny_model):
    local = get_backend("llama_cpp")
    local.load(Candidate(model=tiny_model))
    try:
        text = "The decode speed depends on memory bandwidth"
        tokens = http_backend.tokenize(text)
        assert tokens == local.tokenize(text)  # the server's tokenizer is the model's own
        assert http_backend.detokenize(tokens[1:]) == local.detokenize(tokens[1:])
        remote = http_backend.generate(tokens, 12, ignore_eos=True)
        alone = local.generate(tokens, 12, ignore_eos=True)
    finally:
        local.unload()
    assert remote.prompt_tokens == len(tokens) and remote.generated_tokens == 12
    assert remote.text == alone.text  # greedy, same llama.cpp code: the same tokens
    # One arrival per chunk with text; never more than the tokens the server counted.
    assert 1 <= len(remote.token_times) <= 12
    assert remote.token_times == sorted(remote.token_times)
    assert remote.prefill_s is not None and 0 < remote.prefill_s <= remote.ttft_s


def test_chat_ttft_skips_the_role_chunk(http_backend, server):
    g = http_backend.generate([{"role": "user", "content": "Say hello."}], 8, ignore_eos=True)
    assert g.generated_tokens == 8 and g.text
    # The same request by hand: the stream opens with a chunk carrying only the role, which
    # must not count as a token arrival (else TTFT would be the server's reaction time).
    base = server.split("#")[0]
    body = {"model": "tiny", "messages": [{"role": "user", "content": "Say hello."}],
            "max_tokens": 8, "stream": True, "temperature": 0.0, "seed": 42,
            "ignore_eos": True, "cache_prompt": False}
    with httpx.stream("POST", f"{base}/chat/completions", json=body, timeout=60) as r:
        chunks = [json.loads(line[5:]) for line in r.iter_lines()
                  if line.startswith("data:") and "[DONE]" not in line]
    first = chunks[0]["choices"][0]["delta"]
    assert first.get("role") == "assistant" and not first.get("content")
    texts = [c["choices"][0]["delta"].get("content") for c in chunks if c.get("choices")]
    assert "".join(t for t in texts if t) == g.text
    assert len(g.token_times) == len([t for t in texts if t])


def test_concurrent_requests_and_clear_errors(http_backend, server):
    prompts = [http_backend.tokenize("Edge devices run language models " * k) for k in (2, 3)]
    gens = http_backend.generate_concurrent(prompts, 6, ignore_eos=True)
    assert [g.generated_tokens for g in gens] == [6, 6]
    assert [g.prompt_tokens for g in gens] == [len(p) for p in prompts]
    with pytest.raises(EdgepickError, match="cannot return full logits"):
        http_backend.logits(prompts[0])
    other = get_backend("openai_http")
    with pytest.raises(EdgepickError, match="'nope' is not served.*tiny"):
        other.load(Candidate(model=server.replace("#tiny", "#nope"), backend="openai_http"))
    with pytest.raises(EdgepickError, match="cannot reach the server"):
        other.load(Candidate(model=f"http://127.0.0.1:{free_port()}/v1#x",
                             backend="openai_http"))


def test_cli_bench_over_http(cli, server, store_path):
    proc = cli("bench", "--model", server, "--prompt-lengths", "16,32", "--gen", "6",
               "--warmup", "0", "--repeats", "2", "--concurrency", "1,2", "--store", store_path,
               "--json", "--quiet-wait", "0")  # waiting for quiet: test_host_load.py
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert [(r["sweep"], r["status"]) for r in rows] == \
        [("prompt_length", "ok"), ("prompt_length", "ok"), ("concurrency", "ok")]
    for r in rows:
        assert r["backend"] == "openai_http"
        assert {"ttft_ms", "prefill_tps", "decode_tps", "itl_ms", "e2e_ms"} <= set(r["metrics"])
        # The server's memory and load time are not ours to measure: omitted, not faked.
        assert not {"peak_rss_bytes", "load_ms"} & set(r["metrics"])
        assert r["settings"]["server"]["n_ctx"] and "127.0.0.1" in r["settings"]["engine_version"]
    assert rows[2]["metrics"]["throughput_tps"]["n"] == 2
