"""How a regress row runs its firmware (`--run-on`): the built-in emulator, the board's QEMU machine, or the
board itself through the GDB server of the debug probe attached to the node the task runs on (board.py)."""

from __future__ import annotations

from pathlib import Path


def run_firmware(build_dir: Path, inputs: list, run_on: str, timeout_s: float):
    """One inference on `inputs`; an edgesdk.runner.InferenceResult."""
    from ..runner import run_sequence

    return run_sequence(build_dir, [inputs], timeout_s=timeout_s, emulator=run_on)
