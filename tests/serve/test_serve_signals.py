"""serve's device signals from the OS are read through edgepick.power (issue 33 item 4): the
same on-AC rule as power measurement (a USB-C, USB-PD or wireless supply online counts), every
thermal zone and hwmon sensor, and the kernel's memory pressure."""

from __future__ import annotations

from power_sysfs import write

from edgepick.serve.pool.signals import read_os

PS = "sys/class/power_supply"


def test_a_usb_c_supply_online_is_on_ac(tmp_path):
    write(tmp_path, f"{PS}/BAT0/type", "Battery")
    write(tmp_path, f"{PS}/BAT0/capacity", 57)
    write(tmp_path, f"{PS}/BAT0/status", "Discharging")
    write(tmp_path, f"{PS}/ucsi-source-psy-USBC000:001/type", "USB_C")
    write(tmp_path, f"{PS}/ucsi-source-psy-USBC000:001/online", 1)
    write(tmp_path, "sys/class/thermal/thermal_zone0/temp", 41000)
    write(tmp_path, "sys/class/hwmon/hwmon0/temp1_input", 63500)
    write(tmp_path, "proc/pressure/memory", "some avg10=1.50 avg60=0.20 avg300=0.00 total=1\n"
                                            "full avg10=0.00 avg60=0.00 avg300=0.00 total=0")
    s = read_os(tmp_path)
    assert (s.battery_percent, s.on_ac, s.temperature_c, s.memory_pressure) == \
        (57.0, True, 63.5, 1.5)


def test_on_battery_is_off_ac_and_nothing_known_is_none(tmp_path):
    write(tmp_path, f"{PS}/BAT0/type", "Battery")
    write(tmp_path, f"{PS}/BAT0/capacity", 20)
    write(tmp_path, f"{PS}/BAT0/status", "Discharging")
    assert read_os(tmp_path).on_ac is False
    empty = read_os(tmp_path / "none")
    assert empty.model_dump() == {"battery_percent": None, "on_ac": None,
                                  "temperature_c": None, "memory_pressure": None}
