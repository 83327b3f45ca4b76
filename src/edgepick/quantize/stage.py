"""The quantize stage's entry point: build files with llama.cpp's quantizer and store a record of
each (seed 000 §4.1: the quantization is part of the configuration being chosen)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Callable

from pydantic import BaseModel, ConfigDict, Field

from edgepick.errors import EdgepickError
from edgepick.models.quant_types import normalize_ftype
from edgepick.progress import ProgressEvent, Tick, silent
from edgepick.quantize.ladder import FLOAT_TYPES, build, output_path, spec_of
from edgepick.records.candidate import DEFAULTS
from edgepick.records.model_ref import ModelRef
from edgepick.records.quantize import QuantizedFile

KIND = "quantize"


class QuantizeBuild(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: ModelRef
    qtype: str
    target: str  # where the file is written
    imatrix: str | None = None
    label: str | None = None


class QuantizeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    builds: list[QuantizeBuild] = Field(..., min_length=1)
    threads: int = Field(DEFAULTS.threads, ge=1)

    @classmethod
    def ladder(cls, source: ModelRef, types: list[str], out_dir: str | Path, *,
               imatrix: str | None = None, threads: int = DEFAULTS.threads) -> "QuantizeRequest":
        """One file per type in `out_dir`, named `<source stem>.<TYPE>.gguf`."""
        builds = [QuantizeBuild(source=source, qtype=normalize_ftype(t), imatrix=imatrix,
                                target=str(output_path(str(source.path), normalize_ftype(t),
                                                       out_dir)))
                  for t in types]
        return cls(builds=builds, threads=threads)


class QuantizeOutcome(BaseModel):
    build: QuantizeBuild
    file: QuantizedFile | None = None
    error: str | None = None  # one failed build does not stop the others


def store_key(path: str) -> str:
    return hashlib.sha256(json.dumps(["q", path]).encode()).hexdigest()[:32]


def run(req: QuantizeRequest, store, progress: Tick = silent, *,
        on_tensor: Callable[[str], Tick | None] | None = None
        ) -> list[QuantizeOutcome]:
    """Build (or reuse) every file; each record is stored under kind "quantize", keyed by path.
    `on_tensor(type)` may return a per-tensor progress callback for that build."""
    out: list[QuantizeOutcome] = []
    quantized_of: dict[str, dict[str, int]] = {}
    for i, b in enumerate(req.builds):
        progress(ProgressEvent(i, len(req.builds), f"{b.label or b.source.label} ({b.qtype})"))
        src = str(b.source.path)
        if src not in quantized_of:
            quantized_of[src] = {t: n for t, n in spec_of(src).quant_types.items()
                                 if t not in FLOAT_TYPES}
        try:
            rec = build(src, b.target, b.qtype, imatrix=b.imatrix, quantized=quantized_of[src],
                        threads=req.threads,
                        on_progress=on_tensor(b.qtype) if on_tensor else None)
        except (EdgepickError, OSError) as exc:
            out.append(QuantizeOutcome(build=b, error=str(exc)))
            continue
        key = store_key(rec.path)
        if store is not None and not (rec.skipped and store.has(KIND, key)):
            store.put(KIND, key, rec.model_dump(mode="json"), label=b.label or Path(rec.path).name)
        out.append(QuantizeOutcome(build=b, file=rec))
    progress(ProgressEvent(len(req.builds), len(req.builds), "done"))
    return out
