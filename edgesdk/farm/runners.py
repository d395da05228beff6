"""How a regress row runs its firmware (`--run-on`): the built-in emulator, the board's QEMU machine, or the
board itself, attached to the node the task runs on, through its debug probe's GDB server (attached.py)."""

from __future__ import annotations

from pathlib import Path

RUNNERS = ("builtin", "qemu", "board")


def run_firmware(build_dir: Path, inputs: list, run_on: str, timeout_s: float):
    """One inference on `inputs`; an edgesdk.runner.InferenceResult."""
    if run_on == "board":
        from .attached import run_on_attached_board

        return run_on_attached_board(build_dir, inputs, timeout_s)
    from ..runner import run_sequence

    return run_sequence(build_dir, [inputs], timeout_s=timeout_s, emulator=run_on)
