"""Run every corpus model on both references and compare them; keep the results in the manifest.

    python3 tests/models/check_references.py            # check: exit 1 if a recorded field changed
    python3 tests/models/check_references.py --update   # write the fields into ops/manifest.json
    python3 tests/models/check_references.py --only 'add_*'

Needs only the global Python: ai-edge-litert (LiteRT's reference kernels, OpResolverType.BUILTIN_REF),
tflite-micro (TFLite Micro's Python interpreter) and numpy. No TensorFlow.

Per model it runs five cases: seeded random inputs (seeds 0, 1, 2), every input at its minimum and every
input at its maximum. Quantized (int8/int16) inputs use the whole integer range; float, int32 and bool
inputs use the range recorded in the manifest (`inputs[].range`, the range the model was calibrated or
meant for: indices stay valid); quantized inputs of ops defined on positive numbers only (SQRT, RSQRT,
LOG) stay in `inputs[].qrange`. A stateful model (resource variables) runs each case as a sequence of
three inferences in one interpreter (the 2nd and 3rd inputs come from the same seed).

Recorded per model:
    litert_ref       "ok" or the error text
    tflm             "ok" or the error text
    ref_equals_tflm  true, or {"equal": false, "bytes_differ": N, "max_step": M, "cases": [...]} where N
                     counts differing output bytes over all cases and M is the largest difference in
                     quantized steps (integer outputs) or in value (float outputs); null if either failed.
                     Disagreeing models are recorded from a run alone in a fresh process; {"equal": false,
                     "litert_nondeterministic": true} where LiteRT's outputs change when freed heap memory
                     holds a pattern (the kernel reads uninitialized memory).
    litert_builtin   only where BUILTIN_REF lacks the kernel ("Didn't find op"): the same run with LiteRT's
                     built-in (optimized) kernels, {"resolver", "status", "equals_tflm"}.

Both interpreters run in a child process, so a crash in either fails one model only.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OPS = HERE / "ops"
MANIFEST = OPS / "manifest.json"
FIELDS = ("litert_ref", "tflm", "ref_equals_tflm")
CASES = ("seed0", "seed1", "seed2", "min", "max")
NP = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64, "float32": np.float32,
      "bool": np.bool_, "uint8": np.uint8}
ARENA = 512 * 1024
FALLBACK = "BUILTIN_WITHOUT_DEFAULT_DELEGATES"


def case_inputs(entry, case, step):
    """The model inputs for one case (and step of a stateful sequence)."""
    out = []
    for k, inp in enumerate(entry["inputs"]):
        dt, shape = inp["dtype"], tuple(inp["shape"])
        lo, hi = inp.get("range", (None, None))
        if dt in ("int8", "int16"):
            info = np.iinfo(NP[dt])
            lo, hi = inp.get("qrange", (info.min, info.max))
        elif dt == "bool":
            lo, hi = 0, 1
        if case in ("min", "max"):
            v = np.full(shape, lo if case == "min" else hi)
        else:
            rng = np.random.default_rng([int(case[4:]), k, step])
            v = rng.uniform(lo, hi, size=shape) if dt == "float32" else rng.integers(int(lo), int(hi) + 1, size=shape)
        out.append(np.asarray(v).astype(NP[dt]))
    return out


def short(exc):
    text = " ".join(str(exc).split())
    return (type(exc).__name__ + ": " + text)[:300]


def run_litert(path, entry, resolver="BUILTIN_REF"):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    resolver = getattr(OpResolverType, resolver)
    results = {}
    steps = 3 if entry.get("stateful") else 1
    for case in CASES:
        it = Interpreter(model_path=str(path), experimental_op_resolver_type=resolver)
        it.allocate_tensors()
        ins, outs = it.get_input_details(), it.get_output_details()
        seq = []
        for step in range(steps):
            for d, v in zip(ins, case_inputs(entry, case, step)):
                it.set_tensor(d["index"], v)
            it.invoke()
            seq.append([np.array(it.get_tensor(d["index"])) for d in outs])
        results[case] = seq
    return results


def run_tflm(path, entry):
    from tflite_micro.python.tflite_micro import runtime
    it = runtime.Interpreter.from_file(str(path), arena_size=ARENA)
    results = {}
    steps = 3 if entry.get("stateful") else 1
    n_out = len(entry["outputs"])
    for case in CASES:
        it.reset()
        seq = []
        for step in range(steps):
            for k, v in enumerate(case_inputs(entry, case, step)):
                it.set_input(v, k)
            it.invoke()
            seq.append([np.array(it.get_output(k)) for k in range(n_out)])
        results[case] = seq
    return results


def compare(a, b):
    """True if every output of every case and step is byte-equal, else a summary of the differences."""
    nbytes, max_step, cases = 0, 0, []
    for case in CASES:
        diff_here = False
        for sa, sb in zip(a[case], b[case]):
            for x, y in zip(sa, sb):
                if x.dtype != y.dtype or x.shape != y.shape:
                    return dict(equal=False, mismatch=f"{case}: {x.dtype}{list(x.shape)} vs {y.dtype}{list(y.shape)}")
                bx, by = np.frombuffer(x.tobytes(), np.uint8), np.frombuffer(y.tobytes(), np.uint8)
                n = int(np.count_nonzero(bx != by))
                if n:
                    diff_here = True
                    nbytes += n
                    if x.dtype.kind in "iub":
                        d = int(np.max(np.abs(x.astype(np.int64) - y.astype(np.int64))))
                    else:
                        d = float(np.nanmax(np.abs(x.astype(np.float64) - y.astype(np.float64))))
                    max_step = max(max_step, d)
        if diff_here:
            cases.append(case)
    if not nbytes:
        return True
    return dict(equal=False, bytes_differ=nbytes, max_step=max_step, cases=cases)


class captured_stderr:
    """Collect what C++ code prints to file descriptor 2 (TFLite Micro reports its errors there)."""

    def __enter__(self):
        sys.stderr.flush()
        self.tmp = tempfile.TemporaryFile()
        self.saved = os.dup(2)
        os.dup2(self.tmp.fileno(), 2)
        self.text = ""
        return self

    def __exit__(self, *exc):
        sys.stderr.flush()
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.tmp.seek(0)
        lines = [x.strip() for x in self.tmp.read().decode(errors="replace").splitlines() if x.strip()]
        self.tmp.close()
        self.text = " ".join(dict.fromkeys(lines))[:300]  # unique lines, in order
        return False


def worker(files, out_path, dirty=False):
    entries = {m["file"]: m for m in json.loads(MANIFEST.read_text())["models"]}
    with open(out_path, "a") as out:
        def emit(**kw):
            out.write(json.dumps(kw) + "\n")
            out.flush()
        for f in files:
            entry, path = entries[f], OPS / f
            emit(file=f, stage="litert")
            if dirty:
                dirty_heap()
            try:
                ra, la = run_litert(path, entry), "ok"
            except Exception as exc:  # noqa: BLE001
                ra, la = None, short(exc)
            emit(file=f, stage="tflm", litert_ref=la)
            with captured_stderr() as log:
                try:
                    rb, lb = run_tflm(path, entry), "ok"
                except Exception as exc:  # noqa: BLE001
                    rb, lb = None, short(exc)
            if lb != "ok" and log.text:
                lb = (lb + " | " + log.text)[:400]
            eq = compare(ra, rb) if ra is not None and rb is not None else None
            extra = {}
            if "Didn't find op" in la:  # kernel missing from the reference resolver: try the built-in kernels
                try:
                    rc, lc = run_litert(path, entry, FALLBACK), "ok"
                except Exception as exc:  # noqa: BLE001
                    rc, lc = None, short(exc)
                extra["litert_builtin"] = dict(resolver=FALLBACK, status=lc,
                                               equals_tflm=compare(rc, rb) if rc is not None and rb is not None else None)
            if ra is not None:
                extra["litert_hash"] = hashlib.sha256(b"".join(y.tobytes() for c in CASES for st in ra[c] for y in st)).hexdigest()
            emit(file=f, stage="done", litert_ref=la, tflm=lb, ref_equals_tflm=eq, **extra)


def dirty_heap():
    """Malloc chunks of many sizes, fill them with 0xA5 and free them, so later allocations reuse them."""
    import ctypes
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    chunks = []
    for size in [16 << (k % 13) for k in range(400)]:
        ptr = libc.malloc(size)
        ctypes.memset(ptr, 0xA5, size)
        chunks.append(ptr)
    for ptr in chunks:
        libc.free(ptr)


def run_all(files, dirty=False):
    results, todo = {}, list(files)
    while todo:
        with tempfile.TemporaryDirectory() as tmp:
            lst, res = Path(tmp, "files"), Path(tmp, "results")
            lst.write_text("\n".join(todo))
            res.write_text("")
            proc = subprocess.run([sys.executable, __file__, "--worker", str(lst), str(res)] + ["--dirty"] * dirty,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            lines = [json.loads(x) for x in res.read_text().splitlines() if x.strip()]
        last = {}
        for x in lines:
            last[x["file"]] = x
        for f, x in last.items():
            if x["stage"] == "done":
                results[f] = {k: x[k] for k in FIELDS + ("litert_builtin", "litert_hash") if k in x}
            else:  # the child died in this stage
                crash = f"crashed (exit status {proc.returncode})"
                results[f] = dict(litert_ref=x.get("litert_ref", crash), tflm=crash if x["stage"] == "tflm" else "not run",
                                  ref_equals_tflm=None)
        if not lines and proc.returncode != 0:
            raise SystemExit(f"worker failed before running anything (exit status {proc.returncode})")
        todo = [f for f in todo if f not in results]
    return results


def report(manifest):
    """Markdown tables for the README: models per op and mode, disagreements, reference errors."""
    from collections import Counter, defaultdict
    models = manifest["models"]
    counts = defaultdict(Counter)
    for m in models:
        counts[m["op"]][m["mode"]] += 1
    modes = ["int8", "int16", "float32", "int8_fio", "int16_fio"]
    lines = ["| op | " + " | ".join(modes) + " |", "|---" * (len(modes) + 1) + "|"]
    for op in counts:
        lines.append(f"| {op} | " + " | ".join(str(counts[op][k] or "") for k in modes) + " |")
    lines += ["", "| model | op | mode | variant | bytes differ | max step | cases |", "|---|---|---|---|---|---|---|"]
    for m in models:
        r = m.get("ref_equals_tflm")
        if isinstance(r, dict):
            lines.append(f"| {m['file']} | {m['op']} | {m['mode']} | {m['variant']} | {r.get('bytes_differ', '-')} | "
                         f"{r.get('max_step', r.get('mismatch'))} | {','.join(r.get('cases', []))} |")
    lines += ["", "| reference | op | mode | models | error |", "|---|---|---|---|---|"]
    groups = defaultdict(list)
    for m in models:
        for ref in ("litert_ref", "tflm"):
            if m.get(ref, "ok") != "ok":
                groups[(ref, m["op"], m["mode"], m[ref].split("|")[-1].strip()[:160])].append(m["spec"])
    for (ref, op, mode, err), specs in groups.items():
        lines.append(f"| {ref} | {op} | {mode} | {len(specs)} | {err} |")
    lines += ["", "| op | dtype | reason |", "|---|---|---|"]
    for n in manifest["not_produced"]:
        lines.append(f"| {n['op']} | {n['dtype']} | {n['reason'][:200]} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--update", action="store_true", help="write the results into the manifest")
    ap.add_argument("--only", help="fnmatch pattern on the file name")
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--dirty", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--report", action="store_true", help="print the README's markdown tables and exit")
    args = ap.parse_args()
    if args.report:
        print(report(json.loads(MANIFEST.read_text())))
        return 0
    if args.worker:
        worker(Path(args.worker[0]).read_text().split(), args.worker[1], args.dirty)
        return 0

    manifest = json.loads(MANIFEST.read_text())
    models = manifest["models"]
    problems = []
    listed = {m["file"] for m in models}
    on_disk = {p.name for p in OPS.glob("*.tflite")}
    others = {p.name for p in OPS.iterdir()} - on_disk - {MANIFEST.name}
    for f in sorted(on_disk - listed):
        problems.append(f"{f}: in ops/ but not in the manifest")
    for f in sorted(listed - on_disk):
        problems.append(f"{f}: in the manifest but missing from ops/")
    for f in sorted(others):
        problems.append(f"{f}: unexpected file in ops/")
    for m in models:
        p = OPS / m["file"]
        if p.exists() and hashlib.sha256(p.read_bytes()).hexdigest() != m["sha256"]:
            problems.append(f"{m['file']}: sha256 differs from the manifest")

    selected = [m for m in models if (OPS / m["file"]).exists() and (not args.only or fnmatch.fnmatch(m["file"], args.only))]
    results = run_all([m["file"] for m in selected])
    # A disagreement may come from a kernel that reads uninitialized memory (LiteRT's SUM int16 does), and
    # then its numbers depend on what ran before in the process. Record each disagreeing model from a run
    # alone in a fresh process, and run it once more after filling freed heap memory with a pattern: if
    # LiteRT's outputs change, flag the model instead of recording numbers.
    for f, res in list(results.items()):
        if isinstance(res["ref_equals_tflm"], dict) and "litert_hash" in res:
            clean, dirty = run_all([f])[f], run_all([f], dirty=True)[f]
            results[f] = clean
            if clean.get("litert_hash") != dirty.get("litert_hash"):
                clean["ref_equals_tflm"] = dict(equal=False, litert_nondeterministic=True)
    for res in results.values():
        res.pop("litert_hash", None)
    changed = 0
    for m in selected:
        new = results[m["file"]]
        new.setdefault("litert_builtin", None)
        for k in FIELDS + ("litert_builtin",):
            if m.get(k) != new[k] or (k in FIELDS and k not in m):
                changed += 1
                if not args.update:
                    problems.append(f"{m['file']}: {k} recorded {json.dumps(m.get(k, '<missing>'))}, now {json.dumps(new[k])}")
        if args.update:
            m.update(new)
            if m["litert_builtin"] is None:
                del m["litert_builtin"]

    n_ok = sum(1 for m in selected if results[m["file"]]["litert_ref"] == "ok" and results[m["file"]]["tflm"] == "ok")
    n_eq = sum(1 for m in selected if results[m["file"]]["ref_equals_tflm"] is True)
    print(f"{len(selected)} models: {n_ok} run on both references, {n_eq} bit-equal, "
          f"{len(selected) - n_ok} with an error in at least one reference")
    if args.update:
        MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
        print(f"updated {changed} fields in {MANIFEST.relative_to(HERE.parent.parent)}")
        problems = [p for p in problems if "recorded" not in p]
    for p in problems:
        print("FAIL", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
