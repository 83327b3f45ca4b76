"""The shipped device catalog and user profile files."""

from __future__ import annotations

import os
from functools import lru_cache
from importlib.resources import files

from pydantic import ValidationError

from edgepick.errors import EdgepickError, InputError, input_error
from edgepick.records.device import DeviceProfile
from edgepick.units import parse_size
from edgepick.yaml_input import read_yaml

_SIZE_FIELDS = {"total_ram": "total_ram_bytes", "model_budget": "model_budget_bytes"}
_PART_SIZE_FIELDS = {"size": "memory_bytes", "budget": "budget_bytes"}  # of each compute device


def _sizes(data: dict, fields: dict[str, str], source: str, where: str = "") -> dict:
    data = dict(data)
    for short, full in fields.items():
        if short in data:
            try:
                data[full] = parse_size(data.pop(short))
            except ValueError as exc:
                raise InputError(source, f"{where}{exc}", field=short) from None
    return data


def _profile(entry: dict, source: str, index: int | None = None) -> DeviceProfile:
    if not isinstance(entry, dict):
        raise InputError(source, "each device must be a mapping of fields")
    data = _sizes(entry, _SIZE_FIELDS, source)
    parts = data.get("compute_devices")
    if isinstance(parts, list):
        data["compute_devices"] = [
            _sizes(p, _PART_SIZE_FIELDS, source, f"compute device #{i + 1}: ")
            if isinstance(p, dict) else p for i, p in enumerate(parts)]
    try:
        return DeviceProfile(**data)
    except ValidationError as exc:
        where = f"device #{index + 1}: " if index is not None else ""
        raise input_error(source, exc, problem_prefix=where) from None


@lru_cache(maxsize=1)
def catalog() -> dict[str, DeviceProfile]:
    source = str(files("edgepick").joinpath("data/devices.yaml"))
    entries = read_yaml(source)
    return {e["name"]: _profile(e, source, i) for i, e in enumerate(entries)}


def load_device(name_or_path: str) -> DeviceProfile:
    """`local` is this machine (its cached probe, or measured and cached: devices/local.py); a
    catalog name; or a YAML file with one profile (or a list)."""
    from edgepick.devices.local import local_device

    if name_or_path == "local":
        return local_device()
    if name_or_path in catalog():
        return catalog()[name_or_path]
    if os.path.isfile(name_or_path):
        data = read_yaml(name_or_path)
        if isinstance(data, list):
            if len(data) != 1:
                raise InputError(name_or_path, f"expected one device profile, found {len(data)}")
            data = data[0]
        return _profile(data, name_or_path)
    raise EdgepickError(f"unknown device '{name_or_path}': not a catalog name, 'local', or a file "
                        f"(catalog: {', '.join(catalog())})")

