"""A model that cannot fit is refused before the compiler spends memory on it (issue 12, item 9).

A single 16384 x 8192 FULLY_CONNECTED (a 128 MB model) reached 2.9 GB of RSS and 30 s before "does not
fit": the C target's dry codegen made every weight layout first. Now the fit is checked from the graph alone
right after partitioning (each target's Target.flash_lower_bound, and the arena's input/output bound), and
every codegen context stops as soon as the constants it made exceed the board's flash (the NPU's compressed
streams included, which no bound from the graph can predict). Memory is measured as a figure: the peak RSS
of a child process (RUSAGE_CHILDREN of a wrapper that runs only that child), not a time.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO, model_path
from edgesdk.compiler import (BuildOptions, compile_model, flash_lower_bound, generated_flash_bytes,
                              sram_lower_bound)

MB = 1 << 20
# What a Python process with edgesdk and numpy imported needs before it reads any model (generous).
INTERPRETER_MB = 150


def _run(code: str, *args, cwd=REPO) -> subprocess.CompletedProcess:
    env_path = f"{REPO}:{REPO / 'tests'}"
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"}, check=False)


def _make_model(path, kind: str) -> int:
    """Write the model with tests/modelgen.py in a child process (the flatbuffer builder needs several times
    the model's size); return its size in bytes."""
    proc = _run("""
        import sys
        import numpy as np
        import modelgen
        kind, path = sys.argv[1], sys.argv[2]
        if kind == "big_fc":  # one 16384 x 8192 layer: the C target takes it (the NPU's operands are <= 4 MiB)
            w = np.ones((16384, 8192), np.int8)
            data = modelgen.fully_connected_model(1, w, np.zeros(16384, np.int32), (0.05, 0), 0.01, (0.1, 0))
        else:  # eight 2048 x 2048 layers of incompressible weights: the NPU takes each (4 MiB), not all
            rng = np.random.default_rng(0)
            m = modelgen.ModelBuilder()
            h = x = m.tensor((1, 2048), "int8", 0.05, 0)
            for _ in range(8):
                w = m.const(rng.integers(-127, 128, (2048, 2048), dtype=np.int8), "int8", scale=0.0005, zero_point=0)
                y = m.tensor((1, 2048), "int8", 0.05, 0)
                m.op("FULLY_CONNECTED", [h, w], [y], "FullyConnectedOptions")
                h = y
            data = m.build([x], [h])
        open(path, "wb").write(data)
        print(len(data))
    """, kind, path)
    assert proc.returncode == 0, proc.stderr
    return int(proc.stdout)


def _build_peak_rss(model, out) -> tuple:
    """(exit code, stderr, peak RSS in bytes) of `edgesdk build MODEL -o OUT`, run as the only child of a
    wrapper process, so RUSAGE_CHILDREN's maximum is that build's."""
    proc = _run("""
        import json, resource, subprocess, sys
        build = subprocess.run([sys.executable, "-m", "edgesdk", "build", sys.argv[1], "-o", sys.argv[2]],
                               capture_output=True, text=True)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
        print(json.dumps([build.returncode, build.stderr, peak]))
    """, model, out)
    assert proc.returncode == 0, proc.stderr
    return tuple(json.loads(proc.stdout))


@pytest.mark.parametrize("kind", ["big_fc", "many_npu_layers"])
def test_a_model_too_large_for_flash_is_refused_within_a_small_multiple_of_its_size(kind, tmp_path):
    model = tmp_path / f"{kind}.tflite"
    size = _make_model(model, kind)
    code, stderr, peak = _build_peak_rss(model, tmp_path / "out")
    assert code == 4 and "does not fit board 'riscv-npu'" in stderr and "flash" in stderr, stderr
    assert peak < 3 * size + INTERPRETER_MB * MB, f"peak RSS {peak / MB:.0f} MB for a {size / MB:.0f} MB model"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["kws", "vww", "ic", "ad", "micro_speech", "mobilenet_uint8"])
@pytest.mark.parametrize("target", ["npu,c", "c", "npu,dsp,c"])
def test_the_early_fit_bounds_are_lower_bounds(name, target):
    """The bounds checked before codegen never exceed what the build really takes: a model that fits is never
    refused early."""
    compiled = compile_model(model_path(name), BuildOptions(target=target))
    assert flash_lower_bound(compiled.regions) <= generated_flash_bytes(compiled.executor)
    assert sram_lower_bound(compiled.graph, compiled.regions) <= compiled.plan.arena_bytes
