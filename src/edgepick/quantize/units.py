"""Units of a model that sensitivity analysis and recipes switch between two types.

A unit is a set of weight matrices named by one regular expression, searched in the tensor name
exactly as `llama-quantize --tensor-type REGEX=TYPE` does (std::regex, ECMAScript syntax; the
patterns here use only syntax that Python's `re` reads the same way). Units of one kind never
overlap, so the order of the overrides given to llama-quantize does not matter.

- by block: `blk.0` … `blk.N-1` (every matrix of a transformer block), plus `token_embd`,
  `output` (absent when the embeddings are tied: then `token_embd` is also the output layer) and
  `other` (any remaining matrix outside the blocks);
- by class: `attn_q`, `attn_k`, `attn_v`, `attn_output`, `ffn` (gate, up and down), `token_embd`,
  `output`, and `other` (any remaining matrix, e.g. a fused QKV or a MoE router).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from edgepick.errors import EdgepickError
from edgepick.models.quant_types import FTYPE_BASE, normalize_ftype
from edgepick.records.model import ModelSpec

BY_CHOICES = ("block", "class")
_CLASS_PATTERNS = {
    "attn_q": r"^blk\.\d+\.attn_q\.weight$",
    "attn_k": r"^blk\.\d+\.attn_k\.weight$",
    "attn_v": r"^blk\.\d+\.attn_v\.weight$",
    "attn_output": r"^blk\.\d+\.attn_output\.weight$",
    "ffn": r"^blk\.\d+\.ffn_(gate|up|down)(_exps|_shexp)?\.weight$",
}
_GLOBAL_PATTERNS = {"token_embd": r"^token_embd\.weight$", "output": r"^output\.weight$"}


@dataclass(frozen=True)
class Unit:
    name: str
    pattern: str
    tensors: tuple[str, ...]


def _matrices(spec: ModelSpec) -> list[str]:
    # 1-D tensors (norms, biases) are never quantized by llama.cpp; they belong to no unit.
    return [t.name for t in spec.tensors if len(t.shape) >= 2]


def _exact(names: list[str]) -> str:
    return "^(" + "|".join(re.escape(n) for n in names) + ")$"


def _block_index(name: str) -> int | None:
    m = re.match(r"blk\.(\d+)\.", name)
    return int(m.group(1)) if m else None


def model_units(spec: ModelSpec, by: str) -> list[Unit]:
    if by not in BY_CHOICES:
        raise EdgepickError(f"--by {by!r}: expected one of {', '.join(BY_CHOICES)}")
    names = _matrices(spec)
    units: list[Unit] = []
    taken: set[str] = set()

    def add(name: str, pattern: str) -> None:
        rx = re.compile(pattern)
        members = tuple(n for n in names if rx.search(n) and n not in taken)
        if members:
            units.append(Unit(name, pattern, members))
            taken.update(members)

    if by == "block":
        blocks = sorted({i for n in names if (i := _block_index(n)) is not None})
        for i in blocks:
            add(f"blk.{i}", rf"^blk\.{i}\.")
    else:
        for cls, pattern in _CLASS_PATTERNS.items():
            add(cls, pattern)
    for name, pattern in _GLOBAL_PATTERNS.items():
        add(name, pattern)
    rest = [n for n in names if n not in taken]
    if rest:
        add("other", _exact(rest))
    return units


def find_unit(units: list[Unit], name: str) -> Unit:
    for u in units:
        if u.name == name:
            return u
    raise EdgepickError(f"unit {name!r} is not in this model (units: "
                        f"{', '.join(u.name for u in units)})")


def ggml_type_of(ftype: str) -> str:
    """The ggml tensor type a unit gets when a recipe names a llama.cpp file type."""
    return FTYPE_BASE[normalize_ftype(ftype)]
