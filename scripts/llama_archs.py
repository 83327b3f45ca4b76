"""Write src/edgepick/data/llama_cpp_archs.json from the pinned llama.cpp's own source.

    python scripts/llama_archs.py [LLAMA_CPP_SOURCE_DIR] [VERSION]

The architectures the engine knows are `LLM_ARCH_NAMES` in src/llama-arch.cpp; the Hugging Face
classes it converts, and to which architecture, are the `@ModelBase.register(...)` classes of
convert_hf_to_gguf.py with their `model_arch` (inherited through base classes) named in
gguf-py's MODEL_ARCH_NAMES. scripts/build_llama_tools.sh runs this after unpacking the sdist;
tests/backends/test_engine_support.py checks the committed file against the source when the
source is there.
"""

from __future__ import annotations

import ast
import json
import os
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "src/edgepick/data/llama_cpp_archs.json"


def default_source(version: str) -> Path:
    cache = os.environ.get("EDGEPICK_CACHE", os.path.expanduser("~/.cache/edgepick"))
    return Path(cache) / f"llama.cpp-{version}" / "src" / "vendor" / "llama.cpp"


def _arch_table(src: Path) -> dict[str, str]:
    """LLM_ARCH_X -> its name, from LLM_ARCH_NAMES."""
    text = (src / "src" / "llama-arch.cpp").read_text()
    block = re.search(r"LLM_ARCH_NAMES\s*=\s*\{(.*?)\n\};", text, re.S)
    if not block:
        raise SystemExit(f"{src}/src/llama-arch.cpp: LLM_ARCH_NAMES not found")
    return dict(re.findall(r"\{\s*(LLM_ARCH_\w+)\s*,\s*\"([^\"]+)\"\s*\}", block.group(1)))


def arch_names(src: Path) -> list[str]:
    return sorted(n for n in _arch_table(src).values() if n != "(unknown)")


def swa_archs(src: Path) -> list[str]:
    """Architectures whose model reads `<arch>.attention.sliding_window` and then runs it
    (src/models/*.cpp: its load_arch_hparams sets a swa_type other than LLAMA_SWA_TYPE_NONE, so
    llama_model::create_memory builds a llama_kv_cache_iswa): only these keep a window-sized
    cache. Any other runs full attention whatever a config says: phi3 reads the window and sets
    LLAMA_SWA_TYPE_NONE ("Phi SWA is currently disabled")."""
    table = _arch_table(src)
    model_cpp = (src / "src" / "llama-model.cpp").read_text()
    cls_of = dict(re.findall(r"case (LLM_ARCH_\w+):\s*return new (llama_model_\w+)\(", model_cpp))
    reads = set()
    for f in (src / "src" / "models").glob("*.cpp"):
        text = f.read_text()
        if "LLM_KV_ATTENTION_SLIDING_WINDOW" in text and re.search(
                r"swa_type\s*=\s*LLAMA_SWA_TYPE_(?!NONE)", text):
            reads.update(re.findall(r"(llama_model_\w+)::load_arch_hparams", text))
    return sorted(table[a] for a, cls in cls_of.items() if cls in reads and a in table)


def _gguf_arch_strings(src: Path) -> dict[str, str]:
    text = (src / "gguf-py" / "gguf" / "constants.py").read_text()
    block = re.search(r"MODEL_ARCH_NAMES[^=]*=\s*\{(.*?)\n\}", text, re.S)
    return dict(re.findall(r"MODEL_ARCH\.(\w+)\s*:\s*\"([^\"]+)\"", block.group(1)))


def hf_classes(src: Path) -> dict[str, str]:
    """Hugging Face architecture class -> llama.cpp architecture, as the converter maps them."""
    names = _gguf_arch_strings(src)
    # the converter is one script in older llama.cpp, a `conversion` package in newer
    sources = sorted((src / "conversion").glob("*.py")) or [src / "convert_hf_to_gguf.py"]
    arch_of: dict[str, str | None] = {}
    bases: dict[str, list[str]] = {}
    registered: dict[str, list[str]] = {}
    nodes = [n for f in sources for n in ast.parse(f.read_text()).body]
    for node in nodes:
        if not isinstance(node, ast.ClassDef):
            continue
        bases[node.name] = [b.id for b in node.bases if isinstance(b, ast.Name)]
        for stmt in node.body:
            if (isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "model_arch"
                                                     for t in stmt.targets)
                    and isinstance(stmt.value, ast.Attribute)):
                arch_of[node.name] = stmt.value.attr
        for dec in node.decorator_list:
            if (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute)
                    and dec.func.attr == "register"):
                registered.setdefault(node.name, []).extend(
                    a.value for a in dec.args if isinstance(a, ast.Constant)
                    and isinstance(a.value, str))

    def resolve(cls: str, seen: frozenset = frozenset()) -> str | None:
        if cls in arch_of:
            return arch_of[cls]
        for b in bases.get(cls, []):
            if b not in seen:
                found = resolve(b, seen | {cls})
                if found:
                    return found
        return None

    out = {}
    for cls, hf_names in registered.items():
        member = resolve(cls)
        if member and member in names:
            for hf in hf_names:
                out[hf] = names[member]
    return dict(sorted(out.items()))


def build(src: Path, version: str) -> dict:
    return {"llama_cpp_python": version,
            "source": "llama-cpp-python sdist vendor/llama.cpp: src/llama-arch.cpp LLM_ARCH_NAMES; "
                      "the converter's registered classes (conversion/*.py)",
            "architectures": arch_names(src), "hf_architectures": hf_classes(src),
            "sliding_window_architectures": swa_archs(src)}


def main(argv: list[str]) -> int:
    version = argv[2] if len(argv) > 2 else "0.3.36"
    src = Path(argv[1]) if len(argv) > 1 else default_source(version)
    data = build(src, version)
    OUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"{OUT}: {len(data['architectures'])} architectures, "
          f"{len(data['hf_architectures'])} Hugging Face classes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
