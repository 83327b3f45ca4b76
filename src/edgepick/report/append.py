"""Add a section to a written report: Markdown appended, HTML inserted before </body>. Sections
whose material lives in the store rather than in the summaries (route evaluation, sequential
evaluation) are added this way after the main report is written."""

from __future__ import annotations

from pathlib import Path
from typing import Callable


def append_section(out: str | Path, langs: list[str], markdown: Callable[[str], str],
                   html: Callable[[str], str]) -> list[Path]:
    """`markdown(lang)` / `html(lang)` give the section; the report files touched."""
    out = Path(out)
    touched = []
    for lg in langs:
        md, page = out / f"report.{lg}.md", out / f"report.{lg}.html"
        if md.exists():
            md.write_text(md.read_text(encoding="utf-8").rstrip("\n") + "\n\n" + markdown(lg),
                          encoding="utf-8")
            touched.append(md)
        if page.exists():
            text = page.read_text(encoding="utf-8")
            section = html(lg)
            text = text.replace("</body>", section + "</body>", 1) if "</body>" in text \
                else text + section
            page.write_text(text, encoding="utf-8")
            touched.append(page)
    return touched
