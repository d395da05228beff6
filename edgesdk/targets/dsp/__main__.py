"""`python3 -m edgesdk.targets.dsp library DIR`: build the DSP-1 C model as DIR/libedgesdk_dsp.so, the
library the Renode peripheral (edgesdk/targets/dsp/renode/EdgesdkDsp1.cs) P/Invokes; put DIR on LD_LIBRARY_PATH.
`python3 -m edgesdk.renode library DIR` builds it together with every other native model of a board."""

from __future__ import annotations

import sys

from .device import renode_library


def main(argv: list) -> int:
    if len(argv) != 2 or argv[0] != "library":
        print(__doc__.strip(), file=sys.stderr)
        return 2
    print(renode_library(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
