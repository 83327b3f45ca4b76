"""The report's pruning section: every pruned build (which blocks went, chosen by which ranking
on what text) and the quantized builds beside it on one size-against-KLD front, with the decide
stage's sentence on whether pruning bought anything quantization did not. Rendered from the
`PruneFront` the decide stage made (decide/prune_front.py); nothing is decided here."""

from __future__ import annotations

from html import escape
from pathlib import Path

from edgepick.markup import html_table, md_table
from edgepick.records.prune import FrontPoint, PruneFront
from edgepick.report.append import append_section
from edgepick.strings import texts


def _removed(p: FrontPoint, t: dict) -> str:
    if p.pruned is None:
        return t["none_removed"]
    return t["removed_of"].format(blocks=", ".join(map(str, p.pruned.removed)),
                                  n=p.pruned.blocks_before)


def _ranking(p: FrontPoint, t: dict) -> str:
    if p.pruned is None:
        return "-"
    if p.pruned.ranking == "given":
        return t["given"]
    out = t["ranked"].format(signal=t.get("signal_" + p.pruned.ranking, p.pruned.ranking),
                             data=p.pruned.ranked_on or "-")
    if p.pruned.spearman is not None:
        out += f" (Spearman {p.pruned.spearman:+.2f})"
    return out


def table(front: PruneFront, lang: str):
    t = texts("prune_report", lang)
    head = [t["candidate"], t["removed"], t["ranking"], t["size"], t["kld"], t["front"]]
    rows = []
    for p in front.points:
        size = "-" if p.size_bytes is None else f"{p.size_bytes / 2**20:.1f}"
        kld = t["not_measured"] if p.kld_mean is None else f"{p.kld_mean:.4f}"
        where = t["on_front"] if p.on_front else \
            t["dominated_by"].format(name=p.dominated_by) if p.dominated_by else "-"
        rows.append([p.candidate, _removed(p, t), _ranking(p, t), size, kld, where])
    return head, rows


def render_markdown(front: PruneFront, lang: str) -> str:
    t = texts("prune_report", lang)
    return "\n".join([f"## {t['title']}", "", t["lead"], "", md_table(*table(front, lang)), "",
                      f"**{front.words.get(lang, front.words.get('en', ''))}**", ""])


def render_html(front: PruneFront, lang: str) -> str:
    t = texts("prune_report", lang)
    words = front.words.get(lang, front.words.get("en", ""))
    return (f"<h2>{escape(t['title'])}</h2><p>{escape(t['lead'])}</p>"
            + html_table(*table(front, lang)) + f"<p><strong>{escape(words)}</strong></p>")


def append_to_report(out: str | Path, front: PruneFront | None, langs: list[str]) -> list[Path]:
    """The section in the report's files, and its figures in data/prune_front.json; [] when
    no candidate is pruned."""
    if front is None:
        return []
    data = Path(out) / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "prune_front.json").write_text(front.model_dump_json(indent=2), encoding="utf-8")
    return append_section(out, langs, lambda lg: render_markdown(front, lg),
                          lambda lg: render_html(front, lg))
