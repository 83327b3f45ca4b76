"""Which prompt format serve will use for a file, and how the model answers in it.

serve runs llama.cpp's llama-server, which takes the GGUF's `tokenizer.chat_template` and,
when there is none, falls back to ChatML (common/chat.cpp, `common_chat_templates_init`: an
empty template becomes `CHATML_TEMPLATE_SRC`, unless the file has a `tool_use` template). A
model whose vocabulary has no `<|im_start|>` token was never trained on that format: the markers
reach it as plain text and it answers with them (Gemma-3-270M answered "What is 2+2?" with
"<|im_end|>\\n<"). The answers are measured as serve would produce them: each prompt rendered by
the template in question and sent as raw text, so the in-process engine's own fallback (a plain
transcript) does not stand in for llama-server's.
"""

from __future__ import annotations

from edgepick.evaluate.unacceptable import repetition_loop

# llama.cpp common/chat.cpp CHATML_TEMPLATE_SRC, verbatim in effect
CHATML = ("{%- for message in messages -%}\n"
          "  {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}\n"
          "{%- endfor -%}\n"
          "{%- if add_generation_prompt -%}\n"
          "  {{- '<|im_start|>assistant\\n' -}}\n"
          "{%- endif -%}")
# Gemma's turn format (Gemma 3's instruction-tuned template, a system turn folded into the
# first user turn as Gemma's own template does); llama-server knows it as `--chat-template gemma`
GEMMA = ("{{ bos_token }}{% set sys = '' %}{% for m in messages %}"
         "{% if m['role'] == 'system' %}{% set sys = m['content'] + '\\n\\n' %}"
         "{% else %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' else 'user' }}\n"
         "{{ (sys if loop.index0 <= 1 else '') + m['content'] }}<end_of_turn>\n{% endif %}"
         "{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")
# a base model's own format: the text continued (what /v1/completions sends)
PLAIN = ("{% for m in messages %}{% if m['role'] == 'system' %}{{ m['content'] }}\n\n"
         "{% elif m['role'] == 'user' %}Q: {{ m['content'] }}\n"
         "{% else %}A: {{ m['content'] }}\n{% endif %}{% endfor %}"
         "{% if add_generation_prompt %}A:{% endif %}")
# turn markers a template writes, by the format's name; a leaked one in an answer is garble
FORMAT_MARKERS = {"chatml": ("<|im_start|>", "<|im_end|>"),
                  "gemma": ("<start_of_turn>", "<end_of_turn>")}
# markers that are one special token in every vocabulary whose family writes them (ChatML's,
# Gemma's, Llama 3's): a template writing one that this vocabulary spells in pieces is another
# family's. `[INST]` and `<|user|>` are left out: some families write them as plain text.
SPECIAL_MARKERS = ("<|im_start|>", "<|im_end|>", "<start_of_turn>", "<end_of_turn>",
                   "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>")
LEAK_MARKERS = ("<|im_start|>", "<|im_end|>", "<start_of_turn>", "<end_of_turn>",
                "<|start_header_id|>", "<|eot_id|>", "[INST]", "<|user|>", "<|assistant|>")
PROBES = 4  # docs/doctor.md: the four built-in probes


def format_of(template: str) -> str:
    """The turn format a template writes: chatml, gemma, or other."""
    for name, (start, _) in FORMAT_MARKERS.items():
        if start in template:
            return name
    return "other"


def trained_formats(vocab: set[str]) -> list[str]:
    """The turn formats whose markers are single tokens of this vocabulary: the formats the
    model can have been trained on (a marker spelt out in pieces was never a turn to it)."""
    return [name for name, marks in FORMAT_MARKERS.items() if all(m in vocab for m in marks)]


def rendered_answers(engine, prompts, template: str, max_tokens: int = 32) -> list:
    """The first PROBES prompts rendered by `template` and sent as raw text, as serve would:
    each answer's generation (text, finish_reason)."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    llm = engine.llm
    bos = llm._model.token_get_text(llm.token_bos()) if llm.token_bos() >= 0 else ""
    eos = llm._model.token_get_text(llm.token_eos()) if llm.token_eos() >= 0 else ""
    fmt = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)
    out = []
    for p in prompts[:PROBES]:
        text = fmt(messages=p.messages).prompt
        if bos and text.startswith(bos):  # generate adds the model's BOS itself
            text = text[len(bos):]
        out.append(engine.generate(text, max_tokens))
    return out


def answers(engine, prompts, template: str, max_tokens: int = 32) -> dict:
    """How many of the rendered answers the model ended, how many looped, how many spilled a
    turn marker, how many were sound."""
    out = {"n": 0, "ended": 0, "loops": 0, "leaks": 0, "sound": 0, "first": ""}
    for g in rendered_answers(engine, prompts, template, max_tokens):
        text = g.text
        leak = any(m in text for m in LEAK_MARKERS)
        loop = bool(text.strip()) and repetition_loop(text)
        out["n"] += 1
        out["ended"] += g.finish_reason == "stop"
        out["loops"] += loop
        out["leaks"] += leak
        out["sound"] += bool(text.strip()) and not leak and not loop
        out["first"] = out["first"] or text[:40]
    return out
