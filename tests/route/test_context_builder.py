"""The context builder on English and Chinese conversations longer than the window, counted
with the model's own tokenizer (the tiny SmolLM2 cut, in process)."""

from __future__ import annotations

import random

import pytest

from edgepick.route.context import (TASK_OPEN, BackendTokenizer, ContextBuilder,
                                    ContextOverflow, Snippet)

EN = ["Can you remind me what we decided about the database migration for the billing service?",
      "We agreed to move the invoices table first, then the payments table, during the weekend.",
      "What about the rollback plan if the payments migration fails halfway through the night?",
      "Keep the old replica running for 48 hours and switch the read traffic back if needed.",
      "Who is on call for the migration window, and how do we reach them quickly?"]
ZH = ["请帮我回顾一下我们上次关于计费服务数据库迁移的决定是什么？",
      "我们同意先迁移发票表，再在周末迁移支付表，并且提前通知所有相关团队。",
      "如果支付表迁移在夜里进行到一半失败了，我们的回滚方案是什么？",
      "保留旧的只读副本四十八小时，如果需要就把读流量切回去，并记录所有异常。",
      "迁移窗口期间谁负责值班？我们怎样才能最快联系到他们？"]


@pytest.fixture(scope="module")
def tokenizer(tiny_model):
    from edgepick.backends import get_backend
    from edgepick.records.candidate import Candidate, RuntimeSettings

    backend = get_backend("llama_cpp")
    backend.load(Candidate(model=tiny_model, settings=RuntimeSettings(n_ctx=512, threads=1)))
    yield BackendTokenizer(backend)
    backend.unload()


def conversation(lines: list[str], turns: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    msgs = []
    for i in range(turns):
        role = "user" if i % 2 == 0 else "assistant"
        msgs.append({"role": role, "content": f"({i}) " + " ".join(rng.sample(lines, 2))})
    if msgs[-1]["role"] != "user":
        msgs.append({"role": "user", "content": f"({turns}) " + lines[0]})
    return msgs


def check(res, builder, tokenizer, system: str, msgs: list[dict]) -> None:
    assert res.tokens <= builder.budget
    assert tokenizer.count_messages(res.messages) == res.tokens  # counted whole, not estimated
    assert res.messages[0]["role"] == "system" and res.messages[0]["content"].startswith(system)
    assert res.messages[-1] == msgs[-1]  # the latest turn, untouched
    kept = [m for m in res.messages[1:-1]]
    assert kept == msgs[len(msgs) - 1 - len(kept):-1]  # the most recent turns, in order


@pytest.mark.parametrize("lines", [EN, ZH], ids=["english", "chinese"])
def test_long_conversation_fits_the_budget_keeping_system_and_latest_turn(tokenizer, lines):
    system = "You are a careful assistant for the operations team." if lines is EN \
        else "你是运维团队的细心助手。"
    msgs = [{"role": "system", "content": system}] + conversation(lines, 40)
    assert tokenizer.count_messages(msgs) > 1024  # longer than the whole window
    builder = ContextBuilder(tokenizer, window=1024)
    res = builder.fit_messages(msgs, [Snippet(lines[3], 0.9, "runbook"), Snippet(lines[1], 0.2)])
    check(res, builder, tokenizer, system, msgs)
    assert res.changed and res.dropped_turns > 0 and res.summarised_turns == res.dropped_turns
    assert TASK_OPEN in res.messages[0]["content"]
    assert "summary of" in res.messages[0]["content"]
    assert res.kept_turns >= 4
    header = res.header()
    assert f"turns_dropped={res.dropped_turns}" in header and f"budget={builder.budget}" in header


def test_snippets_go_by_score(tokenizer):
    msgs = [{"role": "system", "content": "Answer from the snippets."}] + conversation(EN, 3)
    small = ContextBuilder(tokenizer, window=300, keep_recent=0, summariser=None)
    snippets = [Snippet("low relevance: " + EN[4] * 4, 0.1), Snippet("high: " + EN[1], 0.95),
                Snippet("mid: " + EN[2] * 3, 0.5), Snippet("mid2: " + EN[3] * 3, 0.4)]
    res = small.fit_messages(msgs, snippets)
    text = res.messages[0]["content"]
    assert "high:" in text and "low relevance" not in text and res.dropped_snippets >= 1
    kept = [x for x in ("high:", "mid:", "mid2:") if x in text]
    assert kept == sorted(kept, key=text.index)  # listed by score


def test_random_conversations_never_exceed_the_budget(tokenizer):
    rng = random.Random(7)
    for case in range(12):
        lines = EN if case % 2 else ZH
        window = rng.choice([256, 384, 512, 1024])
        msgs = [{"role": "system", "content": "System rules stay."}] + \
            conversation(lines, rng.randint(1, 30), seed=case)
        snippets = [Snippet(rng.choice(lines), rng.random()) for _ in range(rng.randint(0, 4))]
        builder = ContextBuilder(tokenizer, window=window, budget_share=rng.choice([0.5, 0.7]))
        try:
            res = builder.fit_messages(msgs, snippets)
        except ContextOverflow:
            continue
        check(res, builder, tokenizer, "System rules stay.", msgs)


def test_fits_untouched_and_overflow_is_a_clear_error(tokenizer):
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    res = ContextBuilder(tokenizer, window=512).fit_messages(msgs)
    assert not res.changed and res.messages == msgs
    huge = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": EN[0] * 40}]
    with pytest.raises(ContextOverflow, match="latest turn alone take"):
        ContextBuilder(tokenizer, window=512).fit_messages(huge)
