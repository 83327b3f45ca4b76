"""The version pairs of issue 39's "Done when", built from one F16 source with llama.cpp's own
quantizer and `gguf`: Q4_0 → the mixed-precision recipe build (pure Q4_0, the first and last
blocks at Q8_0, as `quantize --recipe` builds); Q8_0 → Q8_0 with the output matrix at F16
(SmolLM2 ties output.weight to token_embd.weight, so that is the tensor); a chat-template-only
change; a "fine-tune" that perturbs every weight of two blocks. Shared by tests/update and
benchmarks/update_size.py; files are built once per folder and reused, once however many of
pytest's workers ask at once (edgepick.assets.bundled.build_once)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
            "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def _quant(src: str, dst: Path, ftype: str, overrides=(), pure: bool = False) -> Path:
    from edgepick.assets.bundled import locked
    from edgepick.quantize.ladder import build
    from edgepick.records.quantize import TensorOverride

    with locked(dst):  # build writes dst atomically, through a part file of a fixed name
        if not dst.exists():
            build(src, dst, ftype, pure=pure,
                  overrides=[TensorOverride(pattern=p, type=t) for p, t in overrides])
    return dst


def _template(src: Path, dst: Path) -> Path:
    import gguf

    from edgepick.assets.bundled import build_once
    from edgepick.models.gguf_rewrite import rewrite_gguf

    return build_once(dst, lambda part: rewrite_gguf(src, part, kv_overrides={
        "tokenizer.chat_template": (TEMPLATE, gguf.GGUFValueType.STRING)}))


def _finetune(src: Path, dst: Path, blocks=("blk.0.", "blk.1.")) -> Path:
    """Every tensor of two blocks nudged by 1 % noise, re-quantized to its own type."""
    import gguf
    from gguf.quants import dequantize, quantize

    from edgepick.assets.bundled import build_once
    from edgepick.models.gguf_rewrite import rewrite_gguf

    rng = np.random.default_rng(0)

    def nudge(t):
        if not t.name.startswith(blocks):
            return None
        x = dequantize(t.data, t.tensor_type).astype(np.float32)
        x = x + rng.standard_normal(x.shape).astype(np.float32) * (np.abs(x).mean() * 0.01)
        if t.tensor_type == gguf.GGMLQuantizationType.F32:
            return x, t.tensor_type
        if t.tensor_type == gguf.GGMLQuantizationType.F16:
            return x.astype(np.float16), t.tensor_type
        return quantize(x, t.tensor_type), t.tensor_type

    return build_once(dst, lambda part: rewrite_gguf(src, part, transform=nudge))


def build_pairs(src: str, folder: Path, last_block: int = 29) -> list[tuple[str, Path, Path]]:
    """(label, old, new) for the four pairs, built from the F16 `src` into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    q4 = _quant(src, folder / "q4_0.gguf", "Q4_0")
    mixed = _quant(src, folder / "mixed.gguf", "Q4_0", pure=True,
                   overrides=[(rf"blk\.(0|1|{last_block - 1}|{last_block})\.", "Q8_0")])
    q8 = _quant(src, folder / "q8_0.gguf", "Q8_0")
    q8_out16 = _quant(src, folder / "q8_0-output-f16.gguf", "Q8_0",
                      overrides=[(r"token_embd\.weight", "F16")])
    return [("Q4_0 → mixed recipe", q4, mixed),
            ("Q8_0 → output at F16", q8, q8_out16),
            ("chat template only", q8, _template(q8, folder / "q8_0-template.gguf")),
            ("fine-tune of 2 blocks", q8, _finetune(q8, folder / "q8_0-finetune.gguf"))]
