"""`python3 -m edgesdk.targets.dsp library DIR`: build the DSP-1 C model as DIR/libedgesdk_dsp.so, the
library the Renode peripheral (edgesdk/renode/EdgesdkDsp1.cs) P/Invokes; put DIR on LD_LIBRARY_PATH."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from .device import LIBRARY_NAME, build_model_library


def library(out_dir) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"lib{LIBRARY_NAME}.so"
    shutil.copyfile(build_model_library(), target)
    return target


def main(argv: list) -> int:
    if len(argv) != 2 or argv[0] != "library":
        print(__doc__.strip(), file=sys.stderr)
        return 2
    print(library(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
