"""A remote GGUF's ModelSpec from its parts' headers (the sparse stand-ins the header reader
wrote): the first part's metadata, every part's tensors (llama.cpp's gguf-split writes the model's
keys into the first part only, and each part's own tensors into it), the parts' sizes summed."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote, urlsplit

from edgepick.errors import EdgepickError
from edgepick.models.gguf_info import gguf_spec, read_gguf
from edgepick.models.moe import active_params
from edgepick.records.model import ModelSpec, TensorInfo
from edgepick.records.remote import RemoteFile


def _tensors(path: str) -> list[TensorInfo]:
    return [TensorInfo(name=t.name, type=t.tensor_type.name, shape=[int(d) for d in t.shape],
                       n_elements=int(t.n_elements), n_bytes=int(t.n_bytes))
            for t in read_gguf(path).tensors]


def _split_count(path: str) -> int | None:
    field = read_gguf(path).fields.get("split.count")
    return int(field.contents()) if field is not None else None


def remote_spec(remote: RemoteFile) -> ModelSpec:
    """Read once per process per resolution (a large vocabulary makes a header slow to parse)."""
    return _spec(remote.model_dump_json(exclude={"requests", "bytes_read"}))


@lru_cache(maxsize=32)
def _spec(remote_json: str) -> ModelSpec:
    remote = RemoteFile.model_validate_json(remote_json)
    first = remote.parts[0]
    spec = gguf_spec(first.header)
    stem = unquote(urlsplit(first.url).path.rsplit("/", 1)[-1]).removesuffix(".gguf")
    update = {"source": remote.ref, "file_size_bytes": remote.size}
    if spec.name == Path(first.header).stem:  # no general.name: the file's own name
        update["name"] = stem
    if len(remote.parts) > 1:
        declared = _split_count(first.header)
        if declared is not None and declared != len(remote.parts):
            raise EdgepickError(f"{remote.ref}: the first part declares {declared} parts "
                                f"(split.count), its name {len(remote.parts)}")
        tensors = list(spec.tensors)
        for part in remote.parts[1:]:
            tensors += _tensors(part.header)
        counts: dict[str, int] = {}
        for t in tensors:
            counts[t.type] = counts.get(t.type, 0) + 1
        names = {t.name for t in tensors}
        update.update(tensors=tensors, quant_types=counts,
                      n_params=sum(t.n_elements for t in tensors),
                      tied_embeddings="output.weight" not in names)
        if spec.n_experts:
            update["n_active_params"] = active_params(tensors, spec.n_experts,
                                                      spec.n_experts_used)
    return spec.model_copy(update=update)
