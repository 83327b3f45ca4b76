"""Checks on what the model is asked and how it answers: the deployed sampling against greedy
decoding (sampling; seed 004 §6.2: temperature about 0.7, repeat penalty 1.1-1.2), the prompts'
token counts against n_ctx (context_overflow; seed 004 §6.5: truncate rather than enlarge), and
tool calls against their JSON schema through the agent's guard (tool_schema; seed 004 §6.4)."""

from __future__ import annotations

from edgepick.doctor.checks import Skip, finding
from edgepick.doctor.checks_memory import fit_need
from edgepick.doctor.finding import Evidence, Fix
from edgepick.evaluate.unacceptable import repetition_loop
from edgepick.models.spec import spec_of
from edgepick.route.context import BackendTokenizer, ContextBuilder, ContextOverflow
from edgepick.toolcall.calls import tool_schemas
from edgepick.toolcall.guard import Guard
from edgepick.toolcall.prompting import json_call_messages

TEMPERATURE_MAX = 1.0  # above this the deployed sampling is outside the seeds' range
REPEAT_PENALTY_MAX = 1.3  # the seeds' 1.1-1.2, with room: a harsher penalty bans the answer's words
SAFE_SAMPLING = {"temperature": 0.7, "repeat_penalty": 1.1}  # seed 004 §6.2
LOGPROB_GAP = 2.0  # nats per token between greedy and sampled answers: the sampler wanders off
GEN_TOKENS = 32


def _answers(ctx, sampling: dict | None) -> dict:
    eng = ctx.engine()
    lps, loops, texts = [], 0, []
    for p in ctx.prompts[:2]:
        g = eng.generate(p.messages, GEN_TOKENS, chat=True, logprobs=True, sampling=sampling)
        lps += g.token_logprobs or []
        loops += repetition_loop(g.text)
        texts.append(g.text[:120])
    return {"mean_logprob": sum(lps) / len(lps) if lps else None, "loops": loops,
            "n": min(2, len(ctx.prompts)), "examples": texts[:2]}


def _edit(sampling: dict) -> dict:
    return {f"sampling.{k}": v for k, v in sampling.items()}


def sampling(ctx):
    s = dict(ctx.target.sampling or {})
    temp, penalty = float(s.get("temperature") or 0), float(s.get("repeat_penalty") or 1.0)
    out_of_range = temp > TEMPERATURE_MAX or (temp > 0 and penalty > REPEAT_PENALTY_MAX)
    if not out_of_range and ctx.symptom != "repetition":
        return None  # nothing to vary: the deployed sampling is in the seeds' range
    deployed = s if temp > 0 else None

    def measure() -> dict:
        g = _answers(ctx, None)
        return {"greedy": g, "deployed": g if deployed is None else _answers(ctx, deployed)}

    figs = ctx.measured("sampling", [GEN_TOKENS, [p.messages for p in ctx.prompts[:2]]], measure)
    g, d = figs["greedy"], figs["deployed"]
    gap = (g["mean_logprob"] - d["mean_logprob"]) if None not in (g["mean_logprob"],
                                                                   d["mean_logprob"]) else 0.0
    fixed = {**s, **SAFE_SAMPLING}
    if not out_of_range:
        # in range, but the answers loop: does a repeat penalty stop it?
        if d["loops"] == 0 or penalty >= SAFE_SAMPLING["repeat_penalty"]:
            return None
        after = ctx.measured("sampling_fix", [GEN_TOKENS, fixed], lambda: _answers(ctx, fixed))
        if after["loops"] >= d["loops"]:
            return None
        return finding(ctx, "sampling",
                       f"{d['loops']} of {d['n']} answers loop with "
                       f"{'greedy decoding' if deployed is None else 'the deployed sampling'} "
                       f"and no repeat penalty; {after['loops']} with repeat penalty 1.1",
                       Fix(text="sample at temperature 0.7 with repeat penalty 1.1 (seed 004 "
                                "§6.2)", deploy_edit=_edit(fixed),
                           verified=f"{after['loops']} of {after['n']} answers loop"),
                       0.8, [Evidence(what="answers in a repetition loop", value=d["loops"],
                                      baseline=after["loops"], unit=f"of {d['n']}",
                                      command=ctx.doctor_cmd("repetition"))],
                       detail="repeat_penalty")
    after = ctx.measured("sampling_fix", [GEN_TOKENS, fixed], lambda: _answers(ctx, fixed))
    measured = gap > LOGPROB_GAP or d["loops"] > g["loops"]
    return finding(
        ctx, "sampling",
        f"temperature {temp:g} with repeat penalty {penalty:g} (seeds: about 0.7 and 1.1-1.2): "
        f"sampled "
        f"tokens average {d['mean_logprob']:.2f} nats against greedy's {g['mean_logprob']:.2f}",
        Fix(text="sample at temperature 0.7 with a repeat penalty of 1.1 (seed 004 §6.2)",
            deploy_edit=_edit(fixed),
            verified=(f"mean token log-probability {after['mean_logprob']:.2f} nats"
                      if after["mean_logprob"] is not None else None)),
        0.95 if measured else 0.6,
        [Evidence(what="mean token log-probability, deployed sampling vs greedy",
                  value=round(d["mean_logprob"], 3), baseline=round(g["mean_logprob"], 3),
                  unit="nats", command=ctx.doctor_cmd("garbled")),
         Evidence(what="answers in a repetition loop", value=d["loops"], baseline=g["loops"],
                  unit=f"of {d['n']}"),
         Evidence(what="example answer", value=(d["examples"] or [""])[0])],
        detail=f"temperature {temp:g}, repeat penalty {penalty:g}")


# -- context ---------------------------------------------------------------------------------
def _fits_memory(ctx, n_ctx: int) -> bool:
    need = fit_need(ctx, n_ctx=n_ctx)
    return need is not None and need <= ctx.target.budget(ctx.budget_bytes).bytes


def context_overflow(ctx):
    n_ctx = ctx.target.settings.n_ctx
    answer = ctx.target.output_p95 or 64
    lengths: dict[str, int] = {}
    if ctx.prompts_given:
        tok = BackendTokenizer(ctx.engine())
        lengths = ctx.measured("context_tokens", [[p.messages for p in ctx.prompts]],
                               lambda: {p.id: tok.count_messages(p.messages)
                                        for p in ctx.prompts})
    p99 = ctx.target.context_p99
    if not lengths and p99 is None:
        raise Skip("no prompts (--prompts) and no context_tokens in deploy.yaml to count")
    over = {k: n for k, n in lengths.items() if n + answer > n_ctx}
    scenario_over = p99 is not None and p99 + answer > n_ctx
    if not over and not scenario_over:
        return None
    longest = max(list(over.values()) + ([p99] if scenario_over else []))
    ev = [Evidence(what="prompts over n_ctx (with the answer's tokens)", value=len(over),
                   unit=f"of {len(lengths)} prompts", command=ctx.doctor_cmd(
                       "context-overflow")),
          Evidence(what="longest prompt", value=longest, limit=n_ctx - answer, unit="tokens")]
    if scenario_over:
        ev.append(Evidence(what="scenario's prompt P99", value=p99, limit=n_ctx - answer,
                           unit="tokens"))
    fitted = 0
    if over:
        builder = ContextBuilder(BackendTokenizer(ctx.engine()), window=n_ctx)
        for p in ctx.prompts:
            if p.id in over:
                try:
                    fitted += builder.fit_messages(p.messages).tokens + answer <= n_ctx
                except ContextOverflow:
                    pass
        ev.append(Evidence(what="over-long prompts the context builder cuts to fit "
                                "(70% of the window)", value=fitted, unit=f"of {len(over)}"))

    trained = spec_of(ctx.target.model_path).context_length or 0
    want = -(-(longest + answer) // 256) * 256
    if (not trained or want <= trained) and _fits_memory(ctx, want):
        fix = Fix(text=f"raise n_ctx to {want} (fit: it stays within the memory budget); or "
                       "truncate by priority with the context builder (seed 004 §6.5)",
                  deploy_edit={"runtime.n_ctx": want})
    else:
        fix = Fix(text=f"truncate rather than enlarge (seed 004 §6.5): n_ctx {want} "
                       + ("exceeds the model's trained context" if trained and want > trained
                          else "does not fit the memory budget")
                       + f"; the context builder fits {fitted} of {len(over)} by priority "
                         "(serve's router: route policy context_budget_share 0.7); shorten "
                         "the rest")
    return finding(ctx, "context_overflow",
                   f"{len(over) or 'the scenario P99'} prompt(s) need more than n_ctx {n_ctx} "
                   f"with a {answer}-token answer (longest {longest} tokens)",
                   fix, 1.0, ev, detail=f"n_ctx {n_ctx}")


# -- tool calls ------------------------------------------------------------------------------
TYPE_REPAIRS = {"number_as_string", "boolean_as_string", "whole_number"}


def tool_schema(ctx):
    items = [p for p in ctx.prompts if p.tools]
    if not items:
        raise Skip("no prompts with tools (--prompts FILE with `tools`, optionally a recorded "
                   "`reply`)")
    refused, repaired, unparseable, examples, args = 0, 0, 0, [], set()
    for p in items:
        reply = p.reply
        if reply is None:
            reply = ctx.engine().generate(json_call_messages(p.messages, p.tools), 96,
                                          chat=True).text
        v = Guard(tool_schemas(p.tools)).check(reply)
        if v.status == "invalid_arguments":
            refused += 1
            examples.append(f"{p.id}: {v.error.split('. Its parameters')[0]}")
            args.update(k for k in (v.parsed.arguments or {}) if isinstance(v.parsed.arguments,
                                                                            dict))
        elif v.status in ("unparseable", "unknown_tool"):
            unparseable += 1
            examples.append(f"{p.id}: {v.status}")
        type_fixes = [r for r in v.repairs if r.kind in TYPE_REPAIRS]
        if v.status == "call" and type_fixes:
            repaired += 1
            examples.append(f"{p.id}: repaired {type_fixes[0].detail}")
    if not (refused or repaired or unparseable):
        return None
    n = len(items)
    if refused:
        fix = Fix(text="validate every call against its schema and send the guard's error back "
                       "to the model to retry (seed 004 §6.4: `edgepick agent` does); state each "
                       "argument's type in the tool description")
    elif repaired:
        fix = Fix(text="pass the calls through edgepick's guard (`edgepick agent`): it repairs "
                       f"these {repaired} type slip(s) and logs each repair")
    else:
        fix = Fix(text="the replies hold no valid call: check the chat template and sampling "
                       f"(`{ctx.doctor_cmd('garbled')}`), or prompt with the JSON call format")
    bad = refused + repaired
    return finding(ctx, "tool_schema",
                   f"{refused} of {n} tool call(s) break their JSON schema, {repaired} more "
                   f"need the guard's type repair, {unparseable} hold no valid call",
                   fix, 0.95 if bad * 2 >= n else 0.7 if bad else 0.5,
                   [Evidence(what="calls refused by the guard (invalid arguments)", value=refused,
                             unit=f"of {n}", command=ctx.doctor_cmd("tool-calls")),
                    Evidence(what="calls the guard repairs (types)", value=repaired, unit=f"of {n}"),
                    Evidence(what="replies with no valid call", value=unparseable, unit=f"of {n}"),
                    Evidence(what="examples", value=examples[:3])],
                   detail=", ".join(sorted(args)) or None)
