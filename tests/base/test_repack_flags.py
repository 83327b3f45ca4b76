"""Whether llama.cpp repacks its weights is decided from how the build that runs was compiled:
the in-process engine's flags recorded beside its package at `make setup`, the tools' in their
bin/.cflags (EDGEPICK_LLAMA_BIN's folder when set) — not from $HOME. When repacking is off, the
reason is a sentence that bench and doctor print. This host's CPU may lack AMX, so the CPU's
answer is given."""

from __future__ import annotations

import pytest

from edgepick import llama_tools as lt


@pytest.fixture
def amx_cpu(monkeypatch, tmp_path):
    monkeypatch.setattr(lt, "_cpu_has_amx", lambda: True)
    monkeypatch.delenv("EDGEPICK_REPACK", raising=False)
    monkeypatch.delenv("EDGEPICK_CACHE", raising=False)
    home = tmp_path / "empty-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # nothing under $HOME/.cache/edgepick
    return home


def test_the_engine_repacks_on_its_own_recorded_flags_whatever_home(amx_cpu):
    flags = lt.engine_build_flags()
    assert flags is not None, "make setup records the engine's flags beside llama_cpp"
    assert lt.NO_AMX in flags
    assert lt.repack_reason("in_process") is None and not lt.repack_unsafe()


def test_unrecorded_flags_on_an_amx_cpu_turn_repacking_off_and_say_why(amx_cpu, monkeypatch):
    monkeypatch.setattr(lt, "engine_build_flags", lambda: None)
    why = lt.repack_reason("in_process")
    assert why.startswith("repacking off") and "not recorded" in why and "EDGEPICK_REPACK" in why
    monkeypatch.setenv("EDGEPICK_REPACK", "1")
    assert lt.repack_reason("in_process") is None


def test_the_tools_flags_come_from_the_folder_that_runs(amx_cpu, monkeypatch, tmp_path):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    server = bin_ / "llama-server"
    server.write_text("#!/bin/sh\n")
    server.chmod(0o755)
    monkeypatch.setenv("EDGEPICK_LLAMA_BIN", str(bin_))
    assert "not recorded" in lt.repack_reason("tools")
    (bin_ / ".cflags").write_text("-mno-amx-tile -mno-amx-int8 -mno-amx-bf16\n")
    assert lt.repack_reason("tools") is None
    (bin_ / ".cflags").write_text("\n")  # a build with AMX, on a CPU that has it
    assert "built with AMX" in lt.repack_reason("tools")


def test_fit_says_when_repacking_is_off(amx_cpu, monkeypatch, cli):
    """fit's need counts the repacked copies: with repacking off it says so, as bench and
    doctor do (the same repack_reason line)."""
    r = cli("fit", "-m", "tiny", "--device", "laptop-16gb-cpu")
    assert r.returncode == 0 and "repacking off" not in r.stderr, r.stderr
    monkeypatch.setattr(lt, "engine_build_flags", lambda: None)
    r = cli("fit", "-m", "tiny", "--device", "laptop-16gb-cpu")
    assert r.returncode == 0, r.stderr
    assert "repacking off" in r.stderr and "not recorded" in r.stderr
