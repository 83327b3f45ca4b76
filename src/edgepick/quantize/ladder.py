"""The quantization ladder: one GGUF per llama.cpp file type, built by llama-quantize.

Each build is keyed by the content of everything its bytes depend on (source SHA-256, type,
importance matrix, overrides, quantizer version); a file whose side record (`<file>.build.json`)
carries the same key and whose bytes still hash to what was recorded is not rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from functools import lru_cache
from pathlib import Path
from edgepick.errors import EdgepickError
from edgepick.models.gguf_info import gguf_spec, read_gguf
from edgepick.models.quant_types import normalize_ftype
from edgepick.progress import Tick
from edgepick.quantize.tools import parse_fallbacks, quantize_argv, quantizer_version, run_tool
from edgepick.records.quantize import QuantizedFile, TensorOverride
from edgepick.store.identity import file_sha256

# Tensor types that are not quantized: quantizing from these does not compound error.
FLOAT_TYPES = {"F32", "F16", "BF16", "F64"}
DEFAULT_LADDER = ["F16", "Q8_0", "Q6_K", "Q5_K_M", "Q5_0", "Q4_K_M", "Q4_1", "Q4_0", "Q3_K_M",
                  "Q2_K"]


def parse_types(text: str) -> list[str]:
    """`F16,q4_k_m, Q8_0` -> normalized names; an unknown name is a one-line error."""
    names = [t for t in (p.strip() for p in text.split(",")) if t]
    if not names:
        raise EdgepickError("--types is empty; give a comma-separated list such as Q8_0,Q4_K_M")
    out: list[str] = []
    for n in names:
        key = normalize_ftype(n)
        if key not in out:
            out.append(key)
    return out


def spec_of(path: str | Path):
    """gguf_spec, remembered per (file, size, mtime): parsing a header with a 49k-token
    vocabulary costs seconds in the gguf package, and one analysis asks several times."""
    if not os.path.isfile(path):
        read_gguf(path)  # the one-line "no such file" error
    st = os.stat(path)
    return _spec_at(os.path.realpath(path), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=16)
def _spec_at(path: str, size: int, mtime_ns: int):
    return gguf_spec(path)


def quantized_tensor_types(src: str) -> dict[str, int]:
    """The source's quantized tensor types (type -> count); empty for an F32/F16/BF16 file."""
    spec = spec_of(src)
    return {t: n for t, n in spec.quant_types.items() if t not in FLOAT_TYPES}


def requantize_warning(src: str, quantized: dict[str, int]) -> str:
    kinds = ", ".join(f"{t}×{n}" for t, n in sorted(quantized.items()))
    return (f"{src} is already quantized ({kinds}): every build from it REQUANTIZES, which "
            f"compounds quantization error (and a 'higher' type cannot restore lost precision). "
            f"Quantize from the F32/F16/BF16 original if you have it.")


def output_path(src: str, ftype: str, out_dir: str | Path) -> Path:
    stem = Path(src).name
    stem = stem[: -len(".gguf")] if stem.lower().endswith(".gguf") else stem
    return Path(out_dir) / f"{stem}.{ftype}.gguf"


def sidecar_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".build.json")


def build_key(source_sha: str, ftype: str, imatrix_sha: str | None,
              overrides: list[TensorOverride], pure: bool) -> str:
    payload = {"source": source_sha, "ftype": ftype, "imatrix": imatrix_sha, "pure": pure,
               "overrides": [o.model_dump() for o in overrides], "tool": quantizer_version()}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:32]


def _existing(dst: Path, key: str) -> QuantizedFile | None:
    side = sidecar_path(dst)
    if not dst.is_file() or not side.is_file():
        return None
    try:
        rec = QuantizedFile.model_validate_json(side.read_text())
    except ValueError:
        return None
    if rec.build_key != key or rec.sha256 != file_sha256(str(dst)):
        return None
    return rec.model_copy(update={"skipped": True, "path": str(dst)})


def build(src: str, dst: str | Path, ftype: str, *, imatrix: str | None = None,
          overrides: list[TensorOverride] | None = None, pure: bool = False, threads: int = 2,
          label: str | None = None, on_progress: Tick | None = None,
          quantized: dict[str, int] | None = None) -> QuantizedFile:
    """Build one file with llama-quantize (or reuse an identical earlier build)."""
    ftype = normalize_ftype(ftype)
    overrides = list(overrides or [])
    dst = Path(dst)
    if quantized is None:
        quantized = quantized_tensor_types(src)
    if imatrix and not os.path.isfile(imatrix):
        raise EdgepickError(f"{imatrix}: importance matrix file not found")
    src_sha = file_sha256(src)
    imatrix_sha = file_sha256(imatrix) if imatrix else None
    key = build_key(src_sha, ftype, imatrix_sha, overrides, pure)
    done = _existing(dst, key)
    if done is not None:
        return done
    dst.parent.mkdir(parents=True, exist_ok=True)
    part = dst.with_name(dst.name + ".part")
    log_path = dst.with_name(dst.name + ".log")
    argv = quantize_argv(src, str(part), ftype, imatrix=imatrix, overrides=overrides, pure=pure,
                         allow_requantize=bool(quantized), threads=threads)
    t0 = time.perf_counter()
    try:
        log = run_tool(argv, log_path=log_path, on_progress=on_progress)
        os.replace(part, dst)
    finally:
        if part.exists():
            part.unlink()
    seconds = time.perf_counter() - t0
    spec = spec_of(dst)
    rec = QuantizedFile(
        path=str(dst), type=label or ftype, size_bytes=os.path.getsize(dst),
        bpw=round(spec.bits_per_weight or 0.0, 4), fallbacks=parse_fallbacks(log),
        source=str(src), source_sha256=src_sha, imatrix=imatrix, requantized=bool(quantized),
        pure=pure, overrides=overrides, tensor_types=dict(sorted(spec.quant_types.items())),
        build_key=key, sha256=file_sha256(str(dst)), seconds=round(seconds, 3))
    sidecar_path(dst).write_text(rec.model_dump_json(indent=2))
    return rec


def build_ladder(src: str, types: list[str], out_dir: str | Path, *, imatrix: str | None = None,
                 threads: int = 2) -> list[QuantizedFile]:
    """One file per type in `out_dir`, named `<source stem>.<TYPE>.gguf`."""
    types = [normalize_ftype(t) for t in types]
    quantized = quantized_tensor_types(src)
    out: list[QuantizedFile] = []
    for ftype in types:
        out.append(build(src, output_path(src, ftype, out_dir), ftype, imatrix=imatrix,
                         threads=threads, quantized=quantized))
    return out
