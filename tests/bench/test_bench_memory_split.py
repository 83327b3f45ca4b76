"""Bench measures the memory a model needs, split as fit predicts it (docs/metrics.md): RssAnon
and RssFile beside VmHWM, the file pages read after load, and their sum, the need."""

from __future__ import annotations

import json


def test_a_measurement_carries_the_split_and_the_need(cli, tiny_model, store_path):
    proc = cli("bench", "--model", tiny_model, "--prompt-lengths", "16", "--gen", "8",
               "--warmup", "0", "--repeats", "1", "--threads", "1", "--store", store_path,
               "--json")
    assert proc.returncode == 0, proc.stderr
    m = json.loads(proc.stdout)[0]["metrics"]
    anon, file_ = m["peak_rss_anon_bytes"]["max"], m["peak_rss_file_bytes"]["max"]
    need, hwm = m["peak_need_bytes"]["max"], m["peak_rss_bytes"]["max"]
    assert anon > 0 and file_ > 0 and m["file_read_bytes"]["max"] > 0
    # the tiny F16 model is read whole each token: its mapped pages are all need
    assert need == anon + m["file_read_bytes"]["max"] <= hwm * 1.02
    assert need > 0.8 * hwm
