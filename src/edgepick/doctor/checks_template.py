"""The chat template check: which prompt format serve (llama-server) will use for this file, the
file's own template or llama.cpp's ChatML fallback (doctor/served_template.py), against the
formats the model was trained on (its vocabulary's turn markers, its family's template); a file
with no template that is served for chat is a finding with a measured fix: its family's
template, Gemma's turn format, or the plain transcript a base model continues
(seed 001 §5.2 step 2: the input is not what the model was trained on)."""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from pathlib import Path

import gguf

from edgepick.assets import bundled
from edgepick.doctor import served_template as st
from edgepick.doctor.checks import finding
from edgepick.doctor.checks_stop import stop_token
from edgepick.doctor.finding import Evidence, Fix
from edgepick.doctor.workdir import rewritten
from edgepick.errors import EdgepickError
from edgepick.models.gguf_fast_reader import fast_reader
from edgepick.store.identity import file_sha256


def _inspect(path: str) -> str:
    return shlex.join(["edgepick", "inspect", "-m", path])


# -- chat template ----------------------------------------------------------------------------
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


def _with_template(ctx, template: str) -> str:
    """The target's file with `template` written in, beside doctor's other files."""
    return rewritten(ctx.target.model_path, {
        "tokenizer.chat_template": (template, gguf.GGUFValueType.STRING)}, "with-template")


def chat_template(ctx):
    """A template that does not render; one of another family, whose turn markers are not
    tokens of this vocabulary (foreign_template); an end-of-generation token that is ordinary
    text (checks_stop); or none at all, which serve answers in llama-server's ChatML fallback
    (missing_template)."""
    template, fp, tokens = _template_and_vocab(ctx.target.model_path)
    if template:
        err = _render_error(template)
        if err is None:
            return foreign_template(ctx, template, fp) or stop_token(ctx, template, tokens)
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
    return missing_template(ctx, fp)


def _name(path: str) -> str:
    f = fast_reader(path).fields.get("general.name")
    return str(f.contents()) if f is not None else Path(path).stem


def missing_template(ctx, fp: str):
    """No template in the file: serve falls back to ChatML. Measured: the answers as serve
    would produce them against the same prompts in each format the model may know; the best
    is the fix, and the finding's confidence follows what the measurement showed."""
    path = ctx.target.model_path
    _, _, tokens = _template_and_vocab(path)
    trained = st.trained_formats(set(tokens))
    name = _name(path)
    source = _template_source(ctx, fp)
    # a family that ships a template was tuned for chat, whatever this copy's name says
    instruct = bool(_INSTRUCT.search(name) or _INSTRUCT.search(Path(path).stem) or source)
    options: list[tuple[str, str]] = []
    if source:
        options.append((f"its family's template (from {source[1]})", source[0]))
    elif "gemma" in trained:
        options.append(("Gemma's turn format (llama-server --chat-template gemma)", st.GEMMA))
    if not instruct or not options:
        options.append(("a plain transcript (a base model continues text: /v1/completions)",
                        st.PLAIN))
    eng = ctx.engine(None)
    figs = ctx.measured("chat_template_served", [fp, len(ctx.prompts), st.PROBES], lambda: {
        "served": st.answers(eng, ctx.prompts, st.CHATML),
        **{label: st.answers(eng, ctx.prompts, t) for label, t in options}})
    served = figs["served"]
    best_label, best_t = max(options, key=lambda o: figs[o[0]]["sound"])
    best = figs[best_label]
    n = served["n"]
    native = "chatml" in trained
    what = (f"{name} ({'instruct' if instruct else 'a base model'}) has no chat template: "
            "serve's llama-server falls back to ChatML (llama.cpp common/chat.cpp)"
            + (", this vocabulary's own turn format" if native else
               ", whose <|im_start|> markers are not tokens of this vocabulary: the model never "
               "saw that format"))
    gain = best["sound"] - served["sound"]
    if gain > 0:
        summary = (f"{what}; sound answers {served['sound']}/{n} as served, "
                   f"{best['sound']}/{n} with {best_label}")
        confidence = 0.95 if served["leaks"] or served["sound"] * 2 <= n else 0.85
    else:  # the measured fix did not help: say what was seen, not a cause at full confidence
        summary = (f"{what}; but the answers were no sounder with {best_label} "
                   f"({best['sound']}/{n} against {served['sound']}/{n} as served): the "
                   "format is not what this symptom comes from here")
        confidence = 0.6 if not native else 0.4
    fixed = _with_template(ctx, best_t)
    plain = best_t is st.PLAIN
    fix = Fix(text=(f"serve it with {best_label}: doctor wrote {fixed} with that template"
                    + ("; or call /v1/completions with your own text instead of chat" if plain
                       else "; or start llama-server with --chat-template-file")),
              deploy_edit={"model.path": fixed, "model.sha256": file_sha256(fixed)},
              verified=(f"with {best_label}: {best['sound']}/{n} sound answers, "
                        f"{best['leaks']} spilled a turn marker, {best['loops']} looped"))
    return finding(ctx, "chat_template", summary, fix, confidence, [
        Evidence(what="prompt format serve uses", value="ChatML (no tokenizer.chat_template)",
                 baseline=best_label.split(" (")[0], command=_inspect(path)),
        Evidence(what="sound answers (as served → with the fix)", value=served["sound"],
                 baseline=best["sound"], unit=f"of {n}", command=ctx.doctor_cmd("garbled")),
        Evidence(what="answers spilling a turn marker", value=served["leaks"],
                 baseline=best["leaks"], unit=f"of {n}"),
        Evidence(what="first answer as served", value=served["first"])],
        detail="missing")


def foreign_template(ctx, template: str, fp: str):
    """A template that renders but writes turn markers this vocabulary spells in pieces (Gemma's
    `<start_of_turn>` in a SmolLM2 file): the model never saw those turns. Measured like a
    missing one: the answers in the file's template against the same prompts in the formats
    the vocabulary does hold (its family's template, else ChatML or Gemma's turns)."""
    path = ctx.target.model_path
    _, _, tokens = _template_and_vocab(path)
    vocab = set(tokens)
    fmt = st.format_of(template)
    pieces = [m for m in st.SPECIAL_MARKERS if m in template and m not in vocab]
    if not pieces:
        return None
    source = _template_source(ctx, fp)
    options = [(f"its family's template (from {source[1]})", source[0])] if source else []
    options += [(f"{name} turns, this vocabulary's", st.CHATML if name == "chatml" else st.GEMMA)
                for name in st.trained_formats(vocab) if name != fmt and not source]
    if not options:
        return None  # nothing it was trained on to compare with: a base model's own business
    eng = ctx.engine(None)
    key = hashlib.sha256(template.encode()).hexdigest()[:16]
    figs = ctx.measured("chat_template_foreign", [fp, key, len(ctx.prompts), st.PROBES],
                        lambda: {"served": st.answers(eng, ctx.prompts, template),
                                 **{label: st.answers(eng, ctx.prompts, t)
                                    for label, t in options}})
    served = figs["served"]
    best_label, best_t = max(options, key=lambda o: figs[o[0]]["sound"])
    best, n = figs[best_label], served["n"]
    what = (f"the GGUF's chat template writes turn markers ({', '.join(pieces)}) that are not "
            "tokens of this vocabulary: the model never saw those turns")
    if best["sound"] > served["sound"]:
        summary = (f"{what}; sound answers {served['sound']}/{n} with it, "
                   f"{best['sound']}/{n} with {best_label}")
        confidence = 0.95 if served["leaks"] or served["sound"] * 2 <= n else 0.85
    else:  # the measured fix did not help: say what was seen, not a cause at full confidence
        summary = (f"{what}; but the answers were no sounder with {best_label} "
                   f"({best['sound']}/{n} against {served['sound']}/{n})")
        confidence = 0.5
    fixed = _with_template(ctx, best_t)
    fix = Fix(text=f"serve it with {best_label}: doctor wrote {fixed} with that template; or "
                   "start llama-server with --chat-template-file",
              deploy_edit={"model.path": fixed, "model.sha256": file_sha256(fixed)},
              verified=(f"with {best_label}: {best['sound']}/{n} sound answers, "
                        f"{best['leaks']} spilled a turn marker, {best['loops']} looped"))
    return finding(ctx, "chat_template", summary, fix, confidence, [
        Evidence(what="turn markers not in the vocabulary", value=", ".join(pieces),
                 command=_inspect(path)),
        Evidence(what="sound answers (the file's template → with the fix)",
                 value=served["sound"], baseline=best["sound"], unit=f"of {n}",
                 command=ctx.doctor_cmd("garbled")),
        Evidence(what="answers spilling a turn marker", value=served["leaks"],
                 baseline=best["leaks"], unit=f"of {n}"),
        Evidence(what="first answer with the file's template", value=served["first"])],
        detail="foreign")
