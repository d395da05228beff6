"""NPU-1 in Renode: its C# peripheral (EdgesdkNpu1.cs, type Edgesdk.Npu1), the native model it P/Invokes
(libedgesdk_npu.so) and what its .repl entry says beyond base, size and IRQ (docs/renode.md):

    npu0: Edgesdk.Npu1 @ sysbus <0x40000000, +0x1000>
        flashBase: 0x20000000          the memory windows its bus master may read (flash) and write (SRAM)
        flashSize: 0x400000
        flashBytesPerCycleX256: 256    board.json's npu0 "flash_bytes_per_cycle" x 256 (the model's unit)
        sramBase: 0x80000000
        sramSize: 0x80000
        sramBytesPerCycleX256: 2048
        IRQ -> plic@8
"""

from __future__ import annotations

from pathlib import Path

from ...api import MemoryWindows
from ..hw import registers as R

RENODE_DIR = Path(__file__).resolve().parent
RENODE_SOURCE = RENODE_DIR / "EdgesdkNpu1.cs"
RENODE_TYPE = "Edgesdk.Npu1"
RENODE_LIBRARY = "edgesdk_npu"  # EdgesdkNpu1.cs: DllImport("edgesdk_npu"), i.e. libedgesdk_npu.so


class NpuReplAttributes(MemoryWindows):
    """The memory windows, plus the NPU's bandwidth to each as <memory>BytesPerCycleX256."""

    def expected(self, peripheral, board) -> dict:
        from ..hw.timing import MemoryClass

        out = super().expected(peripheral, board)
        for prefix, region in (("flash", board.flash), ("sram", board.sram)):
            out[f"{prefix}BytesPerCycleX256"] = MemoryClass.from_region(region, peripheral).bytes_per_cycle_x256
        return out

    def props(self, attributes: dict) -> dict:
        return {f"{prefix}_bytes_per_cycle": attributes[f"{prefix}BytesPerCycleX256"] / R.BANDWIDTH_SCALE
                for prefix, _ in self.KINDS if f"{prefix}BytesPerCycleX256" in attributes}


def renode_library(out_dir) -> Path:
    """The shared C NPU model (the code the built-in emulator runs) as out_dir/libedgesdk_npu.so, for the Renode
    peripheral's P/Invoke."""
    from ....hostcc import build_shared_library
    from ....renode import install_library
    from ..hw.model import model_include_dirs, model_sources

    return install_library(build_shared_library("npu_model", model_sources(), model_include_dirs()), out_dir,
                           RENODE_LIBRARY)
