"""Update package size against the full file and against `zstd --patch-from` (issue 39).

The four version pairs of the issue's "Done when", built from the bundled SmolLM2-135M (the
exact F16 dequantization of its Q4_1) by llama.cpp's own quantizer and `gguf`
(tests/update_pairs.py): Q4_0 → the mixed-precision recipe build; Q8_0 → Q8_0 with the output
matrix (tied to token_embd.weight) at F16; a chat-template-only change; a "fine-tune" of two
blocks. For each: the new file's size, our package's, Debian zstd's `--patch-from=OLD NEW`
(level 3, its default, and level 19 with --long), the time to make and to apply ours, and
whether apply rebuilt NEW byte for byte. Targets: every package rebuilds NEW exactly and is
no larger than the full file; a template-only change ships under 1 MiB.

Run: .venv/bin/python -m benchmarks.update_size [--no-zstd19]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"


def _zstd(old: Path, new: Path, out: Path, level: int) -> int | None:
    exe = shutil.which("zstd")
    if exe is None:
        return None
    argv = [exe, "-q", "-f", f"-{level}", f"--patch-from={old}", str(new), "-o", str(out)]
    if level > 19:
        argv.insert(2, "--ultra")
    if level >= 19:
        argv.insert(2, "--long=31")
    subprocess.run(argv, check=True)
    return out.stat().st_size


def _mib(n: int | None) -> str:
    return "-" if n is None else f"{n / 2**20:8.2f} MiB"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-zstd19", action="store_true", help="skip zstd level 19 (slow)")
    args = ap.parse_args(argv if argv is not None else [])
    sys.path.insert(0, str(TESTS))
    from update_pairs import build_pairs

    from edgepick.assets.bundled import cache_dir, smollm2_f16
    from edgepick.update.apply import apply
    from edgepick.update.diff import diff

    if shutil.which("zstd") is None:
        print("zstd not found (Debian: apt-get install -y zstd); its column stays empty")
    pairs = build_pairs(str(smollm2_f16()), cache_dir() / "update-pairs-smollm2")
    missed = []
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        for label, old, new in pairs:
            t0 = time.perf_counter()
            r = diff(old, new, t / "u.epd")
            made = time.perf_counter() - t0
            t0 = time.perf_counter()
            apply(old, r.path, t / "rebuilt.gguf")
            applied = time.perf_counter() - t0
            exact = (t / "rebuilt.gguf").read_bytes() == new.read_bytes()
            z3 = _zstd(old, new, t / "z3.zst", 3)
            z19 = None if args.no_zstd19 else _zstd(old, new, t / "z19.zst", 19)
            rows.append((label, new.stat().st_size, r.size, z3, z19, r.shipped, r.referenced,
                         made, applied, exact))
            if not exact or r.size > new.stat().st_size:
                missed.append(label)
            if label == "chat template only" and r.size >= 2**20:
                missed.append(label + " (≥ 1 MiB)")
            (t / "rebuilt.gguf").unlink()
    print(f"{'pair':24} {'new file':>12} {'package':>12} {'share':>6} {'zstd -3':>12} "
          f"{'zstd -19':>12} {'shipped/ref':>11} {'diff s':>6} {'apply s':>7} exact")
    for label, full, pkg, z3, z19, shipped, ref, made, applied, exact in rows:
        print(f"{label:24} {_mib(full):>12} {_mib(pkg):>12} {pkg / full:6.1%} {_mib(z3):>12} "
              f"{_mib(z19):>12} {f'{shipped}/{ref}':>11} {made:6.1f} {applied:7.1f} "
              f"{'yes' if exact else 'NO'}")
    if missed:
        print("targets missed: " + ", ".join(missed))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
