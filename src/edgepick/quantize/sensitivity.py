"""Per-unit quantization sensitivity: one unit at the low type, everything else at the high type,
KL divergence of the next-token distributions against the source (edgepick.evaluate.fidelity).

Each measurement is stored in the results store (kind "sensitivity") under a key of everything it
depends on, so a rerun, or a recipe built from the same analysis, costs nothing. The computation is
deterministic (llama.cpp's CPU kernels, fixed chunks of the text, a fixed tie-break on unit name),
so two runs on the same input rank the units the same way.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path

from edgepick.errors import EdgepickError
from edgepick.evaluate.fidelity import fidelity
from edgepick.models.gguf_fast_reader import fast_reader
from edgepick.models.gguf_rewrite import rewrite_gguf
from edgepick.models.quant_types import normalize_ftype
from edgepick.progress import ProgressEvent, Tick
from edgepick.quantize.ladder import build, quantized_tensor_types, spec_of
from edgepick.quantize.tools import quantizer_version
from edgepick.quantize.units import Unit, ggml_type_of, model_units
from edgepick.records.model_ref import ModelRef
from edgepick.records.quantize import SensitivityEntry, SensitivityReport
from edgepick.store.identity import file_sha256
from edgepick.store.results import ResultStore

KIND = "sensitivity"
BASELINE = "(all high)"
_FLOAT = {"F32", "F16", "BF16"}



def check_types(low: str, high: str) -> tuple[str, str]:
    low, high = normalize_ftype(low), normalize_ftype(high)
    if ggml_type_of(high) in _FLOAT:
        # llama-quantize applies --tensor-type overrides only when the file type is quantized.
        raise EdgepickError(f"--high {high}: must be a quantized type (e.g. Q8_0); llama-quantize "
                            f"does not apply per-tensor types to an {high} build")
    if low == high:
        raise EdgepickError(f"--low and --high are both {low}; nothing to compare")
    return low, high


def _key(parts: dict) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def _measure(src: str, path: str, text: str, ctx: int, chunks: int | None, threads: int) -> dict:
    r = fidelity(ModelRef.file(src), ModelRef.file(path), Path(text), ctx=ctx, threads=threads, max_chunks=chunks)
    return {"kld_mean": r.kld_mean, "kld_p99": r.kld_p99, "same_top1": r.same_top1,
            "n_scored": r.n_scored}


def _whole(src, ftype, tmp: Path, imatrix, threads, quantized) -> dict:
    """One llama-quantize run with every tensor at `ftype` (--pure), opened once for reuse (by
    the fast reader: the stock one walks the vocabulary element by element, seconds a file)."""
    path = tmp / f"all-{ftype}.gguf"
    rec = build(src, path, ftype, imatrix=imatrix, pure=True, threads=threads, quantized=quantized)
    reader = fast_reader(str(path))
    return {"path": str(path), "size": rec.size_bytes, "reader": reader,
            "bytes": {t.name: int(t.n_bytes) for t in reader.tensors}}


def assemble(high, low, unit: Unit, dst: Path) -> Path:
    """The high file with the unit's tensors taken from the low file, bytes copied unchanged.

    `high`, `low`: GGUFReaders of whole-file `--pure` quantizations. llama-quantize quantizes
    each tensor on its own (from the source and, if given, that tensor's importance vector), so
    this file holds exactly the bytes `llama-quantize --pure HIGH --tensor-type UNIT=LOW` writes
    (the tests check it), at the cost of a file copy instead of a quantization.
    """
    members = set(unit.tensors)
    picked = {t.name: t for t in low.tensors if t.name in members}

    def take_low(tensor):
        t = picked.get(tensor.name)
        return (t.data, t.tensor_type) if t is not None else None

    return rewrite_gguf(high, dst, transform=take_low)


def _unit_bytes(whole: dict, unit: Unit) -> int:
    return sum(whole["bytes"][n] for n in unit.tensors)


def analyze(src: str, *, low: str = "Q4_0", high: str = "Q8_0", text: str, by: str = "block",
            ctx: int = 512, chunks: int | None = 4, threads: int = 2, imatrix: str | None = None,
            store=None, on_unit: Tick | None = None,
            work_dir: str | None = None) -> SensitivityReport:
    """Rank the units of `src` by the KLD they cause when they alone are at `low`."""
    low, high = check_types(low, high)
    if not Path(text).is_file():
        raise EdgepickError(f"{text}: text file not found")
    quantized = quantized_tensor_types(src)
    units = model_units(spec_of(src), by)
    if not units:
        raise EdgepickError(f"{src}: no weight matrices to analyse")
    store = store if store is not None else ResultStore()
    common = {"source": file_sha256(src), "low": low, "high": high, "text": file_sha256(text),
              "ctx": ctx, "chunks": chunks, "imatrix": file_sha256(imatrix) if imatrix else None,
              "tool": quantizer_version()}
    tmp = Path(tempfile.mkdtemp(prefix="edgepick-sens-", dir=work_dir))
    whole: dict[str, dict] = {}

    def files() -> tuple[dict, dict]:
        # Built only when something is not in the store yet, so a full rerun runs nothing.
        for ftype in (high, low):
            if ftype not in whole:
                whole[ftype] = _whole(src, ftype, tmp, imatrix, threads, quantized)
        return whole[high], whole[low]

    try:
        bkey = _key({**common, "unit": BASELINE})
        base = store.get(KIND, bkey)
        if base is None:
            hi, _ = files()
            base = _measure(src, hi["path"], text, ctx, chunks, threads)
            base["size_bytes"] = hi["size"]
            store.put(KIND, bkey, base, label=f"{Path(src).name} {BASELINE}")
        entries: list[SensitivityEntry] = []
        for i, unit in enumerate(units):
            if on_unit:
                on_unit(ProgressEvent(i, len(units), unit.name))
            key = _key({**common, "unit": unit.name, "tensors": list(unit.tensors)})
            cached = store.get(KIND, key)
            if cached is not None:
                entries.append(SensitivityEntry(**cached, cached=True))
                continue
            hi, lo = files()
            path = assemble(hi["reader"], lo["reader"], unit, tmp / "unit.gguf")
            m = _measure(src, str(path), text, ctx, chunks, threads)
            entry = SensitivityEntry(
                unit=unit.name, tensors=list(unit.tensors), kld_mean=m["kld_mean"],
                kld_p99=m["kld_p99"], same_top1=m["same_top1"], size_bytes=path.stat().st_size,
                unit_bytes_low=_unit_bytes(lo, unit), unit_bytes_high=_unit_bytes(hi, unit))
            path.unlink()
            store.put(KIND, key, entry.model_dump(exclude={"cached"}),
                      label=f"{Path(src).name} {unit.name}")
            entries.append(entry)
        if on_unit:
            on_unit(ProgressEvent(len(units), len(units)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    entries.sort(key=lambda e: (-e.kld_mean, e.unit))
    return SensitivityReport(
        source=src, source_sha256=common["source"], low=low, high=high, by=by, text=text,
        text_sha256=common["text"], ctx=ctx, chunks=chunks, baseline_kld_mean=base["kld_mean"],
        baseline_kld_p99=base["kld_p99"], baseline_size_bytes=base["size_bytes"],
        entries=entries)
