"""A placement (records/placement.py) in process: what llama-cpp-python passes to llama.cpp, and
what it cannot.

llama-cpp-python 0.3.36's `Llama` takes `n_gpu_layers` and `tensor_split` into
llama_model_params; the params' `devices` and `tensor_buft_overrides` are declared and left
unused by its binding (llama_cpp.py: "NOTE: unused"), and it has no parameter for RPC servers,
so `--rpc`, `-ot` and `--n-cpu-moe` cannot be applied in process. Offloaded layers need a
device to go to: the backends the package ships are its shared libraries beside
`libggml-cpu` (libggml-cuda, libggml-vulkan, libggml-metal...), read from its folder without
loading the engine. A placement the engine cannot apply is refused in one line naming the
engine that can (serve's llama-server, which takes every flag of `Placement.llama_args`).
"""

from __future__ import annotations

import importlib.util
import re
from functools import lru_cache
from pathlib import Path

from edgepick.errors import EdgepickError
from edgepick.records.placement import ALL, HALF

# libggml-<backend>.so / .dylib / ggml-<backend>.dll. Not a device to offload layers to: base,
# the CPU's variants, BLAS (it computes on the CPU's buffers) and RPC (it needs servers the
# binding cannot name)
_LIB = re.compile(r"^(?:lib)?ggml-([a-z0-9_]+)[.-].*(?:so|dylib|dll)(?:\.\d+)*$")
_NOT_DEVICES = ("base", "cpu", "blas", "rpc")
ELSEWHERE = "the llama_server engine applies it (give the model `backend: llama_server`)"


@lru_cache(maxsize=1)
def offload_backends() -> tuple[str, ...]:
    """The ggml backends beside the CPU that the installed llama-cpp-python ships."""
    try:
        spec = importlib.util.find_spec("llama_cpp")
    except (ImportError, ValueError):
        return ()
    if spec is None or spec.origin is None:
        return ()
    lib = Path(spec.origin).parent / "lib"
    names = {m.group(1) for f in (lib.iterdir() if lib.is_dir() else [])
             if (m := _LIB.match(f.name))}
    return tuple(sorted(n for n in names if not n.startswith(_NOT_DEVICES)))


def placement_problem(settings) -> str | None:
    """Why the in-process engine cannot run `settings`' placement, in one line; None when it
    can (no placement, every tensor on the CPU, or layers and a split it has a device for)."""
    p = settings.placement
    if p is None or p.on_cpu_only:
        return None
    cannot = [flag for flag, given in (("--rpc", p.rpc), ("-ot", p.tensor_overrides),
                                       ("--n-cpu-moe", p.n_cpu_moe)) if given]
    if cannot:
        return (f"llama-cpp-python passes no {', '.join(cannot)} to llama.cpp (its Llama has "
                f"no such parameter); {ELSEWHERE}")
    if not offload_backends():
        return (f"this llama-cpp-python build has no backend beside the CPU, so -ngl "
                f"{p.n_gpu_layers} would run every layer on the CPU; {ELSEWHERE}")
    return None


def placement_args(settings) -> dict:
    """llama-cpp-python's Llama arguments for `settings`' placement ({} without one)."""
    p = settings.placement
    if p is None or p.on_cpu_only:
        return {}
    problem = placement_problem(settings)
    if problem:
        raise EdgepickError(problem)
    if p.n_gpu_layers == HALF:
        raise EdgepickError("n_gpu_layers half: a count of layers is read from the model where "
                            "a plan is read; give a number")
    return {"n_gpu_layers": -1 if p.n_gpu_layers == ALL else int(p.n_gpu_layers),
            "tensor_split": list(p.tensor_split) or None}
