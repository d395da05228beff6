"""User-facing errors.

Every failure a user can cause (bad model, unsupported op, model too large, missing toolchain,
firmware fault) raises an EdgesdkError subclass. The CLI prints its message as one paragraph and
exits non-zero; it never shows a Python traceback for these.
"""


class EdgesdkError(Exception):
    """Base class; `str(err)` is the complete, actionable message for the user."""

    exit_code = 1


class ModelError(EdgesdkError):
    """The model file is unreadable, malformed or inconsistent."""

    exit_code = 2


class UnsupportedOpError(EdgesdkError):
    """The model uses an op (or op variant) no target can run."""

    exit_code = 3


class MemoryFitError(EdgesdkError):
    """The model does not fit the board's memory."""

    exit_code = 4


class ToolchainError(EdgesdkError):
    """The cross toolchain (or another build tool) is missing or failed."""

    exit_code = 5


class EmulatorError(EdgesdkError):
    """The firmware faulted, timed out or an emulated peripheral (an accelerator) reported an error."""

    exit_code = 6


class UsageError(EdgesdkError):
    """Bad command-line arguments or inputs (wrong input shape, missing build directory, ...)."""

    exit_code = 7


class MissingDependency(UsageError):
    """An optional part of edgesdk is used without the pip extra that installs it; the message names the
    extra (`pip install 'edgesdk[reference]'`)."""

    def __init__(self, what: str, extra: str, module: str, detail: str = ""):
        super().__init__(
            f"{what} needs the Python package(s) of edgesdk's [{extra}] extra, which are not installed"
            f"{f' ({detail})' if detail else ''}. Install them with: pip install 'edgesdk[{extra}]' (from a "
            f"checkout: pip install -e '.[{extra}]', or ./scripts/setup.sh --extras {extra}).")
        self.extra, self.module = extra, module


class ProbeError(EdgesdkError):
    """`edgesdk flash`: no probe or GDB server to talk to, or the board refused the image (the message says which)."""

    exit_code = 9


class EnvironmentFailure(EdgesdkError):
    """The machine refused: disk full, read-only file system, a mount point as output, a closed pipe."""

    exit_code = 10
