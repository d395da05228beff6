"""Coverage-guided fuzzing with atheris (libFuzzer for Python), when it is installed (`pip install .[fuzz]`).

libFuzzer picks inputs that reach new lines of edgesdk (the package is instrumented on import); the custom
mutator is edgesdk's own structure-aware Mutator, so mutants stay decodable flatbuffers most of the time.
An input whose outcome is a finding (harness.FINDINGS) raises, and libFuzzer saves it as crash-<sha1>.
libFuzzer's own flags bound the run: -max_total_time, -timeout (a hang), -rss_limit_mb (a memory blow-up).
"""

from __future__ import annotations

import hashlib
import random
import sys
import tempfile
from pathlib import Path

from .harness import FINDINGS, check_input, seed_corpus
from .mutate import Mutator

OPTIONS = [("npu,c", "ref"), ("npu,c", "tflm"), ("c", "ref"), ("c", "tflm")]


class FindingError(Exception):
    """Raised for libFuzzer: the input crashed, hung or produced unsafe output."""


def test_one_input(data: bytes) -> None:
    target, rounding = OPTIONS[hashlib.sha256(data).digest()[0] % len(OPTIONS)]
    outcome = check_input(data, target, rounding)
    if outcome.kind in FINDINGS:
        raise FindingError(f"{outcome.kind} [{target}, {rounding}]: {outcome.detail}")


def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    mutant, _description = Mutator({"input": data or b"\0" * 8}, random.Random(seed)).mutant()
    return mutant[:max_size]


def run_atheris(engine_args: list) -> int:
    try:
        import atheris
    except ImportError:
        print("atheris is not installed: pip install '.[fuzz]' (or use the default --engine mutate)", file=sys.stderr)
        return 2
    with atheris.instrument_imports(include=["edgesdk"]):
        import edgesdk.compiler  # noqa: F401
        import edgesdk.verify  # noqa: F401
        import edgesdk.aot.render  # noqa: F401
    corpus = Path(tempfile.mkdtemp(prefix="edgesdk-atheris-corpus-"))
    for name, data in seed_corpus().items():
        (corpus / f"{name}.tflite").write_bytes(data)
    flags = ["-timeout=20", "-rss_limit_mb=3072", f"-max_len={2 * max(p.stat().st_size for p in corpus.iterdir())}"]
    atheris.Setup([sys.argv[0], *flags, *engine_args, str(corpus)], test_one_input, custom_mutator=custom_mutator)
    atheris.Fuzz()
    return 0
