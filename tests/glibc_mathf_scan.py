"""Compare edgesdk's float32 libm functions (edgesdk/kernels/edgesdk_mathf.c) with the host's glibc on every one
of the 2^32 float32 inputs, and write the inputs where glibc's result differs into
edgesdk/kernels/edgesdk_mathf_exceptions.h.

    python3 tests/glibc_mathf_scan.py            # scan, print the differences per function
    python3 tests/glibc_mathf_scan.py --write    # and regenerate the exception tables
    python3 tests/glibc_mathf_scan.py --picolibc # how often picolibc's functions (RISC-V, emulated) differ

Not a test (it takes minutes on one core): the source of the exception tables. glibc chooses the fused
multiply-add variants of expf/logf/sinf/cosf on CPUs with FMA; the exceptions are where fusing changes the
float result, so the tables are those of an FMA machine (every x86-64 since 2013). expm1f and tanhf have no
such variant and must match on every input (the scan checks it).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

KERNELS = Path(__file__).resolve().parents[1] / "edgesdk" / "kernels"
OUT = KERNELS / "edgesdk_mathf_exceptions.h"
FUNCTIONS = ("expf", "logf", "sinf", "cosf", "expm1f", "tanhf")
WITH_EXCEPTIONS = ("expf", "logf", "sinf", "cosf")

SCAN_C = r"""
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include "edgesdk_mathf.h"

typedef float (*fn)(float);
static float ref_expf(float x) { return expf(x); }
static float ref_logf(float x) { return logf(x); }
static float ref_sinf(float x) { return sinf(x); }
static float ref_cosf(float x) { return cosf(x); }
static float ref_expm1f(float x) { return expm1f(x); }
static float ref_tanhf(float x) { return tanhf(x); }

int main(int argc, char **argv)
{
    const char *name = argv[1];
    fn ref = 0, mine = 0;
    if (!strcmp(name, "expf")) { ref = ref_expf; mine = edgesdk_expf_unfused; }
    if (!strcmp(name, "logf")) { ref = ref_logf; mine = edgesdk_logf_unfused; }
    if (!strcmp(name, "sinf")) { ref = ref_sinf; mine = edgesdk_sinf_unfused; }
    if (!strcmp(name, "cosf")) { ref = ref_cosf; mine = edgesdk_cosf_unfused; }
    if (!strcmp(name, "expm1f")) { ref = ref_expm1f; mine = edgesdk_expm1f; }
    if (!strcmp(name, "tanhf")) { ref = ref_tanhf; mine = edgesdk_tanhf; }
    if (!ref || argc < 2) return 2;
    uint64_t limit = argc > 2 ? strtoull(argv[2], 0, 0) : (1ull << 32);
    uint64_t step = argc > 3 ? strtoull(argv[3], 0, 0) : 1;
    unsigned long count = 0;
    for (uint64_t u = 0; u < limit; u += step) {
        uint32_t b = (uint32_t)u, rb, mb;
        float x, r, m;
        memcpy(&x, &b, 4);
        r = ref(x);
        m = mine(x);
        memcpy(&rb, &r, 4);
        memcpy(&mb, &m, 4);
        if (rb != mb) {
            printf("0x%08x 0x%08x 0x%08x\n", b, rb, mb);
            if (++count > 100000) return 3;
        }
    }
    return 0;
}
"""


def build(tmp: Path) -> Path:
    src = tmp / "scan.c"
    src.write_text(SCAN_C)
    exe = tmp / "scan"
    cmd = ["gcc", "-O2", "-std=c11", "-ffp-contract=off", "-fno-builtin", "-I", str(KERNELS), str(src),
           str(KERNELS / "edgesdk_mathf.c"), "-o", str(exe), "-lm"]
    subprocess.run(cmd, check=True)
    return exe


def scan(exe: Path, name: str, limit: int = 1 << 32, step: int = 1) -> list:
    proc = subprocess.run([str(exe), name, str(limit), str(step)], capture_output=True, text=True)
    if proc.returncode not in (0,):
        raise SystemExit(f"{name}: scan failed ({proc.returncode}), {len(proc.stdout.splitlines())} lines")
    return [tuple(int(v, 16) for v in line.split()) for line in proc.stdout.splitlines()]


def current_tables() -> dict:
    """The exception tables of the current header, as scan results ({name: [(input, glibc, 0)]})."""
    import re

    tables = {}
    for name, body in re.findall(r"(\w+)_exceptions\[\d+\]\[2\] = \{(.*)\};", OUT.read_text()):
        pairs = re.findall(r"\{0x([0-9a-f]+)u, 0x([0-9a-f]+)u\}", body)
        tables[name] = [(int(x, 16), int(r, 16), 0) for x, r in pairs]
    return tables


def header(results: dict) -> str:
    lines = [OUT.read_text().split("#ifndef EDGESDK_MATHF_EXCEPTIONS_H")[0].rstrip(), "#ifndef EDGESDK_MATHF_EXCEPTIONS_H",
             "#define EDGESDK_MATHF_EXCEPTIONS_H", ""]
    for name in WITH_EXCEPTIONS:
        rows = sorted(results[name])
        lines.append(f"#define {name.upper()}_EXCEPTIONS {len(rows)}")
        pairs = [f"{{0x{x:08x}u, 0x{r:08x}u}}" for x, r, _ in rows] or ["{0u, 0u}"]
        lines.append(f"static const uint32_t {name}_exceptions[{max(len(rows), 1)}][2] = {{")
        lines += ["    " + ", ".join(pairs[i:i + 4]) + "," for i in range(0, len(pairs), 4)]
        lines.append("};")
    lines += ["", "#endif /* EDGESDK_MATHF_EXCEPTIONS_H */", ""]
    return "\n".join(lines)


PICOLIBC_C = r"""
#include <math.h>
#include <stdint.h>
#define N 4096
volatile float in[N];
volatile float out[6][N];
void _start(void) __attribute__((naked, section(".text.start")));
int main(void);
void _start(void)
{
    __asm__ volatile(".option push\n.option norelax\nla gp, __global_pointer$\n.option pop\n"
                     "li sp, 0x80100000\nli tp, 0x80180000\ncall main\nebreak\n");
}
int main(void)
{
    for (int i = 0; i < N; i++) {
        float x = in[i];
        out[0][i] = expf(x); out[1][i] = logf(x); out[2][i] = sinf(x);
        out[3][i] = cosf(x); out[4][i] = expm1f(x); out[5][i] = tanhf(x);
    }
    return 0;
}
"""
PICOLIBC_LD = """ENTRY(_start)
MEMORY { RAM (rwx) : ORIGIN = 0x80000000, LENGTH = 1M }
SECTIONS {
  .text : { KEEP(*(.text.start)) *(.text*) *(.rodata*) *(.srodata*) } > RAM
  .data : { *(.data*) *(.sdata*) *(.sbss*) *(.bss*) *(COMMON) } > RAM
  __global_pointer$ = .;
}
"""


def picolibc_differences(tmp: Path, n: int = 4096) -> None:
    """Run picolibc's float functions in Unicorn on n inputs per range; count results that differ from glibc."""
    import ctypes
    import ctypes.util

    import numpy as np
    from unicorn import UC_ARCH_RISCV, UC_MODE_RISCV32, Uc, UcError

    (tmp / "p.c").write_text(PICOLIBC_C)
    (tmp / "p.ld").write_text(PICOLIBC_LD)
    elf = tmp / "p.elf"
    subprocess.run(["riscv64-unknown-elf-gcc", "-march=rv32imac", "-mabi=ilp32", "--specs=picolibc.specs", "-O2",
                    "-nostartfiles", "-Wl,--no-warn-rwx-segments", "-T", str(tmp / "p.ld"), str(tmp / "p.c"),
                    "-o", str(elf), "-lm"], check=True)
    symbols = {}
    for line in subprocess.run(["riscv64-unknown-elf-nm", str(elf)], capture_output=True, text=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3:
            symbols[parts[2]] = int(parts[0], 16)
    image = subprocess.run(["riscv64-unknown-elf-objcopy", "-O", "binary", str(elf), "/dev/stdout"],
                           capture_output=True, check=True).stdout
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    rng = np.random.default_rng(1)
    for label, x in (("uniform(-10, 10)", rng.uniform(-10, 10, n)), ("uniform(0, 100)", rng.uniform(0, 100, n)),
                     ("normal(0, 2)", rng.normal(0, 2, n))):
        x = x.astype(np.float32)
        uc = Uc(UC_ARCH_RISCV, UC_MODE_RISCV32)
        uc.mem_map(0x80000000, 2 << 20)
        uc.mem_write(0x80000000, image)
        uc.mem_write(symbols["in"], x.tobytes())
        try:
            uc.emu_start(symbols["_start"], 0, count=4_000_000_000)
        except UcError:  # the ebreak at the end
            pass
        got = np.frombuffer(uc.mem_read(symbols["out"], 6 * n * 4), np.float32).reshape(6, n)
        counts = []
        for k, name in enumerate(FUNCTIONS):
            f = getattr(libm, name)
            f.restype, f.argtypes = ctypes.c_float, [ctypes.c_float]
            want = np.array([f(float(v)) for v in x], np.float32)
            counts.append(f"{name} {int(np.sum(want.view(np.uint32) != got[k].view(np.uint32)))}")
        print(f"picolibc vs glibc, {label}: {', '.join(counts)} of {n} differ")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--only", nargs="*", default=FUNCTIONS)
    parser.add_argument("--step", type=int, default=1, help="scan every STEP-th input (a quick look)")
    parser.add_argument("--picolibc", action="store_true", help="only compare picolibc's functions (emulated) with glibc")
    args = parser.parse_args()
    if args.picolibc:
        with tempfile.TemporaryDirectory() as tmp:
            picolibc_differences(Path(tmp))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(Path(tmp))
        results = {}
        for name in args.only:
            results[name] = scan(exe, name, step=args.step)
            print(f"{name}: {len(results[name])} inputs differ", flush=True)
            for x, r, m in results[name][:10]:
                print(f"    0x{x:08x}: glibc 0x{r:08x}, edgesdk 0x{m:08x}")
    if args.write:  # the functions not scanned now keep their tables
        if args.step != 1:
            raise SystemExit("--write needs a full scan (--step 1)")
        bad = [n for n in results if n not in WITH_EXCEPTIONS and results[n]]
        if bad:
            raise SystemExit(f"{', '.join(bad)} differ: fix the algorithm, exceptions are only for FMA variants")
        OUT.write_text(header({**current_tables(), **results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
