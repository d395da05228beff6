# Sourced by scripts/setup.sh, demo.sh and test.sh: where edgesdk's virtualenv is.
#   EDGESDK_VENV   the virtualenv to create or reuse; default: the active one ($VIRTUAL_ENV), else .venv in
#                  the checkout. Debian 12 / Ubuntu 24.04 refuse `pip install` outside a virtualenv
#                  (externally-managed-environment), so edgesdk is always installed into one.
EDGESDK_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
EDGESDK_VENV="${EDGESDK_VENV:-${VIRTUAL_ENV:-$EDGESDK_ROOT/.venv}}"
VENV_PYTHON="$EDGESDK_VENV/bin/python"
