"""`edgepick inspect`: a model's shape from its GGUF header or config.json."""

from __future__ import annotations

from typing import Optional

import typer
from rich.table import Table

from edgepick.cli.options import one_model
from edgepick.cli.output import console, human_bytes, print_json
from edgepick.cli.remote_text import say_remote
from edgepick.fit.planner import plan_tensors
from edgepick.fit.speed import weights_read_per_token
from edgepick.inputs import resolve_ref
from edgepick.models.spec import load_spec


def register(app: typer.Typer) -> None:
    @app.command()
    def inspect(model: Optional[list[str]] = typer.Option(
                    None, "--model", "-m", help="GGUF file, config.json, bundled name, or a GGUF "
                    "where it lives (https://…/x.gguf, hf:ORG/REPO/FILE.gguf[@REV])"),
                positional: Optional[str] = typer.Argument(None, hidden=True),
                json_out: bool = typer.Option(False, "--json", help="print JSON"),
                tensors: bool = typer.Option(False, "--tensors", help="list every tensor")) -> None:
        """Read a model's architecture and per-tensor quant types (header only; no weights)."""
        ref = resolve_ref(one_model(model, positional, "model"), remote_ok=True)
        say_remote([ref])
        spec = load_spec(ref)
        data = spec.model_dump(mode="json")
        data["weights_bytes"] = spec.weights_bytes
        data["bits_per_weight"] = spec.bits_per_weight
        data["n_active_params"] = spec.active_params
        data["bytes_per_token"] = _weights_read(spec)
        if json_out:
            if not tensors:
                data.pop("tensors")
            print_json(data)
            return
        t = Table(title=f"{spec.name}  ({spec.source_kind}: {spec.source})", show_header=False)
        kv = spec.n_kv_heads
        kv_text = str(kv[0]) if len(set(kv)) == 1 else ",".join(map(str, kv))
        rows = [
            ("architecture", spec.architecture),
            ("parameters", f"{spec.n_params:,} ({spec.n_params / 1e6:.1f} M)"),
            *([("experts", f"{spec.n_experts_used} of {spec.n_experts} routed per token"
                + (f", {spec.n_shared_experts} shared" if spec.n_shared_experts else "")),
               ("active parameters", f"{spec.active_params:,} ({spec.active_params / 1e6:.1f} M)")]
              if spec.n_experts else []),
            *([("attention", f"multi-head latent (kv_lora_rank {spec.kv_lora_rank}): the "
                             "cache holds the latent, no V")] if spec.kv_lora_rank else []),
            ("layers", spec.n_layers), ("embedding", spec.n_embd),
            ("attention heads", spec.n_heads), ("KV heads", kv_text),
            ("head size (K / V)", f"{spec.head_dim_k} / {spec.head_dim_v}"),
            ("sliding window", "none" if not spec.sliding_window else
             f"{spec.sliding_window} tokens on {len(spec.swa_layers)} of {spec.n_layers} layers "
             f"(global: {[i for i in range(spec.n_layers) if i not in spec.swa_layers]})"),
            ("context length", spec.context_length), ("vocabulary", spec.vocab_size),
            ("tied embeddings", spec.tied_embeddings),
            ("file type", spec.file_type or "-"),
            ("tensor types", ", ".join(f"{k}×{v}" for k, v in sorted(spec.quant_types.items()))),
            ("weights", human_bytes(spec.weights_bytes)),
            ("file size", human_bytes(spec.file_size_bytes)
             + (f" in {len(ref.remote.parts)} parts" if ref.remote and len(ref.remote.parts) > 1
                else "")),
            ("bits per weight", f"{spec.bits_per_weight:.2f}" if spec.bits_per_weight else "-"),
            ("weights read per token", human_bytes(data["bytes_per_token"])),
        ]
        for k, v in rows:
            t.add_row(k, str(v))
        console.print(t)
        for note in spec.approximations:
            console.print(f"[yellow]approximated:[/] {note}")
        if tensors:
            tt = Table("tensor", "type", "shape", "bytes")
            for ti in spec.tensors:
                tt.add_row(ti.name, ti.type, "×".join(map(str, ti.shape)), human_bytes(ti.n_bytes))
            console.print(tt)


def _weights_read(spec) -> int:
    """Weight bytes one decoded token reads at the file's own types (no KV cache): an MoE
    model's active experts only."""
    read = weights_read_per_token(plan_tensors(spec, None)[0], spec.n_experts, spec.n_experts_used)
    return sum(t.n_bytes for t in read)
