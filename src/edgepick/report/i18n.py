"""Report strings in English and Chinese (the `report` section of data/strings.yaml). Keys are
stable; charts keep English axis labels because a self-contained SVG cannot rely on a CJK font being
installed on the reader's machine."""

from __future__ import annotations

from edgepick.strings import say


def tr(key: str, lang: str) -> str:
    return say("report", key, lang)
