"""Run every benchmark module here (`python -m benchmarks [name ...]`), each through its main()."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time

import benchmarks


def main(argv: list[str]) -> int:
    names = sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__)
                   if not m.name.startswith("_"))
    chosen = [n for n in names if not argv or n in argv]
    unknown = set(argv) - set(names)
    if unknown:
        print(f"unknown benchmark(s): {', '.join(sorted(unknown))}; known: {', '.join(names)}")
        return 2
    failed = []
    for name in chosen:
        print(f"\n=== benchmarks/{name}.py ===", flush=True)
        t0 = time.perf_counter()
        rc = importlib.import_module(f"benchmarks.{name}").main()
        print(f"=== {name}: {'ok' if not rc else 'TARGET MISSED'} in {time.perf_counter() - t0:.0f} s")
        if rc:
            failed.append(name)
    if failed:
        print(f"\nbenchmarks that missed their targets: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
