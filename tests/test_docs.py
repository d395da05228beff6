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


# Paths the documents name that are not files of this repository: written by a run, or another project's.
NOT_IN_REPO = {"benchmarks/results/results.txt",  # benchmarks/run.py writes it
               "tests/requirements.txt",  # Renode's, which pins robotframework
               "boards/riscv-npu-lut"}  # inside the example plugin package (examples/edgesdk-lutaccel/...)


def _expand_braces(token: str) -> list:
    import re

    match = re.search(r"\{([^{}]*)\}", token)
    if not match:
        return [token]
    return [x for alt in match.group(1).split(",")
            for x in _expand_braces(token[:match.start()] + alt + token[match.end():])]


def test_paths_named_in_the_docs_exist():
    """Every repository path the README and docs name in backticks exists (files moved into the package:
    edgesdk/boards, edgesdk/firmware, edgesdk/hil/suites)."""
    import glob
    import re

    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "examples").glob("*/README.md"))]
    missing = []
    for doc in docs:
        for token in re.findall(r"`([^`\s]+)`", doc.read_text()):
            token = token.rstrip(".,:;)")
            if (not re.match(r"^(edgesdk|docs|tests|scripts|examples|benchmarks|boards|firmware)/", token)
                    or "<" in token or token in NOT_IN_REPO):
                continue
            if not all(glob.glob(str(REPO / p)) or glob.glob(str(doc.parent / p)) for p in _expand_braces(token)):
                missing.append(f"{doc.relative_to(REPO)}: {token}")
    assert missing == []


def test_setup_scripts_run_pip_only_in_their_virtualenv():
    """Debian 12 / Ubuntu 24.04 refuse pip outside a virtualenv: the scripts call pip only through the venv's
    python, and the README's two commands are the ones CI runs."""
    import re

    scripts = [REPO / ".ci" / "run", *sorted((REPO / "scripts").glob("*.sh"))]
    for script in scripts:
        for line in script.read_text().splitlines():
            code = line.split("#", 1)[0]
            if re.search(r"\bpip3?\s+install\b", code):
                assert code.strip().startswith('"$VENV_PYTHON" -m pip install'), f"{script.name}: {line}"
    assert "./scripts/test.sh" in (REPO / ".ci" / "run").read_text()
    assert "--extras reference\n" in (REPO / "scripts" / "demo.sh").read_text()
    assert "--extras test,tvm\n" in (REPO / "scripts" / "test.sh").read_text()
