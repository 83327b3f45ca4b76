"""Checks on the file itself, before anything runs: the GGUF header and tensor data against the
file's size and deploy.yaml's sha256 (file_integrity), the architecture against the engine's set
(engine_support), and the chat template it carries (chat_template; seed 001 §5.4 load failure,
seed 004 §6.1 "check memory first, then the format", seed 000 §5.4)."""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from pathlib import Path

import numpy as np

from edgepick.assets import bundled
from edgepick.backends.registry import unsupported
from edgepick.doctor.checks import Skip, finding
from edgepick.doctor.finding import Evidence, Fix
from edgepick.doctor.workdir import work_dir
from edgepick.errors import EdgepickError
from edgepick.evaluate.unacceptable import repetition_loop
from edgepick.models.gguf_fast_reader import fast_reader
from edgepick.models.gguf_info import read_gguf
from edgepick.models.gguf_rewrite import rewrite_gguf
from edgepick.models.spec import spec_of
from edgepick.store.identity import file_sha256

_FLOAT_SAMPLE = 1 << 20  # elements of each F32/F16 tensor read for NaN/Inf


def _inspect(path: str) -> str:
    return shlex.join(["edgepick", "inspect", path])


def file_integrity(ctx):
    """Header and tensor table against the file size, NaN/Inf in float tensors, sha256 against
    deploy.yaml."""
    path = ctx.target.model_path
    size = os.path.getsize(path) if os.path.isfile(path) else 0
    restore = (f"restore {path} from its source (copy or download it again) and compare "
               f"`sha256sum {shlex.quote(path)}` with "
               + (f"deploy.yaml's model.sha256 {ctx.target.sha256}" if ctx.target.sha256
                  else "the source's checksum"))
    try:
        reader = read_gguf(path)
    except EdgepickError as exc:
        ev = [Evidence(what="header check", value=str(exc), command=_inspect(path)),
              Evidence(what="file size", value=size, unit="bytes")]
        if ctx.target.sha256:
            ev.append(Evidence(what="sha256", value=file_sha256(path) if size else None,
                               baseline=ctx.target.sha256))
        return finding(ctx, "file_integrity", f"the file does not read as a GGUF: {exc}",
                       Fix(text=restore), 1.0, ev, detail="header")
    bad = []
    for t in reader.tensors:
        if t.tensor_type.name not in ("F32", "F16", "BF16") or t.tensor_type.name == "BF16":
            continue
        sample = np.asarray(t.data).reshape(-1)[:_FLOAT_SAMPLE]
        if not np.all(np.isfinite(sample.astype(np.float32))):
            bad.append(t.name)
    if bad:
        return finding(ctx, "file_integrity",
                       f"{len(bad)} float tensor(s) hold NaN or Inf: {', '.join(bad[:3])}",
                       Fix(text=restore), 1.0,
                       [Evidence(what="tensors with NaN/Inf", value=bad[:10],
                                 command=_inspect(path))], detail=bad[0])
    if ctx.target.sha256:
        actual = file_sha256(path)
        if actual != ctx.target.sha256:
            return finding(ctx, "file_integrity",
                           "the file's sha256 is not the one deploy.yaml names (serve refuses it)",
                           Fix(text=restore + "; if this file is the one meant to be served, "
                                              "write its sha256 into deploy.yaml",
                               deploy_edit={"model.sha256": actual}),
                           1.0, [Evidence(what="sha256", value=actual,
                                          baseline=ctx.target.sha256,
                                          command=f"sha256sum {shlex.quote(path)}")],
                           detail="sha256")
    return None


def engine_support(ctx):
    spec = spec_of(ctx.target.model_path)
    why = unsupported(ctx.target.backend, spec)
    if not why:
        return None
    return finding(ctx, "engine_support", why,
                   Fix(text=f"run {spec.architecture} on an engine that supports it, or choose a "
                            "model of a supported architecture (edgepick fit lists what fits)"),
                   1.0, [Evidence(what="architecture", value=spec.architecture,
                                  command=_inspect(ctx.target.model_path))],
                   detail=spec.architecture)


# -- chat template ----------------------------------------------------------------------------
# Turn markers of the common chat formats (ChatML, Gemma, Llama 3, Mistral, Phi, Zephyr).
CHAT_MARKERS = {"<|im_start|>", "<start_of_turn>", "<|start_header_id|>", "[INST]", "<|user|>",
                "<|assistant|>"}
_INSTRUCT = re.compile(r"instruct|chat|(^|[-_ ])it($|[-_ ])", re.I)
_PROBE_CHAT = [{"role": "system", "content": "You are helpful."},
               {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."},
               {"role": "user", "content": "Bye"}]


def _template_and_vocab(path: str) -> tuple[str | None, str, list[str]]:
    r = fast_reader(path)
    f = r.fields.get("tokenizer.chat_template")
    template = f.contents() if f is not None else None
    tokens = r.fields["tokenizer.ggml.tokens"].contents()
    fp = hashlib.sha256("\0".join(tokens).encode("utf-8", "surrogatepass")).hexdigest()
    return template, fp, tokens


def _render_error(template: str) -> str | None:
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    try:
        Jinja2ChatFormatter(template=template, eos_token="</s>", bos_token="<s>")(
            messages=_PROBE_CHAT)
    except Exception as exc:  # noqa: BLE001 - any template error is the finding
        return f"{type(exc).__name__}: {exc}"
    return None


def _template_source(ctx, fingerprint: str) -> tuple[str, str] | None:
    """(template, where) from a model with the same vocabulary: --reference, else a bundled
    model; the model's own family's template is what it was tuned on."""
    paths = []
    if ctx.reference is not None and ctx.reference.path:
        paths.append(ctx.reference.path)

    for getter in (bundled.smollm2_q4_1, bundled.gemma3_270m_q4_k_m):
        try:
            paths.append(str(getter()))
        except EdgepickError:
            continue
    for p in paths:
        if os.path.realpath(p) == os.path.realpath(ctx.target.model_path):
            continue
        try:
            template, fp, _ = _template_and_vocab(p)
        except (EdgepickError, KeyError, ValueError, OSError):
            continue
        if template and fp == fingerprint and not _render_error(template):
            return template, p
    return None


def _answers(ctx, path: str | None) -> dict:
    eng = ctx.engine(path)
    stops = loops = 0
    for p in ctx.prompts[:2]:
        g = eng.generate(p.messages, 32, chat=True)
        stops += g.finish_reason == "stop"
        loops += repetition_loop(g.text)
    return {"n": min(2, len(ctx.prompts)), "ended": stops, "loops": loops}


def _with_template(ctx, template: str) -> str:
    """The target's file with `template` written in, beside doctor's other files."""
    import gguf

    src = Path(ctx.target.model_path)
    tag = hashlib.sha256((file_sha256(str(src)) + template).encode()).hexdigest()[:10]
    dst = work_dir() / f"{src.stem}.{tag}.with-template.gguf"
    if not dst.exists():
        rewrite_gguf(src, dst, kv_overrides={
            "tokenizer.chat_template": (template, gguf.GGUFValueType.STRING)})
    return str(dst)


def chat_template(ctx):
    """A template that does not render, or none in a model whose vocabulary's family ships one:
    answers with the family's template against the engine's plain-transcript fallback."""
    template, fp, _ = _template_and_vocab(ctx.target.model_path)
    if template:
        err = _render_error(template)
        if err is None:
            return None
        source = _template_source(ctx, fp)
        fix = Fix(text="replace the template with one that renders"
                       + (f" (the one in {source[1]})" if source else ""))
        if source:
            fixed = _with_template(ctx, source[0])
            fix.deploy_edit = {"model.path": fixed, "model.sha256": file_sha256(fixed)}
            fix.text += f"; doctor wrote {fixed} with it"
        return finding(ctx, "chat_template", f"the GGUF's chat template does not render: {err}",
                       fix, 1.0, [Evidence(what="template render", value=err,
                                           command=ctx.doctor_cmd())], detail="malformed")
    source = _template_source(ctx, fp)
    if source is None:
        return _unsourced(ctx)
    fixed = _with_template(ctx, source[0])
    figs = ctx.measured("chat_template", [fp, len(ctx.prompts)], lambda: {
        "without": _answers(ctx, None), "with": _answers(ctx, fixed)})
    w, wo = figs["with"], figs["without"]
    better = (w["ended"] - w["loops"]) - (wo["ended"] - wo["loops"])
    return finding(
        ctx, "chat_template",
        "the GGUF carries no chat template although its vocabulary's family ships one: "
        "the engine falls back to a plain transcript",
        Fix(text=f"put the family's template back (doctor wrote {fixed} with the template of "
                 f"{source[1]}); or run `gguf-new-metadata MODEL OUT --chat-template-file "
                 "TEMPLATE.jinja` yourself",
            deploy_edit={"model.path": fixed, "model.sha256": file_sha256(fixed)},
            verified=f"with the template {w['ended']}/{w['n']} answers ended, {w['loops']} looped"),
        0.95 if better > 0 else 0.85,
        [Evidence(what="answers ended by the model (without → with template)",
                  value=wo["ended"], baseline=w["ended"], unit=f"of {wo['n']}",
                  command=ctx.doctor_cmd("garbled")),
         Evidence(what="repetition loops (without → with template)", value=wo["loops"],
                  baseline=w["loops"], unit=f"of {wo['n']}")],
        detail="missing")


def _unsourced(ctx):
    """No template and none to copy: an instruct model (by its name) whose vocabulary holds
    chat turn markers is still missing one; a base model's format is the plain transcript."""
    r = fast_reader(ctx.target.model_path)
    name = r.fields.get("general.name")
    name = str(name.contents()) if name is not None else Path(ctx.target.model_path).stem
    markers = sorted(CHAT_MARKERS & set(r.fields["tokenizer.ggml.tokens"].contents()))
    if not markers or not _INSTRUCT.search(name):
        raise Skip("no chat template in the GGUF, and nothing says it needs one (a base model: "
                   "the plain transcript is its format)")
    return finding(ctx, "chat_template",
                   f"{name} is an instruct model whose vocabulary has the turn markers "
                   f"{', '.join(markers)}, but the GGUF carries no chat template: the engine "
                   "falls back to a plain transcript",
                   Fix(text="write the model's template back from its tokenizer_config.json",
                       command=f"gguf-new-metadata {shlex.quote(ctx.target.model_path)} "
                               "OUT.gguf --chat-template-config tokenizer_config.json"),
                   0.7, [Evidence(what="tokenizer.chat_template", value=None,
                                  baseline="present", command=_inspect(ctx.target.model_path)),
                         Evidence(what="chat turn markers in the vocabulary", value=markers)],
                   detail="missing")
