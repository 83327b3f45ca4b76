"""README.md's quick starts, as a newcomer runs them: the commands of "Quick start, by goal" are
read from the README itself. The first runs as written in a temporary folder with the bundled
models; the others need a cloud key or minutes (a whole `edgepick run`), so what they would
chat with is checked instead: every model a quick start evaluates or serves for chat carries a
chat template (the bundled Gemma-3-270M is a base model without one, and answered "What is 2+2?"
with "<|im_end|>\\n<" when served for chat), and the bundled chat model, served as serve serves
it, answers "What is 2+2?" with a 4 and no turn marker."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from openai import OpenAI

from serve_harness import serve

from edgepick.inputs import BUNDLED
from edgepick.models.gguf_fast_reader import fast_reader

README = Path(__file__).resolve().parents[2] / "README.md"
MARKERS = ("<|im_end|>", "<|im_start|>", "<start_of_turn>", "<end_of_turn>")


def _quick_starts() -> list[list[list[str]]]:
    """Each quick start's bash block, as its commands' argument lists (comments dropped)."""
    text = README.read_text(encoding="utf-8")
    quick = text[text.index("## Quick start, by goal"):text.index("## Docs, by goal")]
    out = []
    for block in re.findall(r"```bash\n(.*?)```", quick, re.S):
        cmds = []
        for line in block.splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0] == "edgepick":
                cmds.append(words)
        out.append(cmds)
    return out


def test_the_readme_has_three_quick_starts_of_edgepick_commands():
    starts = _quick_starts()
    assert len(starts) == 3 and all(starts)


def _local(words: list[str]) -> bool:
    """A command that needs neither a hub nor a server started in the background (those reach
    the network: their own tests serve a stand-in, tests/models)."""
    return "&" not in words and not any(w.startswith(("hf:", "http://", "https://"))
                                        for w in words)


def test_quick_start_1_runs_as_written(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    outputs = []
    for words in filter(_local, _quick_starts()[0]):
        r = cli(*words[1:])
        assert r.returncode == 0, (words, r.stderr)
        outputs.append(r.stdout)
    assert "raspberry-pi-5" in outputs[0]
    fit = next(out for out in outputs if "verdict" in out)
    assert "gemma3-270m" in fit and "smollm2" in fit and "fits" in fit


def _models(words: list[str]) -> list[str]:
    return [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-m", "--model")]


def test_every_model_a_quick_start_chats_with_has_a_chat_template():
    chatting = [w for start in _quick_starts() for w in start if w[1] in ("eval", "serve")]
    assert chatting
    for words in chatting:
        for name in _models(words):
            path = str(BUNDLED[name]()) if name in BUNDLED else name
            assert "tokenizer.chat_template" in fast_reader(path).fields, \
                f"{shlex.join(words)}: {name} has no chat template; served for chat it garbles"


def test_the_bundled_chat_model_served_answers_2_plus_2(tmp_path):
    with serve(["-m", "smollm2", "--ctx", "512", "--slots", "1"], tmp_path) as s:
        client = OpenAI(base_url=s.url + "/v1", api_key="none", timeout=60)
        answer = client.chat.completions.create(
            model="smollm2", max_tokens=24, temperature=0,
            messages=[{"role": "user", "content": "What is 2+2?"}]).choices[0].message.content
    assert "4" in answer and not any(m in answer for m in MARKERS), answer
