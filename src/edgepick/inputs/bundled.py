"""The bundled model names a user may type, and the file each one resolves to.

The files come from installed packages or are derived from them once (edgepick.assets); the
onnxruntime-genai builds are converted once with the default recipe and cached (edgepick.convert).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from edgepick.assets import bundled


def smollm2_og_int4() -> Path:
    """SmolLM2 F16 converted for onnxruntime-genai, INT4 k_quant block 32 (docs/engines.md)."""
    from edgepick.convert.cache import converted

    return converted(bundled.smollm2_f16())


def tiny_og_int4() -> Path:
    """The tiny model converted for onnxruntime-genai with the same recipe, for tests."""
    from edgepick.convert.cache import converted

    return converted(bundled.tiny_f16())


BUNDLED: dict[str, Callable[[], Path]] = {
    "smollm2": bundled.smollm2_q4_1,
    "smollm2-f16": bundled.smollm2_f16,
    "gemma3-270m": bundled.gemma3_270m_q4_k_m,
    "gemma3-270m-f16": bundled.gemma3_270m_f16,
    "tiny": bundled.tiny_f16,
    "smollm2-og-int4": smollm2_og_int4,
    "tiny-og-int4": tiny_og_int4,
}
