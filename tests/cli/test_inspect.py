"""`edgepick inspect` on real files, and one-line errors on broken ones."""

import json
import os

import pytest


def test_inspect_gguf_json(cli, smollm2_q4_1):
    r = cli("inspect", "-m", smollm2_q4_1, "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["architecture"] == "llama"
    assert (d["n_layers"], d["n_embd"], d["n_heads"]) == (30, 576, 9)
    assert set(d["n_kv_heads"]) == {3}
    assert (d["head_dim_k"], d["head_dim_v"]) == (64, 64)
    assert d["vocab_size"] == 49152 and d["context_length"] == 8192
    assert d["tied_embeddings"] is True
    assert d["file_type"] == "Q4_1"
    assert d["file_size_bytes"] == os.path.getsize(smollm2_q4_1)
    assert 134_000_000 < d["n_params"] < 136_000_000
    assert 4.5 < d["bits_per_weight"] < 6
    assert d["quant_types"]["Q4_1"] > 100


def test_inspect_gguf_table_and_tensors(cli, gemma3_q4_k_m):
    r = cli("inspect", "-m", gemma3_q4_k_m, "--tensors")
    assert r.returncode == 0, r.stderr
    assert "gemma3" in r.stdout and "token_embd.weight" in r.stdout
    assert "512 tokens on 15 of 18 layers" in r.stdout


def test_inspect_hf_config(cli, tmp_path):
    cfg = {"model_type": "qwen2", "hidden_size": 896, "intermediate_size": 4864,
           "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
           "vocab_size": 151936, "max_position_embeddings": 32768, "tie_word_embeddings": True,
           "torch_dtype": "bfloat16", "use_sliding_window": False, "sliding_window": 32768}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = cli("inspect", "-m", str(path), "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["source_kind"] == "hf_config"
    assert d["head_dim_k"] == 64 and d["n_kv_heads"][0] == 2
    assert d["sliding_window"] is None  # use_sliding_window false
    # Qwen2.5-0.5B has ~494M parameters (without q/k/v biases, which we do not model)
    assert 480e6 < d["n_params"] < 500e6


def _one_line_error(r, path):
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert str(path) in lines[0]
    return lines[0]


def test_truncated_gguf(cli, tiny_model, tmp_path):
    path = tmp_path / "truncated.gguf"
    with open(tiny_model, "rb") as fh:
        path.write_bytes(fh.read(os.path.getsize(tiny_model) // 2))
    assert "truncated" in _one_line_error(cli("inspect", "-m", str(path)), path)


def test_header_cut_short(cli, tiny_model, tmp_path):
    path = tmp_path / "header.gguf"
    with open(tiny_model, "rb") as fh:
        path.write_bytes(fh.read(2000))
    msg = _one_line_error(cli("inspect", "-m", str(path)), path)
    assert "truncated" in msg or "corrupt" in msg


def test_random_bytes(cli, tmp_path):
    path = tmp_path / "random.gguf"
    path.write_bytes(os.urandom(4096))
    assert "not a GGUF" in _one_line_error(cli("inspect", "-m", str(path)), path)


def test_wrong_magic(cli, tiny_model, tmp_path):
    path = tmp_path / "magic.gguf"
    with open(tiny_model, "rb") as fh:
        data = bytearray(fh.read(1 << 20))
    data[:4] = b"GGML"
    path.write_bytes(bytes(data))
    assert "magic" in _one_line_error(cli("inspect", "-m", str(path)), path)


def test_random_bytes_after_magic(cli, tmp_path):
    path = tmp_path / "garbage.gguf"
    path.write_bytes(b"GGUF" + os.urandom(4096))
    msg = _one_line_error(cli("inspect", "-m", str(path)), path)
    assert "corrupt" in msg or "truncated" in msg


@pytest.mark.parametrize("text,expect", [('{"hidden_size": 64,', "malformed JSON"),
                                         ('[1, 2]', "JSON object"),
                                         ('{"hidden_size": 64}', "num_hidden_layers")])
def test_malformed_config_json(cli, tmp_path, text, expect):
    path = tmp_path / "config.json"
    path.write_text(text)
    assert expect in _one_line_error(cli("inspect", "-m", str(path)), path)


def test_missing_file_and_unknown_bundled_name(cli, tmp_path):
    r = cli("inspect", "-m", str(tmp_path / "nope.gguf"))
    assert r.returncode != 0 and "no such file" in r.stderr and "Traceback" not in r.stderr


def test_fast_header_reader_reads_what_the_gguf_package_reads(smollm2_q4_1):
    import gguf

    from edgepick.models.gguf_fast_reader import fast_reader

    fast, stock = fast_reader(smollm2_q4_1), gguf.GGUFReader(smollm2_q4_1)
    assert list(fast.fields) == list(stock.fields)
    for key, field in stock.fields.items():
        assert fast.fields[key].contents() == field.contents(), key
    assert len(fast.fields["tokenizer.ggml.tokens"].contents()) == 49152
    assert [(t.name, t.data_offset) for t in fast.tensors] == \
        [(t.name, t.data_offset) for t in stock.tensors]


def test_header_cut_inside_the_vocabulary(cli, smollm2_q4_1, tmp_path):
    from edgepick.models.gguf_fast_reader import fast_reader

    # the same field offsets as gguf's reader (the test above), without its seconds of parsing
    tokens = fast_reader(smollm2_q4_1).fields["tokenizer.ggml.tokens"]
    cut = int(tokens.offset) + 4 + 8 + 8 * 1000  # a thousand tokens into the array
    path = tmp_path / "vocab-cut.gguf"
    with open(smollm2_q4_1, "rb") as fh:
        path.write_bytes(fh.read(cut))
    assert "truncated" in _one_line_error(cli("inspect", "-m", str(path)), path)
