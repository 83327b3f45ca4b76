"""A replay of ggml's scheduler and graph allocator over a model's prompt graph, to size each
backend's compute buffer where a model is split across devices.

It follows the pinned llama.cpp, ggml/src:
- ggml-backend.cpp, `ggml_backend_sched_split_graph`: an op runs on the backend of its weight
  (not ROPE or FLASH_ATTN_EXT), of the tensor it writes into (a KV cache view); the others take
  a non-CPU neighbour's backend (expanded down, then up), else the CPU's; the graph is cut where
  the backend changes and every tensor a split reads from another backend is copied into the
  split's backend, one copy per tensor and backend, added to the graph at the start of the
  split after a dependency that keeps the original alive until then;
- ggml-alloc.c, `ggml_gallocr_alloc_graph_impl`: leafs first (the graph inputs), then each node
  in order, in place on a parent when the op allows it and the parent is its own (never a view)
  with no other reader; a tensor is freed after its last reader (a view's source after the
  last reader of its views); `ggml_dyn_tallocr_alloc` takes the smallest free block that fits
  (the last of equal ones), else the end of the buffer, and the buffer is the highest end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ALIGN = 32
VIEW_OPS = {"VIEW", "RESHAPE", "PERMUTE", "TRANSPOSE"}
INPLACE = {"ADD", "MUL", "DIV", "SCALE", "UNARY", "ROPE", "RMS_NORM", "CLAMP", "SOFT_MAX"}


@dataclass(eq=False)
class T:
    """A tensor of the graph: its bytes, op, sources and, for a view, its root."""

    name: str
    nbytes: int
    op: str = "NONE"
    srcs: list[T] = field(default_factory=list)
    view_src: T | None = None
    backend: int = -1
    weight: bool = False  # in a weights buffer: ops that read it run where it is
    external: bool = False  # has its own buffer (weights, KV cache)
    output: bool = False
    layout: tuple = ()


def view(t: T, op: str = "VIEW", nbytes: int | None = None, layout: tuple = ()) -> T:
    root = t.view_src or t
    return T(f"{t.name}({op.lower()})", t.nbytes if nbytes is None else nbytes, op, [t],
             view_src=root, layout=layout or t.layout)


class _Dyn:
    """`ggml_dyn_tallocr` with one chunk: free blocks sorted by offset, the last unbounded."""

    def __init__(self) -> None:
        self.blocks: list[list[int]] = [[0, 1 << 62]]
        self.max_size = 0

    def alloc(self, size: int) -> int:
        size = -(-size // ALIGN) * ALIGN
        best, best_size = -1, 1 << 63
        for i, (_, bsize) in enumerate(self.blocks[:-1]):
            if size <= bsize <= best_size:
                best, best_size = i, bsize
        if best == -1:
            best = len(self.blocks) - 1
        block = self.blocks[best]
        addr = block[0]
        block[0] += size
        block[1] -= size
        if block[1] == 0:
            del self.blocks[best]
        self.max_size = max(self.max_size, addr + size)
        return addr

    def free(self, addr: int, size: int) -> None:
        size = -(-size // ALIGN) * ALIGN
        blocks = self.blocks
        for i, block in enumerate(blocks):
            if block[0] + block[1] == addr:
                block[1] += size
                if i + 1 < len(blocks) and block[0] + block[1] == blocks[i + 1][0]:
                    block[1] += blocks[i + 1][1]
                    del blocks[i + 1]
                return
            if addr + size == block[0]:
                block[0] = addr
                block[1] += size
                if i > 0 and blocks[i - 1][0] + blocks[i - 1][1] == block[0]:
                    blocks[i - 1][1] += block[1]
                    del blocks[i]
                return
        pos = next((i for i, b in enumerate(blocks) if b[0] >= addr), len(blocks))
        blocks.insert(pos, [addr, size])


def _assign(nodes: list[T], cpu: int) -> None:
    """Passes 1-4 of `ggml_backend_sched_split_graph`."""
    for n in nodes:
        if n.backend != -1:
            continue
        if n.view_src is not None and n.view_src.external:
            n.backend = n.view_src.backend
        elif n.op not in ("ROPE", "FLASH_ATTN_EXT"):
            n.backend = next((s.backend for s in n.srcs if s.weight), -1)
    ops = [n for n in nodes if n.op not in VIEW_OPS]
    for order, skip_cpu in ((ops, True), (ops[::-1], True), (ops, False), (ops[::-1], False)):
        cur = -1
        for n in order:
            if n.backend != -1:
                cur = -1 if skip_cpu and n.backend == cpu else n.backend
            elif cur != -1:
                n.backend = cur
    for n in nodes:
        if n.backend == -1:
            n.backend = n.view_src.backend if n.view_src is not None else cpu


def _split(nodes: list[T]) -> list[T]:
    """Pass 5 and the graph copy: the nodes in order, each split's input copies first."""
    copies: dict[tuple[int, int], T] = {}
    starts: list[tuple[int, int, list[T]]] = []  # (first node, backend, inputs)
    for i, n in enumerate(nodes):
        if n.op in VIEW_OPS:
            continue
        if not starts or n.backend != starts[-1][1]:
            starts.append((0 if not starts else i, n.backend, []))
        backend, inputs = starts[-1][1], starts[-1][2]
        for j, s in enumerate(n.srcs):
            if s.backend == backend:
                continue
            key = (id(s), backend)
            if key not in copies:
                copies[key] = T(f"{s.name}#{backend}", s.nbytes, backend=backend,
                                layout=s.layout)
                inputs.append(s)
            n.srcs[j] = copies[key]
    out: list[T] = []
    for k, (start, backend, inputs) in enumerate(starts):
        for s in inputs:
            out.append(T(f"{s.name}#dep", 0, "NONE", [s], view_src=s.view_src or s,
                         backend=s.backend))
            out.append(copies[(id(s), backend)])
        end = starts[k + 1][0] if k + 1 < len(starts) else len(nodes)
        out.extend(nodes[start:end])
    return out


def replay(nodes: list[T], leafs: list[T], n_backends: int) -> list[int]:
    """Each backend's compute buffer (bytes) for the graph; the CPU is the last backend."""
    _assign(nodes, n_backends - 1)
    graph = _split(nodes)
    bufs = [_Dyn() for _ in range(n_backends)]
    children: dict[int, int] = {}
    views: dict[int, int] = {}
    where: dict[int, tuple[int, int]] = {}  # own tensors alive: id -> (backend, offset)

    def allocate(t: T, backend: int) -> None:
        if t.external or t.view_src is not None or id(t) in where:
            return
        if t.op in INPLACE:
            for p in t.srcs:
                if id(p) in where and not p.output and p.layout == t.layout \
                        and children.get(id(p), 0) == 1 and views.get(id(p), 0) == 0:
                    where[id(t)] = where.pop(id(p))
                    return
        where[id(t)] = (backend, bufs[backend].alloc(t.nbytes))

    def free(t: T) -> None:
        if not t.output and id(t) in where:
            backend, addr = where.pop(id(t))
            bufs[backend].free(addr, t.nbytes)

    for leaf in leafs:
        allocate(leaf, leaf.backend)
    for n in graph:
        if n.view_src is not None and n.op != "NONE":
            views[id(n.view_src)] = views.get(id(n.view_src), 0) + 1
        for s in n.srcs:
            children[id(s)] = children.get(id(s), 0) + 1
    for n in graph:
        for s in n.srcs:
            allocate(s, n.backend)
        allocate(n, n.backend)
        for p in n.srcs:
            children[id(p)] -= 1
            if children[id(p)] or views.get(id(p), 0):
                continue
            if p.view_src is not None:
                root = p.view_src
                views[id(root)] -= 1
                if not views[id(root)] and not children.get(id(root), 0):
                    free(root)
            else:
                free(p)
    return [b.max_size for b in bufs]
