"""The one table writer: a `|` or a newline in a cell cannot break a Markdown row; HTML escapes."""

from edgepick.markup import html_table, md_table


def test_markdown_cells_keep_their_pipes_and_rows():
    text = md_table(["model", "why"], [["a|b", "two\nlines"]])
    assert text.splitlines() == ["| model | why |", "|---|---|", "| a\\|b | two lines |"]


def test_html_cells_are_escaped_and_rows_keep_their_class():
    html = html_table(["<h>"], [["a & b"], ["c"]], row_classes=["win", ""])
    assert "<th>&lt;h&gt;</th>" in html and '<tr class="win"><td>a &amp; b</td></tr>' in html
    assert "<tr><td>c</td></tr>" in html
