"""What memory a running model needs, measured (docs/metrics.md): the counterpart of fit/need.py.

Inside the worker, after the model has loaded, the accessed bits of every page are cleared
(/proc/self/clear_refs); the prompt and the decode then set them again on what they touch. The
need is the anonymous memory at its peak (RssAnon: KV cache, compute buffers, repacked copies,
the runtime's heap) plus the file-backed pages referenced while running (mapped weights a token
reads, library code), never the mapped pages only the load read (repacked originals). With
`use_mmap=False` nothing is mapped and the need is the whole resident set, VmHWM.

The accessed bit over-counts a little: an x86 CPU may set it on pages it only fetched
speculatively (next to a routed expert a token did read).
"""

from __future__ import annotations

from edgepick.backends import get_backend
from edgepick.bench.workload import prompt_of_length
from edgepick.launch.isolated import clear_referenced, own_rss_split, referenced_file_bytes
from edgepick.records.candidate import Candidate


def after_load() -> None:
    """Call once the model has loaded: what the load alone read stops counting as read."""
    clear_referenced()


def split_now(model_path: str | None = None) -> dict:
    """RssAnon, RssFile and VmHWM now, and the file pages referenced since after_load (all
    mappings, and the model file's alone)."""
    out = own_rss_split()
    out["file_read"] = referenced_file_bytes()
    out["model_file_read"] = referenced_file_bytes(model_path) if model_path else None
    return out


def need_bytes(anon_peak: int | None, file_read: int | None, hwm: int | None,
               mmap: bool) -> int | None:
    """Measured need: peak anonymous memory + file pages read while running (mmap), or the
    high-water mark (no mmap, where every weight is anonymous)."""
    if not mmap:
        return hwm or None
    if not anon_peak or file_read is None:
        return None
    return anon_peak + file_read


def measure_need(candidate: dict, prompt_tokens: int = 128, gen_tokens: int = 64) -> dict:
    """Load, prefill `prompt_tokens`, decode `gen_tokens`, and report the split (a worker
    function for launch.run_isolated)."""
    cand = Candidate.model_validate(candidate)
    backend = get_backend(cand.backend)
    backend.load(cand)
    try:
        after_load()
        tokens = prompt_of_length(backend.tokenize, prompt_tokens)
        backend.generate(tokens, max_tokens=gen_tokens, ignore_eos=True)
        out = split_now(cand.model)
    finally:
        backend.unload()
    return out
