"""Peripheral models written in Python (targets' EmulatedDevice, edgesdk/targets/api.py) on the emulator.

A target's model may be C, compiled into the emulator's native library (PeripheralModel.native), or
plain Python: the machine maps its register window with Unicorn MMIO callbacks and hands it a `GuestBus`,
bounds-checked numpy views of the board's flash and SRAM, for its DMA. Register accesses are rare (a few per
layer), so Python there costs nothing measurable; the device's work runs in numpy, or in C through ctypes.
"""

from __future__ import annotations

import numpy as np

from ..targets.api import DeviceFault


class GuestBus:
    """Guest memory as the board's windows: [(name, base, numpy uint8 array, writable)]."""

    def __init__(self, windows: list):
        self.windows = windows

    def _locate(self, address: int, length: int, write: bool):
        for name, base, array, writable in self.windows:
            if base <= address and address + length <= base + len(array):
                if write and not writable:
                    raise DeviceFault(f"write of {length} bytes at {address:#x} into read-only {name}")
                return array, address - base
        raise DeviceFault(f"access of {length} bytes at {address:#x} is outside every memory of the board")

    def view(self, address: int, length: int, write: bool = False) -> np.ndarray:
        """A uint8 view of guest memory (zero-copy); DeviceFault if it is not inside one memory."""
        if length < 0:
            raise DeviceFault(f"negative length {length} at {address:#x}")
        array, offset = self._locate(address, length, write)
        return array[offset:offset + length]

    def read(self, address: int, length: int) -> bytes:
        return self.view(address, length).tobytes()

    def write(self, address: int, data) -> None:
        data = np.frombuffer(bytes(data), np.uint8) if not isinstance(data, np.ndarray) else data.view(np.uint8).reshape(-1)
        self.view(address, len(data), write=True)[:] = data


class MappedDevice:
    """Binds one EmulatedDevice to Unicorn's MMIO callbacks; keeps the first fault for the machine."""

    def __init__(self, name: str, device, machine_stop):
        self.name = name
        self.device = device
        self.fault: str | None = None
        self._stop = machine_stop

    def read(self, _uc, offset, size, _user_data):
        try:
            return int(self.device.read(offset, size)) & ((1 << (8 * size)) - 1)
        except Exception as exc:  # noqa: BLE001 - any model error must stop the CPU, not vanish in Unicorn
            self._failed(f"read of {size} bytes at offset {offset:#x}", exc)
            return 0

    def write(self, _uc, offset, size, value, _user_data):
        try:
            self.device.write(offset, size, value)
        except Exception as exc:  # noqa: BLE001
            self._failed(f"write of {size} bytes ({value:#x}) at offset {offset:#x}", exc)

    def _failed(self, access: str, exc: Exception) -> None:
        if self.fault is None:
            kind = "rejected" if isinstance(exc, DeviceFault) else f"failed ({type(exc).__name__})"
            self.fault = f"peripheral {self.name}: the {access} {kind}: {exc}"
        self._stop()


class RegisterFile:
    """A bank of 32-bit registers that read back what was written (reset value 0): the built-in model of a board
    peripheral the firmware only configures, such as the HiFive1's GPIO (edgesdk/firmware/console.c routes the UART
    pins through it). Accesses must be aligned and at most 32 bits wide, as on the SiFive peripheral bus."""

    def __init__(self, size: int):
        self.size = size
        self.registers: dict = {}

    def attach(self, bus) -> None:
        self.bus = bus

    def _check(self, offset: int, size: int) -> int:
        if size > 4 or offset % size or offset + size > self.size:
            raise DeviceFault(f"{size}-byte access at offset {offset:#x} (registers are 32-bit, aligned)")
        return offset & ~3

    def read(self, offset: int, size: int) -> int:
        word = self.registers.get(self._check(offset, size), 0)
        return (word >> (8 * (offset & 3))) & ((1 << (8 * size)) - 1)

    def write(self, offset: int, size: int, value: int) -> None:
        base = self._check(offset, size)
        shift, mask = 8 * (offset & 3), ((1 << (8 * size)) - 1) << (8 * (offset & 3))
        self.registers[base] = (self.registers.get(base, 0) & ~mask) | ((value << shift) & mask)

    def stats(self) -> dict:
        return {}


# Board peripherals the built-in emulator models in Python, by board.json type (the UARTs and the exit device
# are native, edgesdk/emulator/csrc/emu_glue.c, and so are the targets' native models).
BOARD_DEVICES = {"sifive_gpio": lambda periph: RegisterFile(periph.size)}
