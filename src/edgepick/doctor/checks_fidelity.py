"""Checks against a known-good baseline of the same model: the weights against the reference,
bisected to the tensor class (quantization; seed 003 §8.1, seed 000 §5.1), the deployed KV cache
type against f16 at the scenario's long context (kv_cache_type), and the first diverging token
between two builds (conversion; seed 000 §5.4, seed 003 §8.3)."""

from __future__ import annotations

import json
import os
import shlex
import tempfile
from pathlib import Path

import numpy as np

from edgepick.assets import bundled
from edgepick.doctor.checks import Skip, finding
from edgepick.doctor.checks_file import _render_error, _template_and_vocab, _with_template
from edgepick.doctor.finding import Evidence, Fix
from edgepick.doctor.workdir import work_dir
from edgepick.errors import EdgepickError
from edgepick.evaluate.consistency import consistency
from edgepick.evaluate.fidelity import bundled_text, read_text
from edgepick.evaluate.fidelity_stage import FidelityRequest, run
from edgepick.evaluate.fidelity_stats import Accumulator, compare_rows, reference_rows
from edgepick.models.gguf_fast_reader import fast_reader
from edgepick.models.spec import spec_of
from edgepick.quantize.ladder import build
from edgepick.quantize.sensitivity import analyze
from edgepick.records.model_ref import ModelRef
from edgepick.store.identity import file_sha256

QCTX = 256  # tokens per fidelity chunk; one chunk (127 scored positions) separates a collapse
BISECT_CTX = 128
KLD_BAD = 0.10  # nats: a Q8_0 of SmolLM2-135M sits at ~0.006, its Q2_K at ~0.7 (docs/doctor.md)
TOP1_BAD = 0.80
FIX_TYPES = ("Q4_K_M", "Q8_0")  # the fix tried in this order: smallest that passes first
KV_KLD_BAD = 0.03  # q8_0 KV at 1024 tokens: ~0.005; q4_0: ~0.075 (docs/doctor.md)
KV_TOP1_BAD = 0.90
KV_MAX_CTX = 1024  # the long context compared, capped: prefill on a 2-core host is slow


def _shape(path: str) -> tuple:
    """What makes two files the same model at different precisions: architecture, shape of
    every tensor, and the token table."""
    r = fast_reader(path)
    tokens = r.fields["tokenizer.ggml.tokens"].contents()
    return (r.fields["general.architecture"].contents(),
            tuple(sorted((t.name, tuple(int(d) for d in t.shape)) for t in r.tensors)),
            len(tokens), tokens[:64], tokens[-64:])


def _bundled_reference(path: str):
    """The bundled F16 of the same model, when the target is a build of a bundled model (its
    sources' headers are compared first; the F16 is derived only for a match)."""
    try:
        mine = _shape(path)
    except (EdgepickError, KeyError, ValueError, OSError):
        return None
    for source, f16 in ((bundled.smollm2_q4_1, bundled.smollm2_f16),
                        (bundled.gemma3_270m_q4_k_m, bundled.gemma3_270m_f16)):
        try:
            if _shape(str(source())) == mine:
                return ModelRef.file(str(f16()), label="bundled F16 (found by doctor)")
        except (EdgepickError, KeyError, ValueError, OSError):
            continue
    return None


def _reference(ctx):
    if ctx.reference is None:
        ctx.reference = _bundled_reference(ctx.target.model_path)
    if ctx.reference is None or not ctx.reference.path:
        raise Skip("needs --reference: the F16 (or the build it was converted from), a GGUF "
                   "with the same vocabulary")

    if os.path.realpath(ctx.reference.path) == os.path.realpath(ctx.target.model_path):
        raise Skip("the target is its own reference: nothing to compare")
    return ctx.reference


def _fidelity(ctx, cand_path: str, chunks: int = 1):
    req = FidelityRequest(reference=ctx.reference, candidate=ModelRef.file(cand_path),
                          text=str(bundled_text()), ctx=QCTX, max_chunks=chunks,
                          threads=ctx.threads)
    return run(req, ctx.store)


def _bad(r) -> bool:
    return r.kld_mean > KLD_BAD or r.same_top1 < TOP1_BAD


def _bisect(ctx, low: str):
    """The tensor class whose lowering alone costs the most KLD (quantize/sensitivity.py)."""
    rep = analyze(ctx.reference.path, low=low, high="Q8_0", text=str(bundled_text("calibration")),
                  by="class", ctx=BISECT_CTX, chunks=1, threads=ctx.threads, store=ctx.store,
                  on_unit=lambda ev: ctx.tick(ev.done, ev.total or 0, f"bisect {ev.what}"))
    return rep


def _fixed_build(ctx, ftype: str) -> tuple[str, object]:
    src = Path(ctx.reference.path)
    dst = work_dir() / f"{src.stem}.{ftype}.gguf"
    build(str(src), dst, ftype, threads=ctx.threads)
    return str(dst), _fidelity(ctx, str(dst))


def quantization(ctx):
    ref = _reference(ctx)
    r = _fidelity(ctx, ctx.target.model_path)
    cmd = shlex.join(["edgepick", "fidelity", "-m", ctx.target.model_path, "-r", ref.path,
                      "--ctx", str(QCTX), "--chunks", "1"])
    if not _bad(r):
        return None
    ftype = spec_of(ctx.target.model_path).file_type or "?"
    ev = [Evidence(what="KL divergence to the reference (mean)", value=round(r.kld_mean, 4),
                   limit=KLD_BAD, unit="nats", command=cmd),
          Evidence(what="top-1 agreement with the reference", value=round(r.same_top1, 3),
                   limit=TOP1_BAD, unit="share"),
          Evidence(what="perplexity ratio", value=round(r.ppl_ratio, 3), baseline=1.0)]
    detail = ftype
    src_type = spec_of(ref.path).file_type or ""
    if src_type.upper() in ("F16", "F32", "BF16", "ALL_F32", "MOSTLY_F16") and \
            ftype not in ("?", "Q8_0"):
        try:
            rep = _bisect(ctx, ftype)
            top = rep.entries[0]
            share = top.kld_mean / max(sum(e.kld_mean for e in rep.entries), 1e-12)
            detail = f"{ftype}, tensor class {top.unit}"
            ev.append(Evidence(what=f"KLD with only {top.unit} at {ftype} (all else Q8_0)",
                               value=round(top.kld_mean, 4),
                               baseline=round(rep.baseline_kld_mean, 4), unit="nats",
                               command=shlex.join(["edgepick", "sensitivity", ref.path, "--low",
                                                   ftype, "--high", "Q8_0", "--by", "class",
                                                   "--ctx", str(BISECT_CTX), "--chunks", "1"])))
            ev.append(Evidence(what=f"{top.unit}'s share of the classes' summed KLD",
                               value=round(share, 2), unit="share"))
        except EdgepickError as exc:
            ev.append(Evidence(what="bisection", value=f"not run: {exc}"))
    fix = Fix(text=f"rebuild from the reference at a higher type than {ftype}, or keep the most "
                   f"sensitive class at Q8_0 (`llama-quantize --tensor-type CLASS=Q8_0`)")
    for t in FIX_TYPES:
        try:
            path, after = _fixed_build(ctx, t)
        except EdgepickError as exc:
            fix.text += f"; building {t} failed: {exc}"
            break
        if not _bad(after):
            fix = Fix(text=f"use the {t} build of the reference (doctor wrote {path})",
                      command=shlex.join(["llama-quantize", ref.path, path, t]),
                      deploy_edit={"model.path": path, "model.sha256": file_sha256(path),
                                   "model.quant": t},
                      verified=f"KLD {after.kld_mean:.4f} nats, top-1 {after.same_top1:.1%}")
            break
    conf = 0.95 if r.kld_mean > 2 * KLD_BAD or r.same_top1 < TOP1_BAD - 0.1 else 0.75
    return finding(ctx, "quantization",
                   f"{ftype} moves the next-token distribution {r.kld_mean:.3f} nats from the "
                   f"reference (top-1 agreement {r.same_top1:.1%})", fix, conf, ev, detail=detail)


# -- KV cache -------------------------------------------------------------------------------
def _kv_rows(ctx, kv: str, n: int, tokens: list[int]) -> np.ndarray:
    eng = ctx.engine(need_logits=True, kv_type=kv, n_ctx=n, n_batch=n, n_ubatch=min(n, 512))
    first = n * 3 // 4
    return eng.logits(tokens)[first:n - 1]


def _kv_compare(ctx, kv: str, n: int) -> dict:
    def baseline() -> tuple:
        eng = ctx.engine(need_logits=True, kv_type="f16", n_ctx=n, n_batch=n,
                         n_ubatch=min(n, 512))
        tokens = eng.tokenize(read_text(bundled_text()), add_bos=True)[:n]
        if len(tokens) < n:
            raise Skip(f"the bundled text is shorter than {n} tokens")
        targets = np.asarray(tokens[n * 3 // 4 + 1:])
        return tokens, targets, reference_rows(_kv_rows(ctx, "f16", n, tokens), targets)

    def measure() -> dict:
        # the f16 baseline once per doctor run: the fix's q8_0 is compared against it too
        if ("kv_f16", n) not in ctx.memo:
            ctx.memo[("kv_f16", n)] = baseline()
        tokens, targets, ref = ctx.memo[("kv_f16", n)]
        try:
            rows = _kv_rows(ctx, kv, n, tokens)
        except EdgepickError as exc:  # e.g. a quantized V cache without flash attention
            ctx.close_engines()
            return {"refused": str(exc)}
        acc = Accumulator()
        acc.add(compare_rows(*ref, rows, targets), ref[1])
        s = acc.summary()
        ctx.close_engines()  # two full-logit contexts: free them before the next check
        return {"kld_mean": s["kld_mean"], "same_top1": s["same_top1"], "kld_p99": s["kld_p99"]}

    return ctx.measured("kv_cache_type", [kv, n], measure)


def kv_cache_type(ctx):
    s = ctx.target.settings
    if s.kv_type in ("f16", "f32", "bf16"):
        return None
    n = min(s.n_ctx, ctx.target.context_p99 or s.n_ctx, KV_MAX_CTX)
    m = _kv_compare(ctx, s.kv_type, n)
    if m.get("refused"):
        return finding(ctx, "kv_cache_type",
                       f"the engine cannot run a {s.kv_type} KV cache with these settings "
                       f"(flash_attn {s.flash_attn}), while f16 loads: {m['refused']}",
                       Fix(text="an f16 KV cache, or flash attention on (llama.cpp needs it for "
                                "a quantized V cache)", deploy_edit={"runtime.kv_type": "f16"}),
                       0.9, [Evidence(what=f"load with a {s.kv_type} KV cache",
                                      value=m["refused"], baseline="f16 loads",
                                      command=ctx.doctor_cmd("garbled"))], detail=s.kv_type)
    if m["kld_mean"] <= KV_KLD_BAD and m["same_top1"] >= KV_TOP1_BAD:
        return None
    fix = Fix(text="an f16 KV cache",
              deploy_edit={"runtime.kv_type": "f16"})
    if s.kv_type != "q8_0":
        q8 = _kv_compare(ctx, "q8_0", n)
        if not q8.get("refused") and q8["kld_mean"] <= KV_KLD_BAD \
                and q8["same_top1"] >= KV_TOP1_BAD:
            fix = Fix(text="a q8_0 KV cache: half the memory of f16, and within the limit",
                      deploy_edit={"runtime.kv_type": "q8_0"},
                      verified=f"KLD {q8['kld_mean']:.4f} nats, top-1 {q8['same_top1']:.1%}")
    return finding(ctx, "kv_cache_type",
                   f"a {s.kv_type} KV cache moves the next-token distribution "
                   f"{m['kld_mean']:.3f} nats from f16 at {n} tokens of context "
                   f"(top-1 agreement {m['same_top1']:.1%})", fix,
                   0.95 if m["kld_mean"] > 2 * KV_KLD_BAD else 0.75,
                   [Evidence(what=f"KLD {s.kv_type} KV vs f16 KV, last quarter of {n} tokens",
                             value=round(m["kld_mean"], 4), limit=KV_KLD_BAD, unit="nats",
                             command=ctx.doctor_cmd("garbled")),
                    Evidence(what="top-1 agreement with f16 KV", value=round(m["same_top1"], 3),
                             limit=KV_TOP1_BAD, unit="share")], detail=s.kv_type)


# -- conversion -----------------------------------------------------------------------------
def _renders(path: str) -> bool:
    template = _template_and_vocab(path)[0]
    return bool(template) and _render_error(template) is None


def conversion(ctx):
    ref = _reference(ctx)
    if _shape(ref.path)[2] != _shape(ctx.target.model_path)[2]:
        raise Skip("the reference has another vocabulary: another model, not another build")

    def measure() -> dict:
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
            for p in ctx.prompts[:3]:
                fh.write(json.dumps({"id": p.id, "task": "generation", "messages": p.messages},
                                    ensure_ascii=False) + "\n")
        try:
            res = consistency(ref, ModelRef.file(ctx.target.model_path), fh.name,
                              max_tokens=16, threads=ctx.threads)
        finally:
            Path(fh.name).unlink(missing_ok=True)
        return {"n": res.n, "identical": res.n_identical,
                "prompt_differs": [it.id for it in res.items if not it.same_prompt_text],
                "tokens_differ": [it.id for it in res.items if it.token_divergence is not None],
                "first_divergence": res.mean_first_divergence}

    m = ctx.measured("conversion", [ref.path, [p.messages for p in ctx.prompts[:3]]], measure)
    if m["prompt_differs"] and not _renders(ctx.target.model_path):
        m["prompt_differs"] = []  # no usable template of its own: the chat_template check's
    if not m["prompt_differs"] and not m["tokens_differ"]:
        return None
    what = "the chat template renders different prompt text" if m["prompt_differs"] else \
        "the same text is tokenized into different token IDs"
    fix = Fix(text="convert again keeping the reference's tokenizer and chat template "
                   "(tokenizer.* keys of its GGUF), then re-run the consistency test (seed 000 "
                   "§5.4)")
    if m["prompt_differs"]:
        fixed = _with_template(ctx, _template_and_vocab(ref.path)[0])
        fix = Fix(text=f"take the reference's chat template (doctor wrote {fixed}, this build "
                       "with it)", deploy_edit={"model.path": fixed,
                                                "model.sha256": file_sha256(fixed)})
    return finding(ctx, "conversion",
                   f"between the reference and this build {what} "
                   f"({len(m['prompt_differs'] or m['tokens_differ'])} of {m['n']} prompts)",
                   fix, 0.9, [Evidence(what="identical greedy answers", value=m["identical"],
                                  baseline=m["n"],
                                  command=shlex.join(["edgepick", "consistency", "-m",
                                                      ctx.target.model_path, "-r", ref.path,
                                                      "-d", "PROMPTS.jsonl"])),
                         Evidence(what="mean first diverging token",
                                  value=m["first_divergence"])],
                   detail="chat template" if m["prompt_differs"] else "tokenizer")
