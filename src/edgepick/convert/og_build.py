"""Build an ONNX Runtime GenAI model folder from a GGUF without torch (seed 001 §4).

Steps: read the GGUF → build the decoder graph from its dequantized weights → quantize every
MatMul to group-wise INT4 with onnxruntime's own quantizer → write the genai_config.json and a
tokenizer rebuilt from the GGUF → load the result and check it (block sizes, token IDs).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import shutil
import tempfile
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import onnx
import onnxruntime
import onnxruntime_genai
from onnxruntime.quantization.matmul_nbits_quantizer import (DefaultWeightOnlyQuantConfig,
                                                             KQuantWeightOnlyQuantConfig,
                                                             MatMulNBitsQuantizer)

from edgepick.convert.gguf_source import GgufSource, LlamaHParams
from edgepick.convert.og_tokenizer import write_tokenizer
from edgepick.convert.onnx_llama import build_llama
from edgepick.convert.recipe import (KNOWN_PITFALLS, RECORD_FILE, ConvertRecipe, ConvertRecord,
                                     odd_block_widths)
from edgepick.convert.verify import check_tokenizer
from edgepick.errors import EdgepickError
from edgepick.progress import ProgressEvent, Tick, silent


def genai_config(hp: LlamaHParams, src: GgufSource, recipe: ConvertRecipe) -> dict:
    """The genai_config.json the official builder writes for a CPU decoder, for this model."""
    eos = [int(src.meta("tokenizer.ggml.eos_token_id", 0))]
    eot = src.meta("tokenizer.ggml.eot_token_id")
    if eot is not None and int(eot) not in eos:
        eos.append(int(eot))
    pad = src.meta("tokenizer.ggml.padding_token_id", eos[0])
    return {
        "model": {
            "bos_token_id": int(src.meta("tokenizer.ggml.bos_token_id", eos[0])),
            "context_length": recipe.context_length,
            "decoder": {
                "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
                "filename": "model.onnx", "head_size": hp.head_dim, "hidden_size": hp.n_embd,
                "inputs": {"input_ids": "input_ids", "attention_mask": "attention_mask",
                           "past_key_names": "past_key_values.%d.key",
                           "past_value_names": "past_key_values.%d.value"},
                "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                            "present_value_names": "present.%d.value"},
                "num_attention_heads": hp.n_head, "num_hidden_layers": hp.n_layers,
                "num_key_value_heads": hp.n_head_kv},
            "eos_token_id": eos if len(eos) > 1 else eos[0],
            "pad_token_id": int(pad), "type": "llama", "vocab_size": hp.n_vocab},
        "search": {"diversity_penalty": 0.0, "do_sample": False, "early_stopping": True,
                   "length_penalty": 1.0, "max_length": recipe.context_length, "min_length": 0,
                   "no_repeat_ngram_size": 0, "num_beams": 1, "num_return_sequences": 1,
                   "past_present_share_buffer": True, "repetition_penalty": 1.0,
                   "temperature": 1.0, "top_k": 1, "top_p": 1.0},
    }


def _quantize(model, recipe: ConvertRecipe):
    head = {"/lm_head/MatMul": {"bits": 8}} if recipe.lm_head_bits == 8 else None
    algo = (KQuantWeightOnlyQuantConfig(customized_weight_config=head)
            if recipe.algo == "k_quant" else
            DefaultWeightOnlyQuantConfig(block_size=recipe.block_size, is_symmetric=recipe.symmetric,
                                         accuracy_level=recipe.accuracy_level or None))
    q = MatMulNBitsQuantizer(model, bits=4, block_size=recipe.block_size,
                             is_symmetric=recipe.symmetric,
                             accuracy_level=recipe.accuracy_level or None, algo_config=algo)
    # neural_compressor's k-quant prints a progress line and an INFO record per tensor
    quiet = [logging.getLogger(n) for n in ("neural_compressor", "onnxruntime.quantization")]
    levels = [lg.level for lg in quiet]
    try:
        for lg in quiet:
            lg.setLevel(logging.WARNING)
        with contextlib.redirect_stdout(io.StringIO()):
            q.process()
    finally:
        for lg, lv in zip(quiet, levels):
            lg.setLevel(lv)
    return q.model.model


def check_block_sizes(model, recipe: ConvertRecipe) -> int:
    """Every MatMul became MatMulNBits with the asked block size (the builder once ignored the
    option silently); returns the number of quantized MatMuls."""
    n = 0
    for node in model.graph.node:
        if node.op_type == "MatMul" and recipe.precision == "int4":
            raise EdgepickError(f"MatMul {node.name} was left unquantized")
        if node.op_type == "MatMulNBits":
            attrs = {a.name: a.i for a in node.attribute}
            bits = recipe.lm_head_bits if node.name.startswith("/lm_head/") else 4
            if attrs.get("block_size") != recipe.block_size or attrs.get("bits") != bits:
                raise EdgepickError(f"{node.name}: block size {attrs.get('block_size')}, "
                                    f"bits {attrs.get('bits')}; asked {recipe.block_size}, {bits}")
            n += 1
    return n


def check_built(model: Path, recipe: ConvertRecipe) -> int:
    """check_block_sizes on a model.onnx on disk (its graph only, not its weights)."""
    return check_block_sizes(onnx.load(str(model), load_external_data=False), recipe)


def build_gguf(source: str, recipe: ConvertRecipe, out: Path, *, source_sha256: str,
               progress: Tick | None = None) -> ConvertRecord:
    """Convert `source` into `out` (written through a temporary folder, then moved in place)."""
    say = progress or silent
    t_all = time.perf_counter()
    seconds: dict[str, float] = {}  # step → its wall time, kept in the record
    steps: list[str] = []  # what each step did, in words, for the engineering-cost table

    def timed(step: str, what: str) -> float:
        steps.append(what)
        return time.perf_counter()

    t = timed("read", "read the GGUF header and tokenizer metadata")
    src = GgufSource(source)
    hp = src.hparams
    if recipe.context_length > hp.n_ctx_train:
        raise EdgepickError(f"context length {recipe.context_length} exceeds the model's "
                            f"training context ({hp.n_ctx_train})")
    widths = {hp.n_embd, hp.n_ff, hp.n_head * hp.head_dim}
    odd = odd_block_widths(widths, recipe.block_size)
    if recipe.precision == "int4" and recipe.algo == "k_quant" and odd:
        raise EdgepickError(f"{source}: refused: {KNOWN_PITFALLS['k_quant-odd-blocks']}; here "
                            f"width {odd[0]} at block {recipe.block_size}; use --algo default "
                            "or a block size that divides it an even number of times")
    seconds["read"] = time.perf_counter() - t
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        write_tokenizer(src, tmp)  # fails early on a tokenizer it cannot rebuild
        t = timed("graph", f"dequantize {sum(hp.weight_types.values())} GGUF tensors into an "
                           f"ONNX decoder graph ({hp.n_layers} blocks)")
        say(ProgressEvent(0, hp.n_layers, "graph"))

        model = build_llama(src, recipe.context_length, say)
        seconds["graph"] = time.perf_counter() - t
        if recipe.precision == "int4":
            t = timed("quantize", f"quantize MatMuls to INT4 ({recipe.algo}, block "
                                  f"{recipe.block_size}, symmetric) with onnxruntime")
            say(ProgressEvent(0, 1, "quantize"))
            model = _quantize(model, recipe)
            n_q = check_block_sizes(model, recipe)
            say(ProgressEvent(1, 1, "quantize"))
            seconds["quantize"] = time.perf_counter() - t
        else:
            n_q = 0
        t = timed("write", "write model.onnx, its weights, genai_config.json and the tokenizer")
        onnx.save_model(model, str(tmp / "model.onnx"), save_as_external_data=True,
                        all_tensors_to_one_file=True, location="model.onnx.data",
                        size_threshold=1024)
        del model
        (tmp / "genai_config.json").write_text(
            json.dumps(genai_config(hp, src, recipe), indent=1) + "\n", encoding="utf-8")
        seconds["write"] = time.perf_counter() - t
        t = timed("verify", "load with onnxruntime-genai; compare its token IDs with llama.cpp's")

        token_check = check_tokenizer(tmp, source)
        seconds["verify"] = time.perf_counter() - t
        record = ConvertRecord(
            recipe=recipe, source=os.path.realpath(source), source_sha256=source_sha256,
            source_types=hp.weight_types, requantized=not hp.full_precision, out_dir=str(out),
            files={p.name: p.stat().st_size for p in sorted(tmp.iterdir())},
            steps=steps, step_seconds={k: round(v, 3) for k, v in seconds.items()},
            seconds=round(time.perf_counter() - t_all, 3),
            versions={"onnxruntime": onnxruntime.__version__,
                      "onnxruntime-genai": onnxruntime_genai.__version__,
                      "onnx": onnx.__version__, "gguf": _version("gguf")},
            tokenizer_check=f"{token_check}; {n_q} MatMulNBits nodes at block {recipe.block_size}"
            if n_q else token_check,
            build_key=recipe.key(source_sha256))
        (tmp / RECORD_FILE).write_text(record.model_dump_json(indent=1) + "\n", encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return record


def _version(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "unknown"
