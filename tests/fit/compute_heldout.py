"""Held-out shapes for fit's per-device compute buffers (fit/device_compute.py): fit against what
llama-server logs with an rpc-server on 127.0.0.1 as the second device, on shapes and settings
test_placement_rpc.py does not run. Not collected by pytest (twenty servers); run it by hand:

    heavy .venv/bin/python tests/fit/compute_heldout.py [1|2|3|4|5|6]

Sets 1 and 2 were measured against the earlier rules; sets 3 and 4 after the replay
(fit/alloc_replay.py) was written and set 5 (Gemma-3) after its graph was, each before its
numbers were looked at (docs/placement.md reports each)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parents[1])]

from edgepick.assets import bundled  # noqa: E402
from edgepick.assets.synthetic import synthetic_llama  # noqa: E402
from edgepick.devices.catalog import load_device  # noqa: E402
from edgepick.fit.device_plan import plan_placement  # noqa: E402
from edgepick.fit.planner import plan_tensors  # noqa: E402
from edgepick.models.gguf_info import gguf_spec  # noqa: E402
from llama_placement_log import rpc_server, server_allocations  # noqa: E402
from synthetic_moe import synthetic_qwen3moe  # noqa: E402
from test_placement_rpc import EXPS, _placement  # noqa: E402

MIB = 2**20


def _llama(e, ff, n, heads, kv):
    return lambda: synthetic_llama(n_embd=e, n_ff=ff, n_layers=n, n_head=heads, n_head_kv=kv)


def _moe(e, n, heads, kv, experts, used, ff):
    return lambda: synthetic_qwen3moe(n_embd=e, n_layers=n, n_head=heads, n_head_kv=kv,
                                      n_expert=experts, n_used=used, n_ff_exp=ff)


def _args(text: str) -> list[str]:
    return [EXPS if a == "EXPS" else a for a in text.split()]


MODELS = {"d768": _llama(768, 2048, 6, 12, 4), "d512": _llama(512, 1536, 4, 8, 2),
          "m512": _moe(512, 4, 8, 2, 4, 2, 512), "d896": _llama(896, 2560, 4, 14, 2),
          "d576": _llama(576, 1536, 7, 9, 3), "m256": _moe(256, 3, 4, 2, 8, 2, 256),
          "m448": _moe(448, 3, 7, 1, 4, 1, 640), "d1024": _llama(1024, 2816, 3, 16, 4),
          "d384": _llama(384, 1024, 6, 6, 2), "m320": _moe(320, 4, 5, 1, 6, 3, 384),
          "m640": _moe(640, 2, 10, 2, 4, 2, 1024), "m384": _moe(384, 3, 6, 2, 16, 4, 192),
          "m192": _moe(192, 5, 3, 1, 8, 2, 512), "d704": _llama(704, 1920, 4, 11, 1),
          "d256": _llama(256, 768, 8, 4, 4), "g270": bundled.gemma3_270m_f16,
          "s135": bundled.smollm2_f16, "s135q": bundled.smollm2_q4_1}
# placements split by `;`: the model, then llama-server's flags
SETS = {"1": """d768 -ngl all -c 3000 -fa off; d768 -ngl 3 -c 1200 -fa off; d768 -ngl 4 -c 2500;
                d512 -ngl 2 -c 2000 -fa off; d512 -ngl all -c 800; d512 -ngl 1 -c 1000;
                m512 -ngl all -c 1000 -ot EXPS; m512 -ngl all -c 1000 --n-cpu-moe 2;
                m512 -ngl 2 -c 1500 -fa off; m512 -ngl all -c 2000 -fa off -ot EXPS""",
        "2": """d896 -ngl 2 -c 1800 -fa off; d896 -ngl all -c 1000 -fa off; d896 -ngl 3 -c 3000;
                d576 -ngl 5 -c 2200; d576 -ngl all -c 4000 -fa off; d576 -ngl 4 -c 900 -fa off;
                m256 -ngl all -c 1500 -fa off --n-cpu-moe 1; m256 -ngl 2 -c 1200;
                m448 -ngl all -c 1500 -fa off -ot EXPS; m448 -ngl 3 -c 2500 -fa off""",
        "3": """d1024 -ngl 2 -c 1000; d1024 -ngl all -c 1700 -fa off; d384 -ngl 4 -c 3000 -fa off;
                d384 -ngl 6 -c 600; d384 -ngl 1 -c 2000 -fa off;
                m320 -ngl all -c 1300 --n-cpu-moe 3; m320 -ngl 3 -c 2200 -fa off;
                m320 -ngl all -c 700 -ot EXPS; m640 -ngl 2 -c 1600;
                m640 -ngl all -c 1200 -fa off --n-cpu-moe 1""",
        "4": """m384 -ngl all -c 900 --n-cpu-moe 2; m384 -ngl 2 -c 1400 -fa off;
                m384 -ngl all -c 2100 -fa off -ot EXPS; m192 -ngl 3 -c 1000;
                m192 -ngl all -c 2500 -fa off --n-cpu-moe 4; d704 -ngl 3 -c 2300 -fa off;
                d704 -ngl all -c 1100; d256 -ngl 5 -c 4000; d256 -ngl 2 -c 700 -fa off;
                d256 -ngl all -c 3500 -fa off""",
        "5": """g270 -ngl 1 -c 2000; g270 -ngl 7 -c 1200 -fa off; g270 -ngl 17 -c 6000;
                g270 -ngl all -c 800 -fa off; g270 -ngl 13 -c 4500""",
        "6": """s135 -ngl 10 -c 2048; s135 -ngl all -c 1000 -fa off; s135q -ngl 1 -c 3000;
                s135q -ngl 20 -c 1500 -fa off; s135q -ngl all -c 4096"""}


def main(which: str) -> None:
    ok = n = 0
    with rpc_server() as ep:
        for case in SETS[which].split(";"):
            key, text = case.split(None, 1)
            path, args = MODELS[key](), _args(text)
            spec = gguf_spec(str(path))
            tensors, _, _ = plan_tensors(spec, None)
            placement, n_ctx, fa = _placement(args, f"RPC0[{ep}]")
            plan = plan_placement(spec, tensors, n_ctx, placement, load_device("laptop-16gb-cpu"),
                                  flash_attn=fa, n_outputs_max=1)
            got = server_allocations(path, ep, args)["buffers"]
            for dev in plan.devices:
                row = "Host" if dev.name == "CPU" else "RPC0"
                want, fit = got.get(row, {}).get("compute", 0.0), dev.compute_bytes / MIB
                err = (fit - want) / want if want else 0.0
                n += 1
                ok += abs(err) <= 0.03 or abs(fit - want) <= 0.02
                print(f"{path.name[:40]:40s} {text:36s} {row}: fit {fit:6.2f} MiB, "
                      f"llama.cpp {want:6.2f} ({err:+.1%})", flush=True)
    print(f"within 3%: {ok}/{n}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "6")
