"""gguf's GGUFReader with array fields read in one piece.

The stock reader walks arrays element by element, building several numpy views per element; a
262k-token vocabulary (Gemma 3) then takes tens of seconds just to open the header. Here numeric
arrays become one numpy view and string arrays are split with a tight loop, producing the same
`ReaderField` parts layout, so `contents()` and everything downstream behave as before.
"""

from __future__ import annotations

import struct
from typing import Any

import gguf
import numpy as np
from gguf import GGUFValueType


class FastGGUFReader(gguf.GGUFReader):
    def _get_field_parts(self, orig_offs: int, raw_type: int):
        if GGUFValueType(raw_type) != GGUFValueType.ARRAY:
            return super()._get_field_parts(orig_offs, raw_type)
        offs = orig_offs
        raw_itype = self._get(offs, np.uint32)
        offs += int(raw_itype.nbytes)
        alen = self._get(offs, np.uint64)
        offs += int(alen.nbytes)
        itype = GGUFValueType(int(raw_itype[0]))
        count = int(alen[0])
        parts: list[Any] = [raw_itype, alen]
        nptype = self.gguf_scalar_to_np.get(itype)
        if nptype is not None:
            values = self._get(offs, nptype, count)
            parts.append(values)
            # one part holds every element; contents() flattens it
            return offs + int(values.nbytes) - orig_offs, parts, [2] if count else [], \
                [GGUFValueType.ARRAY, itype]
        if itype != GGUFValueType.STRING:
            return super()._get_field_parts(orig_offs, raw_type)
        # slices of a plain ndarray cost a fraction of a memmap's (no __array_finalize__),
        # and the lengths are read through struct: a 49k-token vocabulary plus its merges
        # otherwise takes seconds
        data = self.data.view(np.ndarray)
        order = "<" if self.byte_order == "I" else ">"
        lengths_dtype = np.dtype(f"{order}u8")
        read_length = struct.Struct(f"{order}Q").unpack_from
        raw = memoryview(data)
        idxs = []
        for _ in range(count):
            if offs + 8 > data.nbytes:
                raise ValueError("String length exceeds remaining file size")
            n = read_length(raw, offs)[0]
            slen = data[offs:offs + 8].view(lengths_dtype)
            if offs + 8 + n > data.nbytes:
                raise ValueError(f"String length {n} exceeds remaining file size")
            parts.append(slen)
            parts.append(data[offs + 8:offs + 8 + n])
            idxs.append(len(parts) - 1)
            offs += 8 + n
        return offs - orig_offs, parts, idxs, [GGUFValueType.ARRAY, GGUFValueType.STRING]


def fast_reader(path: str) -> Any:
    return FastGGUFReader(path)
