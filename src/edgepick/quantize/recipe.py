"""Mixed-precision recipes: which units stay at the high type, within a size budget.

Automatic choice (greedy, documented in docs/quantize.md): a unit's *gain* is the KLD it adds
when it alone is at the low type (its sensitivity KLD minus the all-high KLD) and its *cost* the
bytes it takes at the high type over the low type. Starting from everything at the low type,
units are taken in order of gain per extra byte, each one kept if it still fits the budget. This
assumes the units' KLD contributions roughly add up, which holds for small perturbations.

The file is built with `llama-quantize --pure LOW` and one `--tensor-type REGEX=HIGH` per kept
unit, so every tensor has exactly the type the recipe names (llama.cpp's own per-type mixture
rules are switched off); the recipe YAML records that list and is enough to rebuild the file.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from pathlib import Path

import yaml

from edgepick.errors import EdgepickError, InputError, input_error
from edgepick.progress import Tick
from edgepick.quantize.ladder import build, spec_of
from edgepick.yaml_input import parse_yaml
from edgepick.quantize.units import ggml_type_of, model_units
from edgepick.records.quantize import (QuantizedFile, Recipe, RecipeUnit, SensitivityReport,
                                       TensorOverride)
from edgepick.store.identity import file_sha256
from edgepick.units import parse_size

_SIZE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([a-z]*)\s*$", re.I)
_MAX_BPW = 64.0  # a bare number up to this is bits per weight; above it, bytes


def parse_budget(text: str) -> tuple[str, float]:
    """`95MB`, `90MiB`, `95000000` -> ("bytes", n); `4.9bpw`, `4.9` -> ("bpw", x);
    `1.15x` -> ("ratio", 1.15): a multiple of the size of llama.cpp's uniform --low build."""
    t = text.strip().lower().replace("×", "x")
    m = _SIZE_RE.match(t)
    if not m:
        raise EdgepickError(f"--budget {text!r}: expected a size (95MB, 90MiB), bits per weight "
                            f"(4.9bpw) or a multiple of the uniform --low file (1.15x)")
    value, unit = float(m.group(1)), m.group(2)
    if unit == "x":
        kind = "ratio"
    elif unit == "bpw" or (unit == "" and value <= _MAX_BPW):
        kind = "bpw"
    else:
        try:  # the one size parser: G and GiB are 2**30 bytes, GB 10**9 (edgepick.units)
            kind, value = "bytes", float(parse_size(t))
        except ValueError:
            raise EdgepickError(f"--budget {text!r}: unknown unit {unit!r} (use B, KB, MB, MiB, "
                                f"GB, GiB, bpw or x)") from None
    if value <= 0:
        raise EdgepickError(f"--budget {text!r}: must be positive")
    return kind, value


def uniform_size(src: str, ftype: str, threads: int = 2, imatrix: str | None = None) -> int:
    """Size of llama.cpp's standard `ftype` build of `src` (its own mixture rules, not --pure)."""
    with tempfile.TemporaryDirectory(prefix="edgepick-uniform-") as tmp:
        return build(src, Path(tmp) / "uniform.gguf", ftype, imatrix=imatrix,
                     threads=threads).size_bytes


def budget_bytes(src: str, budget: str, low: str, threads: int = 2,
                 imatrix: str | None = None) -> int:
    kind, value = parse_budget(budget)
    if kind == "bytes":
        return int(value)
    if kind == "ratio":
        return int(value * uniform_size(src, low, threads, imatrix))
    spec = spec_of(src)
    header = (spec.file_size_bytes or 0) - (spec.weights_bytes or 0)
    n = sum(t.n_elements for t in spec.tensors)
    return int(value * n / 8) + header


def choose(report: SensitivityReport, limit: int) -> tuple[list[RecipeUnit], int]:
    """Greedy by KLD gain per extra byte; returns every unit with its type, and the predicted size."""
    high_t, low_t = ggml_type_of(report.high), ggml_type_of(report.low)
    all_low = report.baseline_size_bytes - sum(e.extra_bytes for e in report.entries)
    if all_low > limit:
        raise EdgepickError(f"budget of {limit:,} bytes is below the size with every unit at "
                            f"{report.low} ({all_low:,} bytes); raise --budget or lower --low")
    gain = {e.unit: max(0.0, e.kld_mean - report.baseline_kld_mean) for e in report.entries}
    order = sorted(report.entries,
                   key=lambda e: (-gain[e.unit] / max(e.extra_bytes, 1), e.unit))
    size, kept = all_low, set()
    for e in order:
        if gain[e.unit] > 0 and size + e.extra_bytes <= limit:
            kept.add(e.unit)
            size += e.extra_bytes
    units = [RecipeUnit(unit=e.unit, type=high_t if e.unit in kept else low_t,
                        kld_mean=e.kld_mean, extra_bytes=e.extra_bytes)
             for e in report.entries]
    return units, size


def overrides_for(units: list[RecipeUnit], patterns: dict[str, str], low: str) -> list[TensorOverride]:
    low_t = ggml_type_of(low)
    return [TensorOverride(pattern=patterns[u.unit], type=u.type)
            for u in units if u.type != low_t]


def auto_recipe(src: str, report: SensitivityReport, budget: str, limit: int,
                imatrix: str | None = None) -> Recipe:
    patterns = {u.name: u.pattern for u in model_units(spec_of(src), report.by)}
    units, predicted = choose(report, limit)
    return Recipe(
        source=str(src), source_sha256=report.source_sha256, low=report.low, high=report.high,
        by=report.by, budget=budget, budget_bytes=limit, imatrix=imatrix,
        imatrix_sha256=file_sha256(imatrix) if imatrix else None, units=units,
        overrides=overrides_for(units, patterns, report.low), predicted_size_bytes=predicted,
        sensitivity_text=report.text, sensitivity_text_sha256=report.text_sha256,
        baseline_kld_mean=report.baseline_kld_mean)


def recipe_output(src: str, recipe: Recipe, out_dir: str | Path) -> Path:
    """`<stem>.mix-<LOW>-<HIGH>-<hash of the override list>.gguf`: one name per distinct recipe."""
    stem = Path(src).name
    stem = stem[: -len(".gguf")] if stem.lower().endswith(".gguf") else stem
    blob = "\n".join(o.arg() for o in recipe.overrides).encode()
    tag = hashlib.sha256(blob).hexdigest()[:8]
    return Path(out_dir) / f"{stem}.mix-{recipe.low}-{recipe.high}-{tag}.gguf"


def recipe_path(gguf_path: str | Path) -> Path:
    p = Path(gguf_path)
    return p.with_name(p.name[: -len(".gguf")] + ".recipe.yaml")


def save_recipe(recipe: Recipe, path: str | Path) -> None:
    Path(path).write_text(yaml.safe_dump(recipe.model_dump(mode="json"), sort_keys=False,
                                         allow_unicode=True))


def load_recipe(path: str | Path) -> Recipe:
    p = Path(path)
    if not p.is_file():
        raise EdgepickError(f"{p}: recipe file not found")
    data = parse_yaml(p.read_text(), p)
    if not isinstance(data, dict):
        raise InputError(p, "expected a mapping (a recipe written by `edgepick quantize --recipe auto`)")
    try:
        return Recipe.model_validate(data)
    except ValueError as exc:
        raise input_error(p, exc) from None


def build_recipe(src: str, recipe: Recipe, out_dir: str | Path, *, imatrix: str | None = None,
                 threads: int = 2, on_progress: Tick | None = None) -> QuantizedFile:
    """Build the file a recipe describes; the source must be the one it was made for."""
    sha = file_sha256(src)
    if sha != recipe.source_sha256:
        raise EdgepickError(f"{src}: not the source this recipe was made for (SHA-256 {sha[:12]}…, "
                            f"recipe expects {recipe.source_sha256[:12]}…)")
    imatrix = imatrix or recipe.imatrix
    if recipe.imatrix_sha256:
        if not imatrix or not Path(imatrix).is_file():
            raise EdgepickError(f"the recipe was built with the importance matrix {recipe.imatrix}; "
                                f"give it with --imatrix")
        if file_sha256(imatrix) != recipe.imatrix_sha256:
            raise EdgepickError(f"{imatrix}: not the importance matrix the recipe names (SHA-256 "
                                f"differs)")
    elif imatrix:
        raise EdgepickError("this recipe was built without an importance matrix; drop --imatrix")
    dst = recipe_output(src, recipe, out_dir)
    rec = build(src, dst, recipe.low, imatrix=imatrix, overrides=recipe.overrides, pure=True,
                threads=threads, label="mixed", on_progress=on_progress)
    save_recipe(recipe, recipe_path(dst))
    return rec
