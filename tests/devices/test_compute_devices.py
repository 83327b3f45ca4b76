"""Devices with several memories: compute devices and links in profiles and the catalog, and
the backend devices llama.cpp lists (`llama-server --list-devices`)."""

from __future__ import annotations

import pytest
import yaml

from edgepick.devices.backend_devices import backend_devices, parse_devices
from edgepick.devices.catalog import catalog, load_device
from edgepick.errors import InputError
from llama_placement_log import rpc_server
from parts import need_tool

MIB = 2**20


def test_catalog_devices_with_several_memories():
    cat = catalog()
    for name, kinds in (("jetson-orin-nano", {"cpu", "gpu"}), ("apple-m2-16gb", {"cpu", "gpu"}),
                        ("laptop-8gb-gpu", {"cpu", "gpu"}), ("flagship-phone", {"cpu", "gpu"}),
                        ("raspberry-pi-5-pair-rpc", {"cpu", "rpc"})):
        dev = cat[name]
        assert {d.kind for d in dev.compute_devices} == kinds
        assert dev.links and all(d.bandwidth_gbps > 0 for d in dev.compute_devices)
    assert {d.memory for d in cat["jetson-orin-nano"].compute_devices} == {"shared"}
    assert cat["laptop-8gb-gpu"].links[0].kind == "pcie"
    pair = cat["raspberry-pi-5-pair-rpc"]
    assert pair.links[0].kind == "network" and pair.compute_devices[1].endpoint == "pi5-b:50052"


def _profile(tmp_path, parts, links=()):
    path = tmp_path / "board.yaml"
    path.write_text(yaml.safe_dump({"name": "b", "total_ram": "4GiB", "model_budget": "3GiB",
                                    "bandwidth_gbps": 10, "compute_devices": parts,
                                    "links": list(links)}))
    return str(path)


def test_a_profile_states_its_compute_devices_and_bad_ones_are_named(tmp_path):
    cpu = {"name": "CPU", "kind": "cpu", "size": "4GiB", "budget": "3GiB", "bandwidth_gbps": 10}
    gpu = {"name": "Vulkan0", "kind": "gpu", "memory": "shared", "size": "4GiB",
           "bandwidth_gbps": 10}
    dev = load_device(_profile(tmp_path, [cpu, gpu], [{"between": ["CPU", "Vulkan0"],
                                                        "kind": "unified",
                                                        "bandwidth_gbps": 10}]))
    assert dev.compute_devices[0].usable_bytes == 3 * 1024 * MIB
    assert dev.compute_devices[1].usable_bytes == 4 * 1024 * MIB  # no budget: all of it
    with pytest.raises(InputError, match="needs the CPU"):
        load_device(_profile(tmp_path, [gpu]))
    with pytest.raises(InputError, match="endpoint"):
        load_device(_profile(tmp_path, [cpu, dict(gpu, kind="rpc", name="RPC0")]))
    with pytest.raises(InputError, match="compute device #2.*lots"):
        load_device(_profile(tmp_path, [cpu, dict(gpu, size="lots")]))
    with pytest.raises(InputError, match="unknown compute device CUDA0"):
        load_device(_profile(tmp_path, [cpu], [{"between": ["CPU", "CUDA0"], "kind": "pcie",
                                                "bandwidth_gbps": 16}]))


def test_list_devices_output_is_read_as_llama_cpp_prints_it():
    # common/arg.cpp common_print_available_devices
    text = ("Available devices:\n  RPC0: 127.0.0.1:50052 (24105 MiB, 23000 MiB free)\n"
            "  CUDA0: NVIDIA GeForce RTX 4060 Laptop GPU (8188 MiB, 7890 MiB free)\n")
    assert parse_devices(text) == [
        {"name": "RPC0", "description": "127.0.0.1:50052", "total_bytes": 24105 * MIB,
         "free_bytes": 23000 * MIB},
        {"name": "CUDA0", "description": "NVIDIA GeForce RTX 4060 Laptop GPU",
         "total_bytes": 8188 * MIB, "free_bytes": 7890 * MIB}]
    assert parse_devices("Available devices:\n  (none)\n") == []


def test_the_pinned_build_lists_the_cpu_and_an_rpc_server_given_to_it():
    need_tool("ggml-rpc-server")
    need_tool("llama-server")
    with rpc_server() as endpoint:
        parts = backend_devices(8 * 1024 * MIB, 6 * 1024 * MIB, 20.0, [endpoint])
    assert [p.kind for p in parts] == ["cpu", "rpc"]
    rpc = parts[1]
    assert rpc.name == f"RPC0[{endpoint}]" and rpc.endpoint == endpoint
    assert 0 < rpc.usable_bytes <= rpc.memory_bytes
