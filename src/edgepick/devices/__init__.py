"""Target devices: the shipped catalog, users' own profiles, and a probe of this machine."""

from edgepick.devices.catalog import catalog, load_device

__all__ = ["catalog", "load_device"]
