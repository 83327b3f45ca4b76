"""Every table the CLI prints reads at 80 columns: as it is when it fits, else one key/value
block per row; never a cell cut to "…" (cli/output.py)."""

import io

import pytest
from rich.table import Table

from edgepick.cli.output import _FittingConsole

ENV = {"COLUMNS": "80"}


def _render(table: Table, width: int = 80) -> str:
    buf = io.StringIO()
    _FittingConsole(width=width, file=buf, color_system=None).print(table)
    return buf.getvalue()


def _readable(text: str) -> None:
    assert "…" not in text, text
    assert max(len(line) for line in text.splitlines()) <= 80, text


def test_a_table_that_fits_stays_a_table():
    t = Table("model", "tok/s")
    t.add_row("smollm2", "92")
    out = _render(t)
    _readable(out)
    assert "model" in out.splitlines()[1] and "tok/s" in out.splitlines()[1]


def test_a_wide_table_becomes_one_block_per_row_with_every_value_whole():
    t = Table("model", "quantization type", "context tokens", "weights bytes", "KV cache bytes",
              "runtime overhead", "verdict", title="wide")
    values = ["SmolLM2-135M-Instruct-Q4_1", "Q4_K_M", "32768", "96,536,576", "754,974,720",
              "96,153,600", "fits"]
    t.add_row(*values)
    out = _render(t)
    _readable(out)
    for v in values + ["runtime overhead", "KV cache bytes"]:
        assert v in out


def test_a_row_block_keeps_its_long_name_on_one_line():
    t = Table("model", "quant", "ctx", "weights", "KV", "other", "total", "verdict")
    name = "SmolLM2-135M-Instruct.F16.Q8_0-imatrix.gguf"
    t.add_row(name, "Q8_0", "32768", "35.9", "0.8", "91.7", "128.3", "[green]fits[/]")
    out = _render(t)
    _readable(out)
    assert name in out.splitlines()  # not folded at the narrow block's width
    assert "fits" in out and "[green]" not in out


def test_a_key_value_table_wraps_long_values_instead_of_cutting_them():
    t = Table(show_header=False)
    t.add_row("description", "word " * 40)
    out = _render(t)
    _readable(out)
    assert out.count("word") == 40


@pytest.mark.parametrize("args", [
    ("fit", "-m", "smollm2", "-m", "gemma3-270m", "--quant", "native,Q8_0,Q4_K_M",
     "--ctx", "2048,32768", "--device", "raspberry-pi-5"),
    ("fit", "-m", "tiny", "--device", "laptop-16gb-cpu"),
    ("devices",),
    ("inspect", "-m", "tiny", "--tensors"),
])
def test_command_tables_read_at_80_columns(cli, args):
    r = cli(*args, env=ENV)
    assert r.returncode == 0, r.stderr
    _readable(r.stdout)


def test_probe_reads_at_80_columns(cli, tmp_path):
    r = cli("probe", "--allow-contended", env={**ENV, "EDGEPICK_HOME": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    _readable(r.stdout)


def test_bench_and_decide_tables_read_at_80_columns(cli, tiny_model, tmp_path):
    store = str(tmp_path / "s.sqlite")
    r = cli("bench", "-m", tiny_model, "--prompt-lengths", "16,32", "--gen", "4", "--warmup", "0",
            "--repeats", "1", "--threads", "1", "--ctx", "128", "--store", store, env=ENV)
    assert r.returncode == 0, r.stderr
    _readable(r.stdout)
    assert "vs prompt length" in r.stdout
    r = cli("decide", "--store", store, "--device", "raspberry-pi-5", env=ENV)
    assert r.returncode in (0, 1), r.stderr
    _readable(r.stdout)


def test_a_table_of_sentences_stays_a_table_with_its_cells_wrapped():
    """doctor's findings at 100 columns: a table whose cells wrap, not one card per row (whose
    first cell, the rank, stood alone on a line), and a long path folds in its cell."""
    t = Table("#", "cause", "detail", "finding", "confidence", "fix", title="doctor")
    path = "/root/.edgepick/doctor/gemma-3-270m-q4_k_m.6f9b0ed70f.with-template.gguf"
    t.add_row("1", "chat template", "missing", "no chat template: serve falls back to ChatML " * 3,
              "95%", f"serve it with a plain transcript: doctor wrote {path}")
    out = _render(t, width=100)
    assert "…" not in out and max(len(line) for line in out.splitlines()) <= 100, out
    assert "confidence" in out.splitlines()[2] and "fix" in out.splitlines()[2]  # a header row
    assert not any(line.strip() == "1" for line in out.splitlines())


def test_update_manifest_prints_a_summary_and_the_tensors_behind_verbose(cli, tmp_path):
    import json

    from edgepick.assets import bundled

    model = str(bundled.smollm2_q4_1())
    out = tmp_path / "m.json"
    r = cli("update", "manifest", model, "-o", str(out), env={"COLUMNS": "100"})
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) < 20 and "272 tensors by type" in r.stdout
    assert "blk.0.attn_q.weight" not in r.stdout and "--verbose" in r.stdout
    assert len(json.loads(out.read_text())["tensors"]) == 272  # the whole list is in the file
    r = cli("update", "manifest", model, "--verbose", env={"COLUMNS": "100"})
    assert r.returncode == 0 and "blk.0.attn_q.weight" in r.stdout
    assert max(len(line) for line in r.stdout.splitlines()[2:]) <= 100


def test_a_table_rich_would_crop_becomes_blocks_not_a_cut_table():
    """Columns whose own minimum widths add up past the screen (bench's) are never cropped:
    such a table falls back to one block per row with every value whole."""
    t = Table(title="bench")
    for name in ("model", "status", "TTFT", "prefill", "decode", "ITL", "e2e", "RSS", "energy"):
        t.add_column(name, min_width=14)
    t.add_row("tiny", "ok", "26.9", "599.2", "96.2", "8.2", "58", "161", "0.4 J")
    out = _render(t, width=100)
    assert max(len(line) for line in out.splitlines()) <= 100 and "0.4 J" in out, out


def test_a_table_rich_would_crop_at_its_right_edge_is_not_passed_as_whole():
    """A column with a min_width made rich draw the table one border too wide and crop it at
    the screen's edge: every line fit, the last border was gone. Such a table is not whole."""
    t = Table(title="bench")
    t.add_column("model / config", min_width=16)
    for name in ("status", "TTFT", "prefill", "decode", "ITL", "e2e", "RSS", "note"):
        t.add_column(name)
    t.add_row("smollm2\nthreads=2 prompt=16", "ok", "1,643.4", "11.0", "3.1", "1714.5/-",
              "10,800", "190", "contended (others 50% CPU)")
    out = _render(t, width=100)
    for line in out.splitlines():
        if line[:1] in "┏┃┡│└":
            assert line[-1] in "┓┃┩│┘", out


def test_bench_reads_as_a_table_at_100_columns(cli, tiny_model, tmp_path):
    r = cli("bench", "-m", tiny_model, "--prompt-lengths", "16,32", "--gen", "4", "--warmup", "0",
            "--repeats", "1", "--threads", "1", "--ctx", "128",
            "--store", str(tmp_path / "s.sqlite"), env={"COLUMNS": "100"})
    assert r.returncode == 0, r.stderr
    head = next(line for line in r.stdout.splitlines() if "model / config" in line)
    assert head.startswith("┃") and head.rstrip().endswith("┃") and "note" in head, r.stdout
