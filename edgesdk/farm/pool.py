"""Where the farm's tasks run: in this process, one after the other, or as Ray tasks on local worker processes
or on an existing Ray cluster.

    with worker_pool(workers=1) as pool: ...                 # serial, in this process (Ray not needed)
    with worker_pool(workers=4) as pool: ...                 # a private local Ray instance with 4 CPUs
    with worker_pool(cluster="head:6379") as pool: ...       # an existing cluster (or "auto", "ray://head:10001")
    results = pool.map(task, items, resources=lambda item: {"board:hifive1-revb": 1})

`map` returns the results in the order of `items`, whatever order the tasks finish in, so a run's results do
not depend on the number of workers or on scheduling. A task's function must be importable by its module path
on every node (edgesdk installed there) and must return (not raise) its failures: an exception escaping a task
is an edgesdk bug. A task that needs a board asks for the custom resource `board:<name>`, which only the node
the board is attached to offers (`ray start ... --resources '{"board:<name>": 1}'`, docs/farm.md), so Ray runs
it there and runs one such task at a time per board.

The local Ray instance is started for the command and shut down when it ends (also on errors, Ctrl-C and
SIGTERM), so no Ray process outlives the command; connecting to a cluster leaves the cluster running.
"""

from __future__ import annotations

import logging
import shutil
import signal
import socket
import tempfile
import threading
from contextlib import contextmanager
from urllib.parse import urlsplit

from ..errors import EdgesdkError, MissingDependency, UsageError

EXTRA = "farm"  # pyproject.toml: ray
LOCAL_OBJECT_STORE_BYTES = 128 << 20  # results are small (a build directory is a few hundred KB)
CONNECT_TIMEOUT_S = 10.0  # for the reachability check of --cluster: Ray itself retries for minutes
BOARD_RESOURCE_PREFIX = "board:"


def board_resource(board_name: str) -> str:
    """The Ray custom resource a node offers for a board attached to it."""
    return BOARD_RESOURCE_PREFIX + board_name


def require_ray(what: str):
    """The `ray` module, or MissingDependency naming the [farm] extra."""
    try:
        import ray
    except ImportError as exc:
        raise MissingDependency(what, EXTRA, "ray", f"Ray: {exc}") from None
    return ray


def check_pool_options(workers: int, cluster: str | None, what: str) -> None:
    """UsageError for a bad --workers / --cluster combination, MissingDependency when they need Ray and it is
    not installed; called before any work starts, so a mistake costs nothing."""
    if cluster is not None and workers != 1:
        raise UsageError("Give either --workers N (local worker processes) or --cluster ADDRESS (an existing Ray "
                         "cluster, which has its own workers), not both.")
    if workers < 1:
        raise UsageError(f"--workers must be 1 (a serial run in this process) or more, not {workers}.")
    if cluster is not None and not cluster.strip():
        raise UsageError("--cluster needs the address of a Ray cluster: HOST:PORT of its head (as printed by "
                         "'ray start --head'), 'auto', or ray://HOST:PORT (Ray Client).")
    if cluster is not None or workers > 1:
        require_ray(what)


def _host_port(address: str) -> tuple | None:
    """(host, port) of a HOST:PORT or ray://HOST:PORT address; None for "auto" (Ray finds the local cluster)."""
    if address == "auto":
        return None
    parts = urlsplit(address if "://" in address else f"gcs://{address}")
    try:
        port = parts.port
    except ValueError:
        port = None
    if not parts.hostname or port is None:
        raise UsageError(f"--cluster {address!r} is not a Ray cluster address: give HOST:PORT of the head node (as "
                         "printed by 'ray start --head', port 6379 by default), 'auto' on a node of the cluster, or "
                         "ray://HOST:PORT for Ray Client (port 10001 by default).")
    return parts.hostname, port


def check_reachable(address: str) -> None:
    """UsageError unless something accepts connections at the cluster's address: Ray's own connection attempts
    retry for minutes, printing a log line every few seconds, before they give up."""
    target = _host_port(address)
    if target is None:
        return
    try:
        with socket.create_connection(target, timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise UsageError(f"Cannot reach the Ray cluster at {address} ({reason}). Start its head with 'ray start "
                         "--head' on that host (docs/farm.md), check the address and port and that no firewall is in "
                         "the way, or run locally with --workers N instead.") from None


class SerialPool:
    """Tasks run here, one after the other."""

    workers = 1
    description = "serial, in this process"

    def map(self, task, items, resources=None, on_result=None) -> list:
        results = []
        for index, item in enumerate(items):
            results.append(task(item))
            if on_result:
                on_result(index, results[-1])
        return results

    def missing_resources(self, names) -> list:
        """None: a serial run uses what is attached to this machine."""
        return []


class RayPool:
    """Tasks run as Ray tasks (one CPU each, plus the resources they ask for)."""

    def __init__(self, ray, description: str):
        self.ray, self.description = ray, description
        self.workers = int(ray.cluster_resources().get("CPU", 0))

    def missing_resources(self, names) -> list:
        """Of `names` (custom resources such as board:<name>), those no node of the cluster offers: a task asking
        for one would wait forever."""
        offered = self.ray.cluster_resources()
        return sorted(name for name in set(names) if offered.get(name, 0) < 1)

    def map(self, task, items, resources=None, on_result=None) -> list:
        remote = self.ray.remote(task)
        pending = {}
        for index, item in enumerate(items):
            options = {"num_cpus": 1, "max_retries": 0}
            if resources:
                options["resources"] = dict(resources(item))
            pending[remote.options(**options).remote(item)] = index
        results = [None] * len(pending)
        while pending:
            with _signals_unwrapped():
                done, _ = self.ray.wait(list(pending), num_returns=1)
            for ref in done:
                index = pending.pop(ref)
                results[index] = self._get(ref)
                if on_result:
                    on_result(index, results[index])
        return results

    def _get(self, ref):
        try:
            with _signals_unwrapped():
                return self.ray.get(ref)
        except self.ray.exceptions.RayTaskError as exc:  # the task raised: an edgesdk error or bug, re-raised here
            cause = getattr(exc, "cause", None)
            if isinstance(cause, EdgesdkError):
                raise cause from None
            # An edgesdk bug on a worker: reported as one (without the remote traceback Ray's message carries).
            raise RuntimeError(f"a task failed on a Ray worker: {type(cause).__name__}: {cause}") from None
        except self.ray.exceptions.RayError as exc:  # a worker or node died (killed, out of memory, lost)
            raise EdgesdkError(f"A Ray worker running an edgesdk task failed ({type(exc).__name__}: "
                               f"{str(exc).strip().splitlines()[0] if str(exc).strip() else 'no details'}). Run "
                               "again; with --cluster, check the cluster's nodes ('ray status').") from None


@contextmanager
def worker_pool(workers: int = 1, cluster: str | None = None, what: str = "This command", local_resources=None):
    """A pool for the command's tasks (see the module docstring); Ray is shut down when the block ends.
    `local_resources` ({name: amount}): what the local Ray instance offers besides CPUs (boards attached to this
    machine, so that one task at a time uses each); a cluster's nodes declare their own."""
    check_pool_options(workers, cluster, what)
    if cluster is None and workers == 1:
        yield SerialPool()
        return
    ray = require_ray(what)
    if cluster is not None:
        check_reachable(cluster)
    # A local instance keeps its sockets and logs in a folder of its own, removed with it (not in /tmp/ray, where
    # every run would leave a session folder behind); short, as Unix socket paths must be.
    temp_dir = None if cluster is not None else tempfile.mkdtemp(prefix="edgesdk-ray-")
    try:
        yield from _session(ray, workers, cluster, local_resources, temp_dir)
    finally:
        if temp_dir:
            shutil.rmtree(temp_dir, ignore_errors=True)


def _session(ray, workers: int, cluster: str | None, local_resources, temp_dir):
    try:
        try:
            with _keeping_sigterm_handler():
                if cluster is not None:
                    ray.init(address=cluster, logging_level=logging.ERROR, log_to_driver=False)
                    description = f"Ray cluster {cluster}"
                else:
                    # "local": a private instance, even if this machine runs a cluster (or RAY_ADDRESS names one).
                    ray.init(address="local", num_cpus=workers, resources=dict(local_resources or {}),
                             include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False,
                             object_store_memory=LOCAL_OBJECT_STORE_BYTES, _temp_dir=temp_dir)
                    description = f"{workers} local Ray worker processes"
        except ImportError as exc:  # ray://: Ray Client needs ray[client]
            raise MissingDependency(f"Connecting to {cluster} through Ray Client", "farm", "ray",
                                    f"{exc}; Ray Client also needs: pip install 'ray[client]'") from None
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise UsageError(_init_failure(exc, workers, cluster)) from None
        yield RayPool(ray, description)
    finally:  # also after a failed or interrupted start: whatever it started goes
        ray.shutdown()


@contextmanager
def _signals_unwrapped():
    """Ctrl-C or SIGTERM while Ray's Cython code waits arrives as a SystemError wrapping the handler's exception
    (KeyboardInterrupt, the CLI's Terminated); raise that one, so the command unwinds as it does elsewhere."""
    try:
        yield
    except SystemError as exc:
        cause = exc.__cause__ or exc.__context__
        if cause is not None and not isinstance(cause, Exception):
            raise cause from None
        raise


@contextmanager
def _keeping_sigterm_handler():
    """ray.init installs SIGTERM handlers of its own (one exits on the spot, one prints a stack dump); put the
    command's back, so that SIGTERM unwinds as edgesdk's commands do: staged outputs removed, Ray shut down."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if main else None
    try:
        yield
    finally:
        if main and previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _init_failure(exc: Exception, workers: int, cluster: str | None) -> str:
    where = f"the Ray cluster at {cluster}" if cluster else f"a local Ray instance with {workers} workers"
    text = f"Cannot start or connect to {where}: {str(exc).strip().splitlines()[0] if str(exc).strip() else exc!r}. "
    if cluster is None:
        return text + "Run serially with --workers 1."
    return text + ("Check the address; if the cluster uses token authentication (Ray's default when its head has a "
                   "token), set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN (the output of 'ray get-auth-token' on the "
                   "head) for this command (docs/farm.md); or run locally with --workers N.")
