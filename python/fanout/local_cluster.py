"""LocalCluster: one fanout-server per partition of a dataset folder, on free
loopback ports, for notebooks, tests and single-machine runs."""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

from ._bins import find_binary
from .errors import InvalidArgument, NotFound, Unavailable


def read_ready_record(path):
    """fanout-server's ready record (--ready-file: one JSON object, written whole) as a dict with pid,
    dataset, partition, num_parts, host, rpc_port, admin_port (0 = none), data_port (0 = off),
    local_socket ("" = off) and version (docs/DEPLOY.md, "The ready record"); None while the file does
    not exist."""
    try:
        with open(path, "rb") as f:
            data = f.read(65536)
    except FileNotFoundError:
        return None
    try:
        record = json.loads(data.decode("utf-8"))["fanout_server_ready"]
        for key in ("host", "rpc_port", "admin_port", "partition", "num_parts"):
            record[key]  # noqa: B018 - present, or KeyError names it
        if not isinstance(record["rpc_port"], int) or not isinstance(record["admin_port"], int):
            raise TypeError("ports must be integers")
        return record
    except (ValueError, KeyError, TypeError) as e:  # UnicodeDecodeError is a ValueError
        raise Unavailable("%s is not a fanout-server ready record: %s: %s" % (path, type(e).__name__, e))


def _tail(path, limit=2000):
    try:
        with open(path, errors="replace") as f:
            f.seek(max(0, os.path.getsize(path) - limit))
            return f.read().strip()
    except OSError:
        return ""


class LocalCluster:
    """Starts one ``fanout-server`` per partition of ``dataset_dir``, waits
    until each serves, and stops them on exit (also on exceptions and
    Ctrl-C). Use as a context manager::

        with fanout.LocalCluster("/data/cora2") as lc:
            cluster = lc.cluster()

    Each server's output goes to a log file (``lc.log_paths``, in ``log_dir``: a new temporary
    folder by default, removed on a clean stop), never to a pipe that nobody reads, so a chatty server
    never blocks; with ``quiet=False`` it goes to this process's stdout/stderr instead. Servers are
    ready when they have written their ready record (``--ready-file``); they exit with this process
    (``--parent-pid``).
    """

    def __init__(self, dataset_dir, *, data_plane="auto", startup_timeout_s=120.0, server_args=(),
                 quiet=True, log_dir=None):
        meta_path = os.path.join(dataset_dir, "meta.json")
        if not os.path.isfile(meta_path):
            raise NotFound("%s: not a fanout dataset folder (no meta.json; write one with fanout.partition)"
                           % dataset_dir)
        try:
            with open(meta_path) as f:
                meta = json.load(f)
        except ValueError as e:
            raise InvalidArgument("%s: meta.json does not parse: %s" % (dataset_dir, e))
        self.dataset_dir = dataset_dir
        self.num_parts = int(meta.get("num_parts", 0))
        if self.num_parts < 1:
            raise InvalidArgument("%s: meta.json names no partitions" % dataset_dir)
        if data_plane not in ("auto", "ucx", "tcp"):
            raise InvalidArgument("data_plane must be 'auto', 'ucx' or 'tcp', not %r" % (data_plane,))
        self.data_plane = data_plane
        self.startup_timeout_s = float(startup_timeout_s)
        self.server_args = list(server_args)
        self.quiet = quiet
        self.log_dir = log_dir
        self._own_dir = None
        self.log_paths = []
        self.addresses = []
        self.admin_addresses = []
        self._procs = []

    def start(self):
        server = find_binary("fanout-server")
        if self.log_dir is None:
            self._own_dir = self.log_dir = tempfile.mkdtemp(prefix="fanout-local-cluster-")
        os.makedirs(self.log_dir, exist_ok=True)
        try:
            ready_files = []
            for p in range(self.num_parts):
                ready = os.path.join(self.log_dir, "server-p%d.ready" % p)
                if os.path.exists(ready):
                    os.unlink(ready)  # a record of an earlier run is not this server's
                args = [server, "--dataset", self.dataset_dir, "--partition", str(p), "--port", "0",
                        "--admin-port", "0", "--ready-file", ready, "--parent-pid", str(os.getpid())]
                if self.data_plane == "tcp":
                    args += ["--data-plane", "off"]
                args += self.server_args
                log_path = os.path.join(self.log_dir, "server-p%d.log" % p)
                if self.quiet:
                    with open(log_path, "ab") as log:
                        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
                else:
                    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL)
                self._procs.append(proc)
                self.log_paths.append(log_path if self.quiet else None)
                ready_files.append(ready)
            for p, proc in enumerate(self._procs):
                record = self._wait_ready(p, proc, ready_files[p])
                self.addresses.append("%s:%d" % (record["host"], record["rpc_port"]))
                self.admin_addresses.append("%s:%d" % (record["host"], record["admin_port"])
                                            if record["admin_port"] else "off")
        except BaseException:
            self.stop(keep_logs=True)
            raise
        return self

    @property
    def pids(self):
        """The servers' process ids, by partition (empty before start)."""
        return [proc.pid for proc in self._procs]

    def _wait_ready(self, p, proc, ready_file):
        deadline = time.monotonic() + self.startup_timeout_s
        while True:
            record = read_ready_record(ready_file)
            if record is not None:
                return record
            if proc.poll() is not None:
                log = self.log_paths[p]
                raise Unavailable("fanout-server for partition %d of %s exited with status %d%s"
                                  % (p, self.dataset_dir, proc.returncode,
                                     ": %s (log: %s)" % (_tail(log), log) if log else ""))
            if time.monotonic() > deadline:
                raise Unavailable("fanout-server for partition %d of %s did not become ready within %.0f s%s"
                                  % (p, self.dataset_dir, self.startup_timeout_s,
                                     " (log: %s)" % self.log_paths[p] if self.log_paths[p] else ""))
            time.sleep(0.02)

    def stop(self, keep_logs=False):
        """Stops the servers (SIGTERM, then SIGKILL after 10 s). The log folder this cluster made
        goes too unless a server failed or keep_logs is set."""
        failed = keep_logs
        for proc in self._procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            else:
                failed = True  # it ended before it was asked to
        for proc in self._procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs = []
        if self._own_dir is not None and not failed:
            shutil.rmtree(self._own_dir, ignore_errors=True)
        self._own_dir = None  # kept after a failure: the error named the log

    def cluster(self, **kwargs):
        """A fanout.Cluster over these servers (keyword arguments as Cluster's)."""
        from . import Cluster
        kwargs.setdefault("data_plane", self.data_plane)
        return Cluster(partitions=list(self.addresses), **kwargs)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def __del__(self):
        try:
            self.stop()
        except Exception:
            pass
