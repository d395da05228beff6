#!/usr/bin/env bash
# Install what edgesdk needs on a Debian/Ubuntu machine:
#   - the RISC-V cross toolchain (GCC + binutils + picolibc), CMake, QEMU (CPU-only cross-check), mono-mcs
#     (compile check of the Renode C# peripherals), gdb-multiarch and openocd (edgesdk flash), from Debian;
#     with the test extra also chromium-headless-shell (the report.html check loads the page in it);
#   - a Python virtualenv (.venv in the checkout, or $EDGESDK_VENV, or the active one) with edgesdk installed
#     in it (editable) with the extras asked for. pip is never run outside that virtualenv.
#
#   ./scripts/setup.sh                       # extras test,tvm: everything the test suite uses
#   ./scripts/setup.sh --extras reference    # what the demo needs (build, run --check)
#
# Extras (pyproject.toml): reference (run --check), hil (edgesdk hil), farm (Ray: regress and tune with
# --workers/--cluster), tvm, test (= reference + hil + farm + pytest), bench, fuzz. The venv is made with
# --system-site-packages, so packages the interpreter already has (e.g. Debian's python3-numpy) are reused; EDGESDK_VENV_ISOLATED=1 makes a fully isolated one.
# PYTHON picks the interpreter (default python3). Safe to run again: it skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh

EXTRAS="test,tvm"
while [ $# -gt 0 ]; do
  case "$1" in
    --extras) EXTRAS="${2:?--extras needs a comma-separated list, e.g. reference or test,tvm}"; shift 2 ;;
    --extras=*) EXTRAS="${1#--extras=}"; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "setup: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
EXTRAS="${EXTRAS// /}"
PYTHON="${PYTHON:-python3}"

APT_PACKAGES=(gcc-riscv64-unknown-elf binutils-riscv64-unknown-elf picolibc-riscv64-unknown-elf qemu-system-misc cmake
              mono-mcs gdb-multiarch openocd ccache ninja-build)
# A Debian/Ubuntu python3 makes virtualenvs only with python3-venv (ensurepip and its wheels).
VENV_PACKAGES=(python3-venv "python$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')-venv")

apt_install() {  # apt_install PACKAGE...: those not installed yet
  local missing=() pkg
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  if command -v apt-get >/dev/null 2>&1; then
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "setup: installing ${missing[*]} (apt-get)"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "setup: please install: ${missing[*]} (Debian package names)" >&2
    exit 1
  fi
}

# The test suite loads report.html in a real headless browser (tests/test_report_html.py).
case ",$EXTRAS," in *,test,*) APT_PACKAGES+=(chromium-headless-shell fonts-dejavu-core) ;; esac

apt_install "${APT_PACKAGES[@]}"

if [ ! -x "$VENV_PYTHON" ]; then
  echo "setup: creating the virtualenv $EDGESDK_VENV ($("$PYTHON" --version 2>&1))"
  venv_args=(--system-site-packages)
  [ "${EDGESDK_VENV_ISOLATED:-0}" = 1 ] && venv_args=()
  if ! "$PYTHON" -m venv "${venv_args[@]}" "$EDGESDK_VENV"; then
    rm -rf "$EDGESDK_VENV"
    apt_install "${VENV_PACKAGES[@]}"  # "ensurepip is not available": Debian's python3-venv
    "$PYTHON" -m venv "${venv_args[@]}" "$EDGESDK_VENV"
  fi
fi

# Skip pip when these extras were installed from this very pyproject.toml already (the stamp lists them).
STAMP="$EDGESDK_VENV/.edgesdk-setup"
key="$(cat pyproject.toml | sha256sum | cut -c1-16) $EDGESDK_ROOT"
installed=""
if [ -f "$STAMP" ] && [ "$(head -n1 "$STAMP")" = "$key" ]; then
  installed="$(sed -n 2p "$STAMP")"
fi
needed=""
for extra in ${EXTRAS//,/ }; do
  case ",$installed," in *",$extra,"*) ;; *) needed="$needed,$extra" ;; esac
done
if [ -n "$needed" ] || ! "$VENV_PYTHON" -c "import edgesdk" >/dev/null 2>&1; then
  echo "setup: installing edgesdk[$EXTRAS] into $EDGESDK_VENV (pip)"
  "$VENV_PYTHON" -m pip install -q --disable-pip-version-check -e ".[$EXTRAS]"
  implied=""  # extras that others contain (pyproject.toml): test = reference + hil + farm + ...; hil, bench have reference
  case ",$EXTRAS," in *,test,*) implied="reference,hil,farm" ;; *,hil,*|*,bench,*) implied="reference" ;; esac
  all="$(printf '%s\n' ${installed//,/ } ${EXTRAS//,/ } ${implied//,/ } | sort -u | paste -sd, -)"
  printf '%s\n%s\n' "$key" "$all" > "$STAMP"
  # An editable install leaves edgesdk's modules uncompiled, and with PYTHONDONTWRITEBYTECODE set every
  # edgesdk process would compile them again (~0.1 s); a wheel install compiles them once.
  "$VENV_PYTHON" -m compileall -q edgesdk
fi
echo "setup: done ($("$VENV_PYTHON" -m edgesdk.cli --version) in $EDGESDK_VENV, extras ${EXTRAS}; activate it with: . $EDGESDK_VENV/bin/activate)"
