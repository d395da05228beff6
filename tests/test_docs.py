"""Documentation generated from code stays in sync with the code."""

import subprocess
import sys

from conftest import REPO


def test_supported_ops_doc_is_generated_from_constraints():
    proc = subprocess.run([sys.executable, "-m", "edgesdk", "inspect", "--list-ops", "--markdown"],
                          capture_output=True, text=True, cwd=REPO, check=True)
    doc = (REPO / "docs" / "supported-ops.md").read_text()
    assert doc == proc.stdout, "docs/supported-ops.md is stale: regenerate it with " \
        "'python -m edgesdk inspect --list-ops --markdown > docs/supported-ops.md'"
