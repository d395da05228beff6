"""DSP-1 on the built-in emulator: the C model (model/dsp_model.c) wrapped as an EmulatedDevice.

`load_dsp_model()` builds the model with the kernel library (edgesdk.hostcc, cached) and sets the ctypes
signatures. `DspDevice` hands the guest's flash and SRAM (GuestBus numpy buffers) to the model as direct
windows, so kernels run in place on guest memory without copies; register accesses go straight to the
model. The Renode peripheral (edgesdk/targets/dsp/renode/EdgesdkDsp1.cs) P/Invokes the same library.
"""

from __future__ import annotations

import ctypes
import functools
from pathlib import Path

from ...hostcc import build_shared_library
from ..api import DeviceFault, EmulatedDevice
from . import registers as R

MODEL_DIR = Path(__file__).resolve().parent / "model"
KERNELS_DIR = Path(__file__).resolve().parents[2] / "kernels"
LIBRARY_NAME = "edgesdk_dsp"  # libedgesdk_dsp.so, what the C# peripheral's DllImport loads

BUS_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint32)

# The kernels the model calls (and what they include) - not the whole library.
KERNEL_SOURCES = ("edgesdk_add.c", "edgesdk_average_pool2d.c", "edgesdk_depthwise_conv2d.c",
                  "edgesdk_depthwise_conv2d_sliding.c", "edgesdk_lut.c", "edgesdk_max_pool2d.c", "edgesdk_mul.c",
                  "edgesdk_softmax.c")


def model_sources() -> list:
    return [MODEL_DIR / "dsp_model.c", *(KERNELS_DIR / name for name in KERNEL_SOURCES)]


def model_include_dirs() -> list:
    return [MODEL_DIR, KERNELS_DIR]


def build_model_library() -> Path:
    """The model as a host shared library (cached by content hash)."""
    return build_shared_library("dsp_model", model_sources(), model_include_dirs())


def renode_library(out_dir) -> Path:
    """The model as out_dir/libedgesdk_dsp.so, the library the Renode peripheral (EdgesdkDsp1.cs) P/Invokes."""
    from ...renode import install_library

    return install_library(build_model_library(), out_dir, LIBRARY_NAME)


@functools.lru_cache(maxsize=None)
def load_dsp_model() -> ctypes.CDLL:
    lib = ctypes.CDLL(str(build_model_library()))
    dev, u32 = ctypes.c_void_p, ctypes.c_uint32
    lib.dsp_create.restype = dev
    lib.dsp_create.argtypes = []
    lib.dsp_destroy.restype = None
    lib.dsp_destroy.argtypes = [dev]
    lib.dsp_set_window.restype = ctypes.c_int
    lib.dsp_set_window.argtypes = [dev, u32, u32, u32, ctypes.c_void_p, ctypes.c_int]
    lib.dsp_set_bus.restype = None
    lib.dsp_set_bus.argtypes = [dev, BUS_FN, BUS_FN, ctypes.c_void_p]
    lib.dsp_reg_read.restype = u32
    lib.dsp_reg_read.argtypes = [dev, u32]
    lib.dsp_reg_write.restype = None
    lib.dsp_reg_write.argtypes = [dev, u32, u32]
    return lib


class DspDevice(EmulatedDevice):
    """One DSP-1: registers in the C model, guest memory shared with it in place."""

    def __init__(self):
        self.lib = load_dsp_model()
        self.handle = self.lib.dsp_create()
        if not self.handle:
            raise MemoryError("dsp_create failed")
        self.bus = None

    def attach(self, bus) -> None:
        """Give the model the GuestBus windows (numpy buffers: flash read-only, SRAM writable)."""
        super().attach(bus)
        if len(bus.windows) > R.MAX_WINDOWS:
            raise DeviceFault(f"the DSP model takes at most {R.MAX_WINDOWS} memories, the board has {len(bus.windows)}")
        for index, (_name, base, array, writable) in enumerate(bus.windows):
            if not array.flags["C_CONTIGUOUS"]:
                raise DeviceFault(f"guest memory at {base:#x} is not one contiguous buffer")
            status = self.lib.dsp_set_window(self.handle, index, base, len(array), array.ctypes.data, int(writable))
            if status != 0:
                raise DeviceFault(f"the DSP model rejected memory window {index} at {base:#x}")

    def read(self, offset: int, size: int) -> int:
        self._check_access(offset, size)
        return self.lib.dsp_reg_read(self.handle, offset)

    def write(self, offset: int, size: int, value: int) -> None:
        self._check_access(offset, size)
        self.lib.dsp_reg_write(self.handle, offset, value & 0xFFFFFFFF)

    @staticmethod
    def _check_access(offset: int, size: int) -> None:
        if size != 4 or offset % 4:
            raise DeviceFault(f"DSP-1 registers take aligned 32-bit accesses only ({size} bytes at offset {offset:#x})")

    def stats(self) -> dict:
        """Counters since reset: cycles (the cycle model), kernels completed, kernels that failed."""
        r = functools.partial(self.lib.dsp_reg_read, self.handle)
        return {"cycles": r(R.REG_CYCLES_LO) | (r(R.REG_CYCLES_HI) << 32), "kernels": r(R.REG_KERNELS),
                "errors": r(R.REG_ERRORS)}

    def close(self) -> None:
        if getattr(self, "handle", None):
            self.lib.dsp_destroy(self.handle)
            self.handle = None

    def __del__(self):
        self.close()


def create_device(peripheral, board) -> DspDevice:
    """PeripheralModel.create for board peripherals of type edgesdk-dsp1."""
    return DspDevice()
