"""Many small models in a few firmware images, for the end-to-end tests that check one model each
(edgesdk build --name, edgesdk.image): each model is compiled under a name of its own (sources only), a batch
of them is linked into one firmware, and each input case boots that firmware once, running every model of the
batch. A model's outputs and status are those it would have in a firmware of its own: its own arena, the same
generated program and kernels, and the harness runs every model whatever another returned."""

from __future__ import annotations

import pickle
from pathlib import Path

from edgesdk.image import link_builds, run_image
from edgesdk.runner import load_report

RUNS_FILE = "runs.pkl"


def batch(items: list, item, size: int) -> tuple:
    """(index, members) of the batch of `size` consecutive `items` that holds `item`."""
    index = items.index(item) // size
    return index, items[index * size:(index + 1) * size]


def link_and_run(out: Path, build_dirs: dict, cases: dict) -> dict:
    """Link the named builds {key: build directory} into out/image and run it once per case (cases: {label:
    {key: inputs}}); return and keep in out/runs.pkl {label: {key: (status, outputs, uart)}}."""
    runs = {}
    if build_dirs:
        link_builds(list(build_dirs.values()), out / "image", werror=True)
        names = {key: load_report(d)["name"] for key, d in build_dirs.items()}
        for label, inputs in cases.items():
            run = run_image(out / "image", {names[key]: x for key, x in inputs.items()})
            runs[label] = {key: (run.statuses[names[key]], run.outputs[names[key]], run.uart) for key in build_dirs}
    (out / RUNS_FILE).write_bytes(pickle.dumps(runs))
    return runs


def load_runs(out: Path) -> dict:
    return pickle.loads((out / RUNS_FILE).read_bytes())
