"""The targets' own firmware sources (kernel library, drivers, runtimes) in the generated project.

Each target of the build, and each target that drives a peripheral the board has (the board files include
its driver: the harness may talk to it, e.g. to print an accelerator's error status), lists its sources
(Target.firmware_sources); they are copied into OUT/src/targets/<name>/, which edgesdk/firmware/CMakeLists.txt compiles and adds to the include path. The
generated project then holds everything model-specific, readable and buildable by hand.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from ..errors import UsageError
from ..targets import get_target

TARGETS_SUBDIR = "targets"


def firmware_targets(target_names: list, board) -> list:
    """The build's targets: OUT/src holds their sources only, whatever else is installed or on the board."""
    return [get_target(n) for n in target_names]


def copy_target_sources(target_names: list, board, src_dir: Path, model=None) -> list:
    """Copy each target's firmware sources (for the ExecutorModel `model`: only what its code uses) into
    src_dir/targets/<name>/; return the copied paths."""
    copied = []
    for target in firmware_targets(target_names, board):
        sources = [Path(s) for s in target.firmware_sources(model)]
        if not sources:
            continue
        dest = src_dir / TARGETS_SUBDIR / target.name
        if dest.is_dir():
            continue  # copied already (render_board_files copies the board's peripheral drivers)
        dest.mkdir(parents=True)
        for source in sources:
            if not source.is_file():
                raise UsageError(f"Target '{target.name}' lists firmware source {source}, which does not exist; "
                                 "reinstall the package that provides the target.")
            if (dest / source.name).exists():
                raise UsageError(f"Target '{target.name}' lists two firmware sources named {source.name}.")
            shutil.copyfile(source, dest / source.name)
            copied.append(dest / source.name)
    return copied
