#!/usr/bin/env bash
# Install everything edgesdk needs on a fresh Debian/Ubuntu machine:
#   - the RISC-V cross toolchain (GCC + binutils + picolibc) and QEMU (CPU-only cross-check), from Debian;
#   - edgesdk itself (editable) with the reference interpreters and test tools, from PyPI.
# Safe to run again: it skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

# mono-mcs compiles the Renode C# peripherals (compile check); gdb-multiarch and openocd are the flash probes.
APT_PACKAGES=(gcc-riscv64-unknown-elf binutils-riscv64-unknown-elf picolibc-riscv64-unknown-elf qemu-system-misc cmake
              mono-mcs gdb-multiarch openocd)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "setup: installing ${missing[*]} (apt-get)"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "setup: please install: ${missing[*]} (Debian package names)" >&2
    exit 1
  fi
fi

PYTHON="${PYTHON:-python3}"
echo "setup: installing edgesdk and its Python dependencies (pip)"
"$PYTHON" -m pip install -q --disable-pip-version-check -e ".[test,tvm]"
# An editable install leaves edgesdk's modules uncompiled, and with PYTHONDONTWRITEBYTECODE set (as on these
# machines) every edgesdk process would compile them again (~0.1 s); a wheel install compiles them once.
"$PYTHON" -m compileall -q edgesdk
echo "setup: done ($("$PYTHON" -m edgesdk.cli --version))"
