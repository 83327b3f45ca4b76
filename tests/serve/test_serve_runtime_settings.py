"""deploy.yaml's runtime settings reach the engine (issue 34 item 4): serve started from a deploy
with a q8_0 KV cache, flash attention, one thread and its own batch sizes, without mmap, and the
settings read back from the running llama-server itself — its command line and its own startup
log (llama-context.cpp and llama-kv-cache.cpp print what the context was really built with)."""

from __future__ import annotations

import re

import psutil

from edgepick.records.candidate import RuntimeSettings
from edgepick.records.deploy import DeployConfig, DeployModel
from edgepick.registry.store import sha256_of
from serve_harness import serve, wait_until


def test_serve_runs_the_engine_with_the_deploys_settings(tiny_model, tmp_path):
    runtime = RuntimeSettings(threads=1, n_ctx=512, n_batch=256, n_ubatch=128, kv_type="q8_0",
                              flash_attn=True, mmap=False, variant="kv=q8_0,fa=on,t=1")
    cfg = DeployConfig(model=DeployModel(name="tiny@kv=q8_0,fa=on,t=1", path=tiny_model,
                                         sha256=sha256_of(tiny_model)), runtime=runtime)
    deploy = cfg.dump(tmp_path / "deploy.yaml")
    assert DeployConfig.load(deploy).runtime == runtime  # the file carries them as chosen
    # llama.cpp prints the context it built at its trace level (llama-server reads the level
    # from LLAMA_ARG_LOG_VERBOSITY; serve's child inherits serve's environment)
    with serve([str(deploy), "--slots", "1"], tmp_path, env={"LLAMA_ARG_LOG_VERBOSITY": "4"}) as s:
        (pid,) = s.engine_pids()
        cmd = psutil.Process(pid).cmdline()
        for flag, value in (("-ctk", "q8_0"), ("-ctv", "q8_0"), ("-fa", "on"), ("-t", "1"),
                            ("-b", "256"), ("-ub", "128")):
            assert cmd[cmd.index(flag) + 1] == value, (flag, cmd)
        # no mmap: the pinned llama-server spells it --load-mode none (it has no --no-mmap)
        assert cmd[cmd.index("--load-mode") + 1] == "none"
        (log,) = tmp_path.glob("llama-server-*.log")
        wait_until("the engine's context log", lambda: "threadpool init" in log.read_text())
        text = log.read_text()
        # what llama.cpp built, in its own words
        assert re.search(r"flash_attn\s+= enabled", text), text[-2000:]
        assert re.search(r"n_ubatch\s+= 128", text) and re.search(r"n_batch\s+= 256", text)
        assert re.search(r"K \(q8_0\):.*V \(q8_0\):", text)
        assert re.search(r"threadpool init, n_threads = 1\b", text)
        assert "load_mode = none" in text and "CPU_Mapped" not in text  # read, not mapped
        r = s.openai("x").chat.completions.create(
            model="tiny@kv=q8_0,fa=on,t=1", max_tokens=4,
            messages=[{"role": "user", "content": "Hi"}])
        assert r.choices


def test_serve_loads_the_deploys_adapter_pinned_by_its_sha(tiny_model, tmp_path):
    """A deploy with a LoRA adapter (issue 34 item 6): llama-server gets it at its scale and
    llama.cpp's log shows it loaded; an adapter whose bytes changed is refused before start."""
    from edgepick.errors import InputError
    from edgepick.records.candidate import AdapterSetting
    from edgepick.serve.assemble import from_deploy
    from lora_synth import write_lora

    lora = write_lora(tiny_model, tmp_path / "tuned.gguf", rank=8, blocks=2)
    adapter = AdapterSetting(path=str(lora), sha256=sha256_of(lora), scale=0.5)
    runtime = RuntimeSettings(threads=1, n_ctx=512, adapter=adapter, variant="lora=tuned")
    cfg = DeployConfig(model=DeployModel(name="tiny@lora=tuned", path=tiny_model,
                                         sha256=sha256_of(tiny_model)), runtime=runtime)
    deploy = cfg.dump(tmp_path / "deploy.yaml")
    assert DeployConfig.load(deploy).runtime.adapter == adapter
    with serve([str(deploy), "--slots", "1"], tmp_path, env={"LLAMA_ARG_LOG_VERBOSITY": "4"}) as s:
        (pid,) = s.engine_pids()
        cmd = psutil.Process(pid).cmdline()
        assert cmd[cmd.index("--lora-scaled") + 1] == f"{lora}:0.5"
        (log,) = tmp_path.glob("llama-server-*.log")
        wait_until("the adapter's load", lambda: "LoRA buffer size" in log.read_text())
        r = s.openai("x").chat.completions.create(
            model="tiny@lora=tuned", max_tokens=4, messages=[{"role": "user", "content": "Hi"}])
        assert r.choices
    lora.write_bytes(lora.read_bytes()[:-4] + b"\0\0\0\0")  # the pinned bytes changed
    try:
        from_deploy(deploy, {})
        raise AssertionError("a changed adapter was accepted")
    except InputError as exc:
        assert exc.field == "runtime.adapter.sha256" and "refusing to serve it" in str(exc)
