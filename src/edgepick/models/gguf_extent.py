"""How many bytes a GGUF's header takes (metadata and tensor index), from its first bytes.

A remote header is read in growing ranges; this walks the layout (llama.cpp's gguf.cpp,
`gguf_init_from_file_impl`: magic, version, counts, key/value pairs, tensor infos) only far
enough to learn where the index ends, and says how many more bytes it needs when the bytes run
out. It reads no value: the header itself is parsed by the one GGUF reader (gguf_info.py) once
it is complete.
"""

from __future__ import annotations

import struct

from gguf import GGUFValueType

from edgepick.errors import EdgepickError

MAGIC = b"GGUF"
# bytes of each scalar value type (gguf.cpp's GGUF_TYPE_SIZE)
_SCALAR = {GGUFValueType.UINT8: 1, GGUFValueType.INT8: 1, GGUFValueType.UINT16: 2,
           GGUFValueType.INT16: 2, GGUFValueType.UINT32: 4, GGUFValueType.INT32: 4,
           GGUFValueType.FLOAT32: 4, GGUFValueType.BOOL: 1, GGUFValueType.UINT64: 8,
           GGUFValueType.INT64: 8, GGUFValueType.FLOAT64: 8}
_MAX_COUNT = 1 << 32  # far above any real model's keys, tensors or array length


class NeedMore(Exception):
    """The header goes on past the bytes given: at least `at_least` bytes are needed."""

    def __init__(self, at_least: int) -> None:
        super().__init__(at_least)
        self.at_least = at_least


class _Cursor:
    def __init__(self, data: bytes, order: str) -> None:
        self.data, self.order, self.pos = data, order, 0

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.data):
            raise NeedMore(end)
        chunk = self.data[self.pos:end]
        self.pos = end
        return chunk

    def skip(self, n: int) -> None:
        self.pos += n
        if self.pos > len(self.data):
            raise NeedMore(self.pos)

    def u32(self) -> int:
        return struct.unpack(self.order + "I", self.take(4))[0]

    def u64(self) -> int:
        return struct.unpack(self.order + "Q", self.take(8))[0]

    def count(self, what: str) -> int:
        n = self.u64()
        if n > _MAX_COUNT:
            raise EdgepickError(f"corrupt GGUF header: {what} count {n} at byte {self.pos - 8}")
        return n

    def string(self) -> None:
        self.skip(self.count("string length"))


def _value(cur: _Cursor, raw_type: int) -> None:
    try:
        vtype = GGUFValueType(raw_type)
    except ValueError:
        raise EdgepickError(f"corrupt GGUF header: value type {raw_type} at byte "
                            f"{cur.pos - 4}") from None
    if vtype == GGUFValueType.STRING:
        cur.string()
    elif vtype == GGUFValueType.ARRAY:
        item = cur.u32()
        n = cur.count("array")
        size = _SCALAR.get(item)
        if size is not None:
            cur.skip(n * size)
        else:
            for _ in range(n):
                _value(cur, item)
    else:
        cur.skip(_SCALAR[vtype])


def header_extent(data: bytes) -> int:
    """The byte where the tensor index ends (the data section starts at the next alignment
    boundary). Raises NeedMore when `data` stops short of it, EdgepickError when the bytes are
    not a GGUF header."""
    if len(data) < 4:
        raise NeedMore(4)
    if data[:4] != MAGIC:
        raise EdgepickError(f"not a GGUF file (magic {data[:4]!r}, expected {MAGIC!r})")
    cur = _Cursor(data, "<")
    cur.skip(4)
    version = cur.u32()
    if version & 0xFFFF == 0:  # written on a machine of the other byte order (gguf_reader.py)
        cur.order = ">"
        version = struct.unpack(">I", struct.pack("<I", version))[0]
    if version not in (2, 3):
        raise EdgepickError(f"GGUF version {version}: only versions 2 and 3 are read")
    n_tensors = cur.count("tensor")
    n_kv = cur.count("key/value")
    for _ in range(n_kv):
        cur.string()
        _value(cur, cur.u32())
    for _ in range(n_tensors):
        cur.string()
        n_dims = cur.u32()
        if n_dims > 8:
            raise EdgepickError(f"corrupt GGUF header: a tensor with {n_dims} dimensions")
        cur.skip(8 * n_dims + 4 + 8)
    return cur.pos
