"""The one table writer of the reports, in Markdown and in HTML.

Every cell is escaped for its format: in Markdown a `|` would end the cell and a newline the
row, so they become `\\|` and a space; in HTML the cell text is escaped. The decision report,
the route report and the fleet report all write their tables here.
"""

from __future__ import annotations

from html import escape


def _md_cell(cell: object) -> str:
    return str(cell).replace("|", "\\|").replace("\n", " ")


def md_table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(_md_cell(h) for h in header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def html_table(header: list[str], rows: list[list], row_classes: list[str] | None = None) -> str:
    head = "".join(f"<th>{escape(str(c))}</th>" for c in header)
    body = []
    for i, r in enumerate(rows):
        cls = f' class="{row_classes[i]}"' if row_classes and row_classes[i] else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{escape(str(c))}</td>" for c in r) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
