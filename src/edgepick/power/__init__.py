"""Power, energy and heat on the device: one reader per kind of counter, found automatically.

`detect()` returns the first source that works here (an explicit meter command or adb serial
first, then RAPL, Jetson INA3221 rails, a battery fuel gauge off AC), or None with the one-line
reason in `NO_SOURCE`. Every reader takes the sysfs root as a parameter, so tests read a
fixture tree laid out like the kernel's documentation of that interface.
"""

from edgepick.power.base import PowerReading, PowerSource, SourceError
from edgepick.power.detect import NO_SOURCE, PowerConfig, detect, find_sources

__all__ = ["NO_SOURCE", "PowerConfig", "PowerReading", "PowerSource", "SourceError", "detect",
           "find_sources"]
