"""The docs a newcomer reads say what the program does: every relative link resolves (anchors
included), both READMEs name the same commands and pages and index every page, and every
`edgepick …` command written in README*.md or docs/ names a command and flags that exist."""

from __future__ import annotations

import re
import shlex
import unicodedata
from pathlib import Path

import pytest

from edgepick.cli import docgen

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", ROOT / "README.zh-CN.md", *(ROOT / "docs").glob("*.md")])
LINK = re.compile(r"\]\(([^)\s]+)\)")
# pages being rewritten elsewhere as this test was written; their citations are to be linked too
UNLINKED_YET = ("registry.md", "doctor.md")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|\*", "", heading.strip().lower())
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    out: set[str] = set()
    for m in re.finditer(r"(?m)^#{1,6}\s+(.*)$", text):
        base, n = slug(m.group(1)), 1
        while (base if n == 1 else f"{base}-{n - 1}") in out:
            n += 1
        out.add(base if n == 1 else f"{base}-{n - 1}")
    out |= set(re.findall(r'<a (?:id|name)="([^"]+)"', text))
    return out


def _rel(page: Path) -> str:
    return str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else page.name


def broken_links(pages=PAGES) -> list[str]:
    bad = []
    for page in pages:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                bad.append(f"{_rel(page)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                bad.append(f"{_rel(page)}: {target} (no such heading)")
    return bad


def test_every_relative_link_resolves():
    bad = broken_links()
    assert not bad, "\n".join(bad)


def _commands_named(text: str) -> set[str]:
    return set(re.findall(r"edgepick ([a-z][a-z-]+)", text))


def _pages_linked(text: str) -> set[str]:
    return {Path(t.split("#")[0]).name for t in LINK.findall(text) if "docs/" in t}


def test_both_readmes_name_the_same_commands_and_pages_and_index_every_page():
    en = (ROOT / "README.md").read_text(encoding="utf-8")
    zh = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
    assert _commands_named(en) == _commands_named(zh), \
        _commands_named(en) ^ _commands_named(zh)
    assert _pages_linked(en) == _pages_linked(zh), _pages_linked(en) ^ _pages_linked(zh)
    every = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert not every - _pages_linked(en), f"not in the README's index: {every - _pages_linked(en)}"
    for words in ("make setup", "make run", "make test"):
        assert words in en and words in zh, words


def _snippets(text: str) -> list[str]:
    """Commands as written: lines of code blocks and inline code that start with `edgepick `."""
    out = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        block = block.replace("\\\n", " ")
        out += [ln.strip().lstrip("$ ") for ln in block.splitlines()
                if ln.strip().lstrip("$ ").startswith("edgepick ")]
    prose = re.sub(r"```.*?```", "", text, flags=re.S).replace("\n", " ")
    out += [s for s in re.findall(r"`(edgepick [^`]+)`", prose)]
    return out


def unknown(command: str, tree=None) -> list[str]:
    """What in one written command does not exist: the command, or a flag of it."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        words = command.split()
    words = [w for w in words[1:] if w not in ("&", "|")]
    words = words[:next((i for i, w in enumerate(words) if w in ("&&", ";", "|", ">")),
                        len(words))]
    cmd, path = tree or docgen.root_command(), []
    while getattr(cmd, "commands", None) and words and not words[0].startswith("-"):
        name = words.pop(0)
        if name not in cmd.commands:
            if name.isupper() or name.endswith(":") or name in ("…", "...") \
                or not re.match(r"[a-z]", name):
                return []  # a placeholder (`edgepick COMMAND`), not a command
            return [f"'edgepick {' '.join([*path, name])}': no such command"]
        cmd, path = cmd.commands[name], [*path, name]
    if getattr(cmd, "commands", None):
        return []
    visible = [p for p in cmd.params if not getattr(p, "hidden", False)]
    flags = {o: p for p in visible for o in (*p.opts, *p.secondary_opts)}
    positional = any(p.param_type_name == "argument" for p in visible)
    deprecated = any(p.param_type_name == "argument" and p.hidden for p in cmd.params)
    bad, skip = [], False
    for w in (w.strip("[]") for w in words):
        if not w or w in ("OPTIONS", "…", "..."):
            continue
        if skip:
            skip = False
            continue
        flag = w.split("=", 1)[0]
        if re.match(r"--?[a-zA-Z]", flag):
            if flag == "--help":
                continue
            if flag not in flags:
                bad.append(f"'edgepick {' '.join(path)} {flag}': no such flag")
            else:
                skip = "=" not in w and not getattr(flags[flag], "is_flag", False)
        elif deprecated and not positional:
            bad.append(f"'edgepick {' '.join(path)} {w}': a deprecated positional (use -m)")
    return bad


def test_every_documented_command_and_flag_exists():
    problems = []
    tree = docgen.root_command()  # built once: typer builds the whole tree anew at each call
    for page in PAGES:
        for snippet in _snippets(page.read_text(encoding="utf-8")):
            problems += [f"{page.relative_to(ROOT)}: {p}  (in: {snippet[:90]})"
                         for p in unknown(snippet, tree)]
    assert not problems, "\n".join(sorted(set(problems)))


@pytest.mark.parametrize("written, found", [
    ("edgepick fit -m smollm2 --ctx 2048 --device raspberry-pi-5", []),
    ("edgepick fit -m smollm2 --context 2048", ["'edgepick fit --context': no such flag"]),
    ("edgepick models activate a@2 --server http://x", []),
    ("edgepick modles list", ["'edgepick modles': no such command"]),
    ("edgepick inspect smollm2", ["'edgepick inspect smollm2': a deprecated positional (use -m)"]),
    ("edgepick inspect -m smollm2 --json", []),
])
def test_a_renamed_flag_or_command_is_caught(written, found):
    assert unknown(written) == found


def test_a_moved_page_is_caught(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("[a](gone.md) [b](p.md#nowhere) [c](https://example.com)\n# Here\n")
    assert len(broken_links([page])) == 2


def test_every_seed_citation_links_to_its_summary():
    """A reader has no seed documents: a citation outside a heading or code links to sources.md,
    whose anchors the link test checks. No reference points at files a reader does not have."""
    bare, internal = [], []
    for page in [p for p in PAGES if p.name not in ("sources.md", *UNLINKED_YET)]:
        text = page.read_text(encoding="utf-8").split(docgen.MARK)[0]  # not --help's own words
        text = re.sub(r"```.*?```|`[^`\n]*`|(?m:^#[^\n]*$)", "", text, flags=re.S)
        text = re.sub(r"\[[^\]]*§[^\]]*\]\(sources\.md#[^)]+\)", "", " ".join(text.split()))
        bare += [f"{page.name}: {m}" for m in
                 re.findall(r"(?i)seeds? \d{3} §[\d.]+|\(§[\d.]+\)", text)]
        internal += [f"{page.name}: {m}" for m in re.findall(r"\bSPEC\b|\(issue \d+[^)]*\)", text)]
    assert not bare, "\n".join(bare)
    assert not internal, "\n".join(internal)


def test_every_test_file_the_docs_name_exists():
    missing = sorted({f"{page.name}: {path}" for page in PAGES if page.name not in UNLINKED_YET
                      for path in re.findall(r"tests/[\w/]+\.py", page.read_text(encoding="utf-8"))
                      if not (ROOT / path).exists()})
    assert not missing, "\n".join(missing)
