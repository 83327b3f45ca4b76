"""Eval's items over HTTP go as concurrent requests, as many as the caller asked for (load's
n_seq) and no more than the server's slots (llama-server's /props), and a request that fails
costs only its own output. The server is llama.cpp's llama-server with the tiny model, on a
free loopback port, and it is always stopped."""

from __future__ import annotations

import threading

import pytest
from llama_server import llama_server

from edgepick.backends.base import GenRequest, LoadOptions
from edgepick.backends.openai_http import OpenAIHttpBackend
from edgepick.errors import EdgepickError
from edgepick.inputs import resolve_ref
from edgepick.records.candidate import Candidate

SLOTS = 3


@pytest.fixture(scope="module")
def endpoint(tiny_model, tmp_path_factory):
    with llama_server(tiny_model, "tiny-slots", tmp_path_factory.mktemp("server"),
                      parallel=SLOTS) as url:
        yield url


def _backend(endpoint, n_seq: int) -> OpenAIHttpBackend:
    b = OpenAIHttpBackend()
    b.load(Candidate(ref=resolve_ref(endpoint)), LoadOptions(n_seq=n_seq))
    return b


def _requests(n: int) -> list[GenRequest]:
    return [GenRequest(prompt=f"Count to {i}:", max_tokens=6, chat=True) for i in range(n)]


def test_requests_fly_together_up_to_the_servers_slots(endpoint, monkeypatch):
    b = _backend(endpoint, n_seq=8)
    # a cyclic barrier of the server's width: it opens only if that many are in flight at once
    together = threading.Barrier(SLOTS, timeout=60)
    lock, flying, most = threading.Lock(), [0], [0]
    real = b.generate

    def generate(*args, **kw):
        with lock:
            flying[0] += 1
            most[0] = max(most[0], flying[0])
        together.wait()
        try:
            return real(*args, **kw)
        finally:
            with lock:
                flying[0] -= 1

    monkeypatch.setattr(b, "generate", generate)
    heard: list[tuple[int, str]] = []
    try:
        out = b.generate_many(_requests(6),
                              lambda i, g: heard.append((i, threading.current_thread().name)))
    finally:
        b.unload()
    assert most[0] == SLOTS  # 8 asked for, capped at the server's 3 slots
    assert len(out) == 6 and all(g.generated_tokens > 0 for g in out)
    assert sorted(i for i, _ in heard) == list(range(6))
    # in the caller's thread: the store it writes to is used from one thread
    assert {name for _, name in heard} == {threading.current_thread().name}


def test_a_failing_request_costs_only_its_own_output(endpoint, monkeypatch):
    b = _backend(endpoint, n_seq=4)
    real = b.generate

    def generate(prompt, *args, **kw):
        if "2" in str(prompt):
            raise EdgepickError("the server refused this one")
        return real(prompt, *args, **kw)

    monkeypatch.setattr(b, "generate", generate)
    heard: list[int] = []
    try:
        with pytest.raises(EdgepickError, match="refused this one"):
            b.generate_many(_requests(5), lambda i, g: heard.append(i))
    finally:
        b.unload()
    assert sorted(heard) == [0, 1, 3, 4]


def test_without_n_seq_it_is_one_at_a_time(endpoint, monkeypatch):
    b = _backend(endpoint, n_seq=1)
    threads: list[str] = []
    real = b.generate

    def generate(*args, **kw):
        threads.append(threading.current_thread().name)
        return real(*args, **kw)

    monkeypatch.setattr(b, "generate", generate)
    try:
        out = b.generate_many(_requests(3))
    finally:
        b.unload()
    assert threads == [threading.current_thread().name] * 3 and len(out) == 3
