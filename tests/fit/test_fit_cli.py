"""`edgepick fit`: the JSON contract, verdicts against a device budget, exact vs predicted weights."""

import json

import yaml

from edgepick.devices.catalog import catalog

FIELDS = {"model", "quant", "ctx", "weights_bytes", "kv_cache_bytes", "overhead_bytes",
          "total_bytes", "budget_bytes", "verdict", "decode_tps_bound", "decode_tps_estimate",
          "prefill_tps_estimate", "n_params", "n_active_params", "bytes_per_token",
          "memory_anon_bytes", "memory_file_bytes", "reclaimable_bytes"}


def device_file(tmp_path, budget: str, bandwidth: float = 10.0):
    path = tmp_path / "dev.yaml"
    path.write_text(yaml.safe_dump({"name": "test-board", "total_ram": "4GiB",
                                    "model_budget": budget, "bandwidth_gbps": bandwidth,
                                    "compute_gflops": 100, "cpu_features": ["neon"]}))
    return str(path)


def test_fit_json_contract_and_exact_weights(cli, tmp_path, smollm2_q4_1):
    r = cli("fit", "--model", smollm2_q4_1, "--quant", "native,Q8_0,Q4_0", "--ctx", "512,2048",
            "--device", device_file(tmp_path, "1GiB"), "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert len(rows) == 6
    for row in rows:
        assert FIELDS <= set(row)
        # the need: everything resident but the mapped pages never read after load
        assert row["total_bytes"] == (row["weights_bytes"] + row["kv_cache_bytes"]
                                      + row["overhead_bytes"] - row["reclaimable_bytes"])
        assert row["total_bytes"] == row["memory_anon_bytes"] + row["memory_file_bytes"]
    native = [x for x in rows if x["quant"] == "Q4_1"]
    assert native and all(x["weights_exact"] for x in native)
    # the file's own tensor bytes, not params × bpw
    from edgepick.models.gguf_info import gguf_spec

    assert native[0]["weights_bytes"] == gguf_spec(smollm2_q4_1).weights_bytes
    # KV grows 4× with the context; weights do not change
    small, large = sorted(native, key=lambda x: x["ctx"])
    assert large["kv_cache_bytes"] == 4 * small["kv_cache_bytes"]
    # Q8_0 weights are heavier than Q4_0 and decode slower at the same bandwidth
    q8 = next(x for x in rows if x["quant"] == "Q8_0" and x["ctx"] == 512)
    q4 = next(x for x in rows if x["quant"] == "Q4_0" and x["ctx"] == 512)
    assert q8["weights_bytes"] > q4["weights_bytes"]
    assert q8["decode_tps_bound"] < q4["decode_tps_bound"]


def test_verdicts_follow_the_margin(cli, tmp_path, smollm2_q4_1):
    def verdict(budget, margin="0.2"):
        r = cli("fit", "--model", smollm2_q4_1, "--ctx", "2048", "--margin", margin,
                "--device", device_file(tmp_path, budget), "--json")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)[0]

    total = verdict("1GiB")["total_bytes"]
    assert verdict(str(int(total * 1.25)))["verdict"] == "fits"
    assert verdict(str(int(total * 1.1)))["verdict"] == "tight"
    assert verdict(str(int(total * 0.9)))["verdict"] == "no"
    assert verdict(str(int(total * 1.1)), margin="0.05")["verdict"] == "fits"


def test_decode_bound_is_bandwidth_over_bytes_per_token(cli, tmp_path, smollm2_q4_1):
    r = cli("fit", "--model", smollm2_q4_1, "--ctx", "1024", "--fill", "0",
            "--device", device_file(tmp_path, "1GiB", bandwidth=20.0), "--json")
    row = json.loads(r.stdout)[0]
    assert abs(row["decode_tps_bound"] - 20e9 / row["bytes_per_token"]) < 0.01
    assert row["decode_tps_estimate"] < row["decode_tps_bound"]


def test_catalog_device_and_prior_risks(cli, tmp_path, gemma3_q4_k_m):
    r = cli("fit", "--model", gemma3_q4_k_m, "--quant", "Q2_K", "--ctx", "4096",
            "--device", "ar-glasses", "--json")
    row = json.loads(r.stdout)[0]
    assert row["budget_bytes"] == catalog()["ar-glasses"].model_budget_bytes
    assert any(x.startswith("math:") for x in row["risks"])
    assert row["weights_exact"] is False


def test_bad_arguments_are_one_line_errors(cli, tmp_path, smollm2_q4_1):
    for args, expect in [(["--ctx", "abc"], "--ctx"), (["--kv-type", "q3"], "--kv-type"),
                         (["--device", "toaster"], "unknown device"),
                         (["--quant", "Q9"], "unknown quantization type")]:
        r = cli("fit", "--model", smollm2_q4_1, *args, "--json")
        assert r.returncode != 0 and expect in r.stderr and "Traceback" not in r.stderr


def test_settings_flags_reach_the_estimate(cli, tmp_path, smollm2_q4_1):
    """--kv-type/--kv-type-v, --flash-attn/--no-flash-attn, --batch and --ubatch (issue 34
    item 2): each changes the KV cache or the compute buffer it should, and nothing else."""
    dev = device_file(tmp_path, "4GiB")

    def one(*flags):
        r = cli("fit", "--model", smollm2_q4_1, "--ctx", "3000", "--device", dev, "--json", *flags)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)[0]

    base = one()
    assert base["n_ctx_cells"] == 3072 and base["flash_attn"] and base["compute_buffer_bytes"]
    mixed = one("--kv-type", "q8_0", "--kv-type-v", "q4_0")
    assert (mixed["kv_type"], mixed["kv_type_v"]) == ("q8_0", "q4_0")
    assert mixed["kv_cache_bytes"] < one("--kv-type", "q8_0")["kv_cache_bytes"] < base["kv_cache_bytes"]
    assert mixed["compute_buffer_bytes"] == base["compute_buffer_bytes"]
    small = one("--batch", "128")
    assert small["n_batch"] == 128 and small["compute_buffer_bytes"] < base["compute_buffer_bytes"] / 3
    no_fa = one("--no-flash-attn")
    assert no_fa["kv_cache_bytes"] == base["kv_cache_bytes"]
    assert no_fa["overhead_parts"]["activations"] > base["overhead_parts"]["activations"]
    r = cli("fit", "--model", smollm2_q4_1, "--device", dev, "--kv-type", "q4_0", "--no-flash-attn")
    assert r.returncode != 0 and "needs flash attention" in r.stderr


def test_a_config_is_named_for_its_model_not_config_json(cli, tmp_path):
    """Issue 34 item 7: `_name_or_path`, else the folder the config sits in."""
    cfg = {"model_type": "llama", "hidden_size": 576, "intermediate_size": 1536,
           "num_attention_heads": 9, "num_hidden_layers": 30, "num_key_value_heads": 3,
           "vocab_size": 49152, "torch_dtype": "bfloat16"}
    folder = tmp_path / "Tiny-Llama-Shape"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg))
    dev = device_file(tmp_path, "4GiB")
    r = cli("fit", "-m", str(folder / "config.json"), "--device", dev)
    assert r.returncode == 0, r.stderr
    assert "Tiny-Llama-Shape" in r.stdout and "config.json" not in r.stdout.replace("\n", "")
    (folder / "config.json").write_text(json.dumps({**cfg, "_name_or_path": "Org/Named-1B"}))
    r = cli("fit", "-m", str(folder / "config.json"), "--device", dev)
    assert r.returncode == 0, r.stderr
    assert "Named-1B" in r.stdout


def test_the_compute_buffer_line_puts_the_unit_beside_each_figure(cli, tmp_path, smollm2_q4_1,
                                                                   gemma3_q4_k_m):
    """Each buffer reads '98.2 MiB at ctx 2048', named by its model when several are fitted;
    the unit once at the end ('98.2 at ctx 2048 MiB') read as a context in MiB."""
    import re

    dev = device_file(tmp_path, "1GiB")
    one = cli("fit", "--model", smollm2_q4_1, "--ctx", "2048", "--device", dev)
    assert one.returncode == 0, one.stderr
    text = " ".join(one.stdout.split())
    assert re.search(r"a compute buffer of [\d.]+ MiB at ctx 2048 \(flash", text), text
    two = cli("fit", "--model", smollm2_q4_1, "--model", gemma3_q4_k_m, "--ctx", "2048",
              "--device", dev)
    text = " ".join(two.stdout.split())
    assert re.search(r"compute buffers: \S+ [\d.]+ MiB at ctx 2048, \S+ [\d.]+ MiB at ctx 2048",
                     text), text
