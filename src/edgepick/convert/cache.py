"""Converted builds kept in the cache directory, keyed by their source and recipe.

A candidate given as "a GGUF plus a conversion recipe" is converted once and reused, the way
`assets/bundled.derived` keeps the F16 and tiny models (seed 001 §4: the engine's own format is
a build step of the candidate, not a separate manual chore).
"""

from __future__ import annotations

from pathlib import Path

from edgepick.assets.bundled import derived
from edgepick.convert.recipe import ConvertRecipe
from edgepick.convert.run import convert_gguf
from edgepick.store.identity import file_sha256


def tag(recipe: ConvertRecipe) -> str:
    if recipe.precision == "fp32":
        return "og-fp32"
    return f"og-int4-{recipe.algo}-b{recipe.block_size}" + \
        (f"-head{recipe.lm_head_bits}" if recipe.lm_head_bits != 4 else "")


def converted(source: str | Path, recipe: ConvertRecipe | None = None) -> Path:
    """The onnxruntime-genai folder built from `source` with `recipe` (built on first use)."""
    recipe = recipe or ConvertRecipe()
    source = Path(source)
    key = recipe.key(file_sha256(str(source)))
    stem = source.name[:-5] if source.name.endswith(".gguf") else source.name
    return derived(f"{stem}.{tag(recipe)}-{key[:8]}",
                   lambda target: convert_gguf(str(source), recipe, target, quiet=True))

