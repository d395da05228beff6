"""DSP-1 in Renode: its C# peripheral (EdgesdkDsp1.cs, type Edgesdk.Dsp1), which P/Invokes the model
(device.renode_library builds libedgesdk_dsp.so). Its .repl entry declares the memory windows its bus master
may read (flash) and write (SRAM): flashBase, flashSize, sramBase, sramSize (api.MemoryWindows)."""

from __future__ import annotations

from pathlib import Path

RENODE_SOURCE = Path(__file__).resolve().parent / "EdgesdkDsp1.cs"
RENODE_TYPE = "Edgesdk.Dsp1"
