"""Bad input gives one clear paragraph and a non-zero exit, never a traceback or a half-written output."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO, model_path
from modelgen import ModelBuilder


def edgesdk(*args, env=None):
    proc = subprocess.run([sys.executable, "-m", "edgesdk", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_truncated_model(tmp_path):
    bad = tmp_path / "trunc.tflite"
    bad.write_bytes(model_path("kws").read_bytes()[:3000])
    proc = edgesdk("build", bad, "-o", tmp_path / "out")
    assert proc.returncode == 2
    assert "malformed or truncated" in proc.stderr or "inconsistent" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_not_a_model(tmp_path):
    bad = tmp_path / "x.tflite"
    bad.write_text("just text")
    proc = edgesdk("build", bad, "-o", tmp_path / "out")
    assert proc.returncode == 2 and "not a TFLite model" in proc.stderr


def test_unsupported_op_names_op_and_location(tmp_path):
    m = ModelBuilder()
    x = m.tensor((1, 8), "float32", name="x")
    y = m.tensor((1, 8), "float32", name="y")
    m.op("EMBEDDING_LOOKUP_SPARSE", [x], [y])  # an op no target runs
    model = tmp_path / "exp.tflite"
    model.write_bytes(m.build(inputs=[x], outputs=[y]))
    proc = edgesdk("build", model, "-o", tmp_path / "out")
    assert proc.returncode == 3
    assert "operator #0 (EMBEDDING_LOOKUP_SPARSE, output 'y')" in proc.stderr and "1 of 1 operator(s)" in proc.stderr


def test_model_too_large_for_board_says_by_how_much(tmp_path):
    board = json.loads((REPO / "edgesdk" / "boards" / "riscv-npu" / "board.json").read_text())
    board["name"] = "tiny-sram"
    board["memory"]["sram"]["size"] = 32768
    board_dir = tmp_path / "tiny-sram"
    board_dir.mkdir()
    (board_dir / "board.json").write_text(json.dumps(board))
    proc = edgesdk("build", model_path("vww"), "--board", board_dir, "-o", tmp_path / "out")
    assert proc.returncode == 4
    assert "over by" in proc.stderr and "bytes" in proc.stderr
    # vww's arena alone is tens of KiB; the message carries the exact figure
    assert "32768" in proc.stderr


def test_missing_toolchain_says_how_to_install(tmp_path):
    # A PATH holding only python and cmake: the cross compiler is not on it.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in (sys.executable, shutil.which("cmake")):
        (bin_dir / os.path.basename(tool)).symlink_to(tool)
    env = dict(os.environ, PATH=str(bin_dir))
    proc = edgesdk("build", model_path("hello_world"), "-o", tmp_path / "out", env=env)
    assert proc.returncode == 5, proc.stderr
    assert "apt-get install" in proc.stderr and "gcc-riscv64-unknown-elf" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_failed_build_leaves_previous_output_intact(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("previous build")
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"TFL3" * 4)
    proc = edgesdk("build", bad, "-o", out)
    assert proc.returncode != 0
    assert (out / "keep.txt").read_text() == "previous build"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


def test_run_without_build_dir(tmp_path):
    proc = edgesdk("run", tmp_path / "nothing", "--random-input", "0")
    assert proc.returncode == 7 and "not an edgesdk build directory" in proc.stderr


def test_unknown_board_and_target(tmp_path):
    proc = edgesdk("build", model_path("hello_world"), "--board", "no-such-board", "-o", tmp_path / "o")
    assert proc.returncode == 7 and "Available boards: hifive1-revb, riscv-npu" in proc.stderr
    proc = edgesdk("build", model_path("hello_world"), "--target", "gpu,c", "-o", tmp_path / "o")
    assert proc.returncode == 7 and "Unknown target 'gpu'" in proc.stderr
