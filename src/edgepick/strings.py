"""The bilingual strings (English, Chinese) of the decision and the report, read from one catalog,
data/strings.yaml, so that wording and translation are edited in one place, apart from the code."""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import files

import yaml


@lru_cache(maxsize=1)
def catalog() -> dict[str, dict]:
    text = files("edgepick").joinpath("data/strings.yaml").read_text(encoding="utf-8")
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def entry(section: str, key: str) -> dict[str, str] | None:
    """One string in every language it has, or None when the section does not hold `key`."""
    return catalog()[section].get(key)


def in_lang(e: dict[str, str], lang: str) -> str:
    """The string in `lang`, or in English when it has no such language."""
    return e.get(lang, e["en"])


def texts(section: str, lang: str) -> dict[str, str]:
    """Every string of `section` in `lang` (English where it has no such language)."""
    return {k: in_lang(e, lang) for k, e in catalog()[section].items()}


def say(section: str, key: str, lang: str) -> str:
    """`key` of `section` in `lang`; a key the catalog does not hold is shown as itself."""
    e = entry(section, key)
    return in_lang(e, lang) if e else key
