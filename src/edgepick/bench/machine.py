"""Machine state around a measurement: load average and the hottest readable temperature."""

from __future__ import annotations

import os
import socket

import psutil


def load_avg() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def hottest_temperature_c() -> float | None:
    """Max over the sensors the OS exposes; None where none is readable (VMs, containers)."""
    try:
        temps = psutil.sensors_temperatures() or {}
    except (AttributeError, OSError):
        temps = {}
    values = [t.current for entries in temps.values() for t in entries
              if t.current is not None and -40 < t.current < 150]
    return max(values) if values else None


def snapshot() -> dict:
    return {"load_avg": load_avg(), "temperature_c": hottest_temperature_c()}


def host() -> dict:
    return {"cpu_count": os.cpu_count(), "hostname": socket.gethostname()}
