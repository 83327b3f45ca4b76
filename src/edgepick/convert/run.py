"""The convert stage: one model to an engine's own format, checked, recorded and reproducible.

Routes (seed 003 §4.3: each engine has its own format and conversion path):
- `gguf` (default, torch-free): any GGUF the `gguf` package can dequantize → og_build.
- `hf-builder`: a Hugging Face folder through onnxruntime-genai's official builder, only when
  torch and transformers are installed (a 2.7 GB route, never installed by edgepick).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from typing import Callable

from edgepick.convert.recipe import (KNOWN_PITFALLS, RECORD_FILE, RECORD_KIND, ConvertRecipe,
                                     ConvertRecord, check_recipe)
from edgepick.backends.onnxruntime_genai import require_onnx
from edgepick.convert.gguf_source import GgufSource
from edgepick.errors import EdgepickError
from edgepick.launch import run_child
from edgepick.progress import ProgressEvent, Tick
from edgepick.store.identity import file_sha256, model_identity
from edgepick.store.results import ResultStore

def previous_record(out: Path) -> ConvertRecord | None:
    path = out / RECORD_FILE
    if not path.is_file():
        return None
    try:
        return ConvertRecord.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError:
        return None


def _check_out(out: Path, build_key: str, force: bool) -> ConvertRecord | None:
    """An identical earlier build is returned (nothing to do); anything else in `out` is only
    replaced with `force`, and the error says so."""
    if not out.exists():
        return None
    if not out.is_dir():
        raise EdgepickError(f"{out}: exists and is not a folder")
    prev = previous_record(out)
    if prev is not None and prev.build_key == build_key and not force:
        return prev
    if any(out.iterdir()) and not force:
        what = "an earlier build with other settings" if prev else "files edgepick did not write"
        raise EdgepickError(f"{out}: holds {what}; pass --force to replace the folder")
    return None


def _builder():
    """The converter's graph side (og_build: onnx, onnxruntime, onnxruntime-genai, tokenizers,
    the `onnx` extra), imported once require_onnx has named any missing part in one line; the
    CLI and a model reference's resolution read this module without them."""
    require_onnx()
    import edgepick.convert.og_build as og_build

    return og_build


def convert_gguf(source: str, recipe: ConvertRecipe, out: str | Path, *, force: bool = False,
                 quiet: bool = False, progress: Tick | None = None,
                 warn: Callable[[str], None] | None = None) -> ConvertRecord:
    """Convert a GGUF without torch; `warn(msg)` hears each pitfall that applies."""
    require_onnx()
    out = Path(out)
    src = GgufSource(source)  # fails here, in one line, on an unsupported architecture
    pitfalls = check_recipe(recipe, source_full_precision=src.hparams.full_precision)
    sha = file_sha256(source)
    prev = _check_out(out, recipe.key(sha), force)
    if prev is not None:
        prev.skipped = True
        return prev
    for p in pitfalls:
        if warn and not quiet:
            warn(p.reason)
    record = _builder().build_gguf(source, recipe, out, source_sha256=sha, progress=progress)
    if pitfalls:
        record.warnings = [p.reason for p in pitfalls]
        (out / RECORD_FILE).write_text(record.model_dump_json(indent=1) + "\n", encoding="utf-8")
    return record


def torch_available() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers"))


def convert_hf(folder: str, recipe: ConvertRecipe, out: str | Path, *, force: bool = False,
               progress: Tick | None = None) -> ConvertRecord:
    """A Hugging Face folder through onnxruntime-genai's official builder (needs torch)."""
    require_onnx()
    if not torch_available():
        raise EdgepickError(f"{folder}: a Hugging Face folder is converted by onnxruntime-genai's "
                            "builder, which needs torch and transformers (about 2.7 GB; "
                            "pip install torch transformers); or give a GGUF of the model for "
                            "the torch-free route")
    if recipe.precision != "int4":
        raise EdgepickError("the builder route is wired for --precision int4 only")
    check_recipe(recipe, source_full_precision=True)

    cfg = Path(folder) / "config.json"
    sha = model_identity(str(cfg))
    out = Path(out)
    prev = _check_out(out, recipe.key(sha), force)
    if prev is not None:
        prev.skipped = True
        return prev
    # `block_size`, never the old `int4_block_size` the builder ignores (KNOWN_PITFALLS)
    extra = [f"block_size={recipe.block_size}", f"accuracy_level={recipe.accuracy_level}",
             f"algo_config={recipe.algo}", "is_symmetric=true"]
    if recipe.lm_head_bits == 8:
        extra.append("matmul_mixed_precision=last_matmul:int8")
    cmd = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(folder),
           "-o", str(out), "-p", "int4", "-e", "cpu", "-c", str(out / ".cache"),
           "--extra_options", *extra]
    if progress:
        progress(ProgressEvent(0, 1, "builder"))
    t0 = time.perf_counter()

    try:
        proc = run_child(cmd)
    except OSError as exc:
        raise EdgepickError(f"{cmd[0]}: cannot run the onnxruntime-genai builder ({exc})") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise EdgepickError(f"{folder}: the onnxruntime-genai builder failed ({tail[0]})")
    _builder().check_built(out / "model.onnx", recipe)
    if progress:
        progress(ProgressEvent(1, 1, "builder"))
    record = ConvertRecord(
        recipe=recipe.model_copy(update={"route": "hf-builder"}), source=os.path.realpath(folder),
        source_sha256=sha, out_dir=str(out),
        files={p.name: p.stat().st_size for p in sorted(out.iterdir()) if p.is_file()},
        steps=["run onnxruntime_genai.models.builder (torch) with " + " ".join(extra),
               "check every MatMulNBits node's block size"],
        seconds=round(time.perf_counter() - t0, 3), build_key=recipe.key(sha),
        warnings=[KNOWN_PITFALLS["int4_block_size"]],
        tokenizer_check="the builder copies the Hugging Face tokenizer files unchanged")
    (out / RECORD_FILE).write_text(record.model_dump_json(indent=1) + "\n", encoding="utf-8")
    return record


def store_record(store_path: str | None, record: ConvertRecord) -> None:
    """Keep the record in the results store, keyed by its build key, in this command's run."""
    if not store_path:
        return

    with ResultStore(store_path) as store:
        store.begin_run("convert", json.loads(record.recipe.model_dump_json()))
        store.put(RECORD_KIND, record.build_key, json.loads(record.model_dump_json()),
                  label=Path(record.out_dir).name)
