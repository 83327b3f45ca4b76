"""Text normalisation and tokenisation shared by the scorers (rules in docs/evaluate.md).

Chinese has no spaces, so CJK characters are tokens of their own; runs of other letters and
digits form word tokens. This makes token F1 and ROUGE-L character-level for Chinese and
word-level for English, including in mixed text.
"""

from __future__ import annotations

import re
import unicodedata

_CJK = (r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
        r"\U00020000-\U0002fa1f")
TOKEN_PATTERN = rf"[{_CJK}]|[^\W{_CJK}_]+(?:['’][^\W{_CJK}_]+)*"
_TOKEN = re.compile(TOKEN_PATTERN, re.UNICODE)
_CJK_CHAR = re.compile(rf"[{_CJK}]")
_ARTICLES = {"a", "an", "the"}


def nfkc(text: str) -> str:
    """Full-width letters, digits and punctuation become their ASCII forms."""
    return unicodedata.normalize("NFKC", text)


def is_punct(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "PS"


def normalize(text: str) -> str:
    """NFKC, case-folded, punctuation and symbols replaced by spaces, whitespace collapsed."""
    text = nfkc(text).casefold()
    text = "".join(" " if is_punct(c) else c for c in text)
    return " ".join(text.split())


def tokens(text: str, drop_articles: bool = False) -> list[str]:
    toks = _TOKEN.findall(nfkc(text).casefold())
    if drop_articles:
        toks = [t for t in toks if t not in _ARTICLES]
    return toks


def has_cjk(text: str) -> bool:
    return bool(_CJK_CHAR.search(text))


def strip_fences(text: str) -> str:
    """The body of the first ``` fenced block, else the text itself."""
    m = re.search(r"```[\w+-]*[ \t]*\n?(.*?)```", text, re.S)
    if m:
        return m.group(1)
    # An unclosed fence (output cut by the budget) still loses its opening line.
    m = re.match(r"\s*```[\w+-]*[ \t]*\n(.*)", text, re.S)
    return m.group(1) if m else text
