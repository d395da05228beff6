"""Renode support: the riscv-npu platform (.repl/.resc), the C# peripherals and their native NPU model.

* repl.py      reads and writes Renode platform descriptions (the subset edgesdk uses);
* platform.py  checks a board's .repl against its board.json and gives the built-in emulator its machine;
* EdgesdkNpu1.cs, EdgesdkSiFiveTestFinisher.cs  the peripherals Renode loads with `include @file.cs`;
* standins/    minimal stand-ins of Renode's API, to compile (and run) the peripherals without Renode.

`npu_library(dir)` builds the shared C NPU model as dir/libedgesdk_npu.so for the C# peripheral's P/Invoke;
`compile_peripherals(dir)` compiles the peripherals against the stand-ins with Mono's C# compiler.
Command line: `python3 -m edgesdk.renode {library DIR | check [BOARD] | scaffold BOARD}`.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ..errors import ToolchainError

RENODE_DIR = Path(__file__).resolve().parent
PERIPHERAL_SOURCES = (RENODE_DIR / "EdgesdkNpu1.cs", RENODE_DIR / "EdgesdkDsp1.cs", RENODE_DIR / "EdgesdkSiFiveTestFinisher.cs")
STANDIN_SOURCES = (RENODE_DIR / "standins" / "RenodeStandins.cs",)
HARNESS_SOURCE = RENODE_DIR / "standins" / "PeripheralHarness.cs"
NPU_LIBRARY_NAME = "libedgesdk_npu.so"  # what DllImport("edgesdk_npu") loads


def npu_library(out_dir) -> Path:
    """Build the shared C NPU model (the one the built-in emulator loads) as out_dir/libedgesdk_npu.so."""
    from ..hostcc import build_shared_library
    from ..npu.model import model_include_dirs, model_sources

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    built = build_shared_library("npu_model", model_sources(), model_include_dirs())
    target = out_dir / NPU_LIBRARY_NAME
    shutil.copyfile(built, target)
    return target


def csharp_compiler() -> str:
    mcs = shutil.which("mcs")
    if mcs is None:
        raise ToolchainError("The C# compiler 'mcs' is not installed (needed to compile-check edgesdk's Renode "
                             "peripherals). Install it with: sudo apt-get install mono-mcs")
    return mcs


def compile_peripherals(out_dir, harness: bool = False) -> Path:
    """Compile the C# peripherals against the Renode stand-ins with warnings as errors.

    harness=False: a library (the compile check); True: PeripheralHarness.exe, runnable with `mono`.
    Raises ToolchainError with the compiler's messages when the peripherals do not compile.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    output = out_dir / ("PeripheralHarness.exe" if harness else "EdgesdkRenodePeripherals.dll")
    sources = [*PERIPHERAL_SOURCES, *STANDIN_SOURCES, *([HARNESS_SOURCE] if harness else [])]
    cmd = [csharp_compiler(), "-target:" + ("exe" if harness else "library"), "-warnaserror+", "-warn:4",
           "-nologo", f"-out:{output}", *map(str, sources)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ToolchainError(f"The Renode peripherals do not compile against the stand-ins ({' '.join(cmd)}):\n"
                             f"{(proc.stdout + proc.stderr).strip()}")
    return output
