"""Write a new GGUF from an existing one: tensors dropped, replaced or copied, metadata changed.

Used to cut few-block test models, to dequantize a file to F16, and to assemble mixed-precision
files from whole-file quantizations. Tensor bytes that are copied stay exactly as llama.cpp wrote
them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

import gguf
import numpy as np

from edgepick.models.gguf_fast_reader import fast_reader

# (data, ggml type or None to infer from the numpy dtype) or None to copy the tensor unchanged.
TensorTransform = Callable[[Any], "tuple[np.ndarray, Any] | None"]


def rewrite_gguf(src: Any, dst: str | Path, *,
                 keep: Callable[[str], bool] = lambda name: True,
                 transform: TensorTransform | None = None,
                 kv_overrides: dict[str, tuple] | None = None,
                 rename: Callable[[str], str] | None = None) -> Path:
    """`kv_overrides` maps a key to (value, GGUFValueType), or (value, ARRAY, element type) for
    a new array key. `rename` gives a kept tensor its name in the new file. The file is written
    atomically. `src` may be an open GGUFReader, so that many files can be written from one
    parse."""
    reader = src if isinstance(src, gguf.GGUFReader) else fast_reader(str(src))
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    dst = Path(dst)
    tmp = dst.with_name(dst.name + f".tmp{os.getpid()}")
    writer = gguf.GGUFWriter(str(tmp), arch=arch, endianess=reader.endianess)
    overrides = dict(kv_overrides or {})
    alignment = reader.fields.get(gguf.Keys.General.ALIGNMENT)
    if alignment is not None:
        writer.data_alignment = alignment.contents()
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        val_type = field.types[0]
        sub_type = field.types[-1] if val_type == gguf.GGUFValueType.ARRAY else None
        if field.name in overrides:
            value, vtype, *element = overrides.pop(field.name)
            writer.add_key_value(field.name, value, vtype,
                                 sub_type=element[0] if element else sub_type)
        else:
            writer.add_key_value(field.name, field.contents(), val_type, sub_type=sub_type)
    for key, (value, vtype, *element) in overrides.items():
        writer.add_key_value(key, value, vtype, sub_type=element[0] if element else None)

    plan: list[tuple[str, np.ndarray, Any]] = []
    for tensor in reader.tensors:
        if not keep(tensor.name):
            continue
        new = transform(tensor) if transform else None
        name = rename(tensor.name) if rename else tensor.name
        if new is None:
            plan.append((name, tensor.data, tensor.tensor_type))
        else:
            plan.append((name, new[0], new[1]))
    for name, data, qtype in plan:
        writer.add_tensor_info(name, data.shape, data.dtype, data.nbytes, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for _, data, _ in plan:
        writer.write_tensor_data(data)
    writer.close()
    os.replace(tmp, dst)
    return dst


def dequantize_tensor_f16(tensor: Any) -> tuple[np.ndarray, Any] | None:
    """Dequantize a quantized tensor to F16 (2-D and larger) or leave F32 vectors as they are."""
    qtype = tensor.tensor_type
    if qtype in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
        return None
    data = gguf.quants.dequantize(tensor.data, qtype)
    if data.ndim == 1:
        return data.astype(np.float32), gguf.GGMLQuantizationType.F32
    return data.astype(np.float16), gguf.GGMLQuantizationType.F16
