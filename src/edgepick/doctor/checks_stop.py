"""The end-of-generation token: the chat format's end of a turn is what the engine must stop at.

llama.cpp stops a generation at the vocabulary's end-of-generation tokens (llama-vocab.cpp:
`tokenizer.ggml.eos_token_id`, `eot_token_id`, and the end-of-turn markers it recognises by
their text, such as `<|im_end|>`). A file whose EOS names an ordinary piece of text (token type
NORMAL: a word, not a control token) stops each answer the first time the model writes that
piece: "The sun is a celestial body that shines brightly in" where the same weights go on to
"the night sky, ...". Nothing else in the output looks wrong, so the answers are measured: the
file's against a copy whose EOS is the template's end-of-turn marker (seed 001 §5.2 step 1:
post-processing and its special tokens).
"""

from __future__ import annotations

import gguf

from edgepick.doctor import served_template as st
from edgepick.doctor.checks import finding
from edgepick.doctor.finding import Evidence, Fix
from edgepick.doctor.workdir import rewritten
from edgepick.models.gguf_fast_reader import fast_reader
from edgepick.store.identity import file_sha256

NORMAL = int(gguf.TokenType.NORMAL)
TOKENS = 48  # per probe: room for an answer to run past the piece it was cut at


def _end_marker(template: str, tokens: list[str]) -> int | None:
    """The token id of the end-of-turn marker the template writes, when it is one token."""
    ends = [end for _, end in st.FORMAT_MARKERS.values()] + ["<|eot_id|>"]
    for end in ends:
        if end in template and end in tokens:
            return tokens.index(end)
    return None


def _answers(engine, prompts, template: str) -> list[str]:
    return [g.text for g in st.rendered_answers(engine, prompts, template, TOKENS)]


def stop_token(ctx, template: str, tokens: list[str]):
    """A finding when the file's EOS is an ordinary piece of text and answers with the
    template's end-of-turn marker as EOS run past where the file's stopped; None otherwise."""
    path = ctx.target.model_path
    r = fast_reader(path)
    eos_f, types_f = r.fields.get("tokenizer.ggml.eos_token_id"), \
        r.fields.get("tokenizer.ggml.token_type")
    if eos_f is None or types_f is None:
        return None
    eos, types = int(eos_f.contents()), types_f.contents()
    if not 0 <= eos < len(types) or int(types[eos]) != NORMAL:
        return None
    end = _end_marker(template, tokens)
    if end is None or end == eos:
        return None
    fixed = rewritten(path, {"tokenizer.ggml.eos_token_id": (end, gguf.GGUFValueType.UINT32)},
                      "eos")
    ours = _answers(ctx.engine(None), ctx.prompts, template)
    theirs = _answers(ctx.engine(fixed), ctx.prompts, template)
    cut = sum(len(b) > len(a) and b.startswith(a.rstrip()) for a, b in zip(ours, theirs))
    n, piece, marker = len(ours), tokens[eos], tokens[end]
    what = (f"the GGUF's end-of-generation token is {piece!r} (id {eos}), an ordinary piece of "
            f"text, not the template's end of turn {marker!r} (id {end})")
    if cut:
        summary, confidence = f"{what}: {cut} of {n} answers stopped where it was written", 0.95
    else:  # the measured fix changed nothing: say what was seen, not a cause at full confidence
        summary, confidence = f"{what}; no answer here was cut by it", 0.4
    fix = Fix(text=f"serve the copy doctor wrote with EOS = {marker!r}: {fixed}",
              deploy_edit={"model.path": fixed, "model.sha256": file_sha256(fixed)},
              verified=f"with EOS {marker!r}: {cut} of {n} answers ran past the cut")
    return finding(ctx, "chat_template", summary, fix, confidence, [
        Evidence(what="end-of-generation token", value=f"{piece!r} (id {eos})",
                 command=f"edgepick inspect -m {path}"),
        Evidence(what="answers stopped at it (the file's EOS → the marker as EOS)", value=cut,
                 baseline=0, unit=f"of {n}", command=ctx.doctor_cmd("garbled")),
        Evidence(what="first answer as served", value=ours[0][:60] if ours else "")],
        detail="stop_token")
