"""Typed records that flow between pipeline stages (docs/architecture.md).
All are JSON-serialisable."""

from edgepick.records.candidate import Candidate, RuntimeSettings
from edgepick.records.device import DeviceProfile
from edgepick.records.model import ModelSpec, TensorInfo

__all__ = ["Candidate", "RuntimeSettings", "DeviceProfile", "ModelSpec", "TensorInfo"]
