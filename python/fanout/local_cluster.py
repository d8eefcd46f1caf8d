"""LocalCluster: one fanout-server per partition of a dataset folder, on free
loopback ports, for notebooks, tests and single-machine runs."""

import ctypes
import json
import os
import select
import signal
import subprocess
import time

from ._bins import find_binary
from .errors import InvalidArgument, NotFound, Unavailable


def _die_with_parent():
    # The servers go when this Python process dies, however it dies.
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class LocalCluster:
    """Starts one ``fanout-server`` per partition of ``dataset_dir``, waits
    until each serves, and stops them on exit (also on exceptions and
    Ctrl-C). Use as a context manager::

        with fanout.LocalCluster("/data/cora2") as lc:
            cluster = lc.cluster()
    """

    def __init__(self, dataset_dir, *, data_plane="auto", startup_timeout_s=120.0, server_args=(),
                 quiet=True):
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
        self.addresses = []
        self.admin_addresses = []
        self._procs = []

    def start(self):
        server = find_binary("fanout-server")
        try:
            for p in range(self.num_parts):
                args = [server, "--dataset", self.dataset_dir, "--partition", str(p), "--port", "0",
                        "--admin-port", "0"]
                if self.data_plane == "tcp":
                    args += ["--data-plane", "off"]
                args += self.server_args
                proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE if self.quiet else None,
                                        preexec_fn=_die_with_parent, text=True)
                self._procs.append(proc)
            for p, proc in enumerate(self._procs):
                rpc, admin = self._wait_ready(p, proc)
                self.addresses.append(rpc)
                self.admin_addresses.append(admin)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, p, proc):
        deadline = time.monotonic() + self.startup_timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Unavailable("fanout-server for partition %d of %s did not become ready within %.0f s"
                                  % (p, self.dataset_dir, self.startup_timeout_s))
            ready, _, _ = select.select([proc.stdout], [], [], min(left, 0.5))
            if ready:
                line = proc.stdout.readline()
                if line.startswith("fanout-server ready:"):
                    words = line.split()
                    rpc = words[words.index("rpc") + 1]
                    admin = words[words.index("admin") + 1] if "admin" in words else "off"
                    return rpc, admin
                if line:
                    continue
            if proc.poll() is not None:
                err = proc.stderr.read() if proc.stderr else ""
                raise Unavailable("fanout-server for partition %d of %s exited with status %d: %s"
                                  % (p, self.dataset_dir, proc.returncode, err.strip()[-2000:]))

    def stop(self):
        for proc in self._procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self._procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            for f in (proc.stdout, proc.stderr):
                if f:
                    f.close()
        self._procs = []

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
