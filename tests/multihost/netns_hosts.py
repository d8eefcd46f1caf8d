"""Simulated hosts: network namespaces on one bridge, each joined by a veth pair, with an address from
198.18.0.0/15 (the benchmarking range, never routed). Shared by tests/multihost/test_netns.py and
bench/network_bench.py (which also shapes the links with tc). Root only.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

SOURCE = Path(os.environ.get("FANOUT_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BIN = Path(os.environ.get("FANOUT_BIN_DIR", SOURCE / "build" / "bin"))
TAG = "fnt"  # every name made here starts with fnt<pid>
SUBNET = "198.18.0"


def ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check, timeout=30)


def remove_leftovers():
    """Namespaces and links of earlier runs whose process is gone."""
    for line in ip("netns", "list", check=False).stdout.splitlines():
        m = re.match(rf"({TAG}(\d+)h\d+)", line)
        if m and not Path(f"/proc/{m.group(2)}").exists():
            ip("netns", "del", m.group(1), check=False)
    for line in ip("-o", "link", "show", check=False).stdout.splitlines():
        m = re.match(rf"\d+: ({TAG}(\d+)(?:br|v\d+))[@:]", line)
        if m and not Path(f"/proc/{m.group(2)}").exists():
            ip("link", "del", m.group(1), check=False)


class Hosts:
    """n namespaces on one bridge: host i (1-based) is SUBNET.(10 + i)."""

    def __init__(self, n):
        self.prefix = f"{TAG}{os.getpid()}"
        self.bridge = f"{self.prefix}br"
        self.n = n
        self.made_bridge = False
        self.namespaces = []
        self.procs = []

    def ns(self, i):
        return f"{self.prefix}h{i}"

    def veth(self, i):
        return f"{self.prefix}v{i}"  # the root side of host i's link

    def addr(self, i):
        return f"{SUBNET}.{10 + i}"

    def create(self):
        ip("link", "add", self.bridge, "type", "bridge")
        self.made_bridge = True
        ip("addr", "add", f"{SUBNET}.1/24", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")
        for i in range(1, self.n + 1):
            ip("netns", "add", self.ns(i))
            self.namespaces.append(self.ns(i))
            ip("link", "add", self.veth(i), "type", "veth", "peer", "name", "eth0", "netns", self.ns(i))
            ip("link", "set", self.veth(i), "master", self.bridge, "up")
            ip("-n", self.ns(i), "addr", "add", f"{self.addr(i)}/24", "dev", "eth0")
            ip("-n", self.ns(i), "link", "set", "eth0", "up")
            ip("-n", self.ns(i), "link", "set", "lo", "up")

    def reachable(self, i):
        """None when the root namespace reaches host i over TCP, else why not."""
        listener = subprocess.Popen(
            ["ip", "netns", "exec", self.ns(i), sys.executable, "-c",
             "import socket, sys\n"
             "s = socket.socket(); s.bind((sys.argv[1], 7999)); s.listen(1); s.settimeout(10)\n"
             "print('listening', flush=True)\n"
             "c, _ = s.accept(); c.sendall(b'ok')\n", self.addr(i)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            if listener.stdout.readline().strip() != "listening":
                return "a listener inside a namespace did not start: " + listener.stderr.read()
            try:
                with socket.create_connection((self.addr(i), 7999), timeout=5) as c:
                    return None if c.recv(2) == b"ok" else "no answer through the bridge"
            except OSError as e:
                return f"the bridge does not carry TCP here ({e})"
        finally:
            listener.kill()
            listener.wait()

    def shape(self, i, rate_bits, burst_bytes=None):
        """Host i's link carries at most rate_bits per second each way (tc tbf on both ends of its veth pair:
        eth0 inside the namespace for what it sends, the root side for what it receives). The burst is 10 ms
        of the rate, at least 64 KiB (tbf needs rate/HZ at least)."""
        burst = burst_bytes or max(64 * 1024, rate_bits // 8 // 100)
        args = ["root", "tbf", "rate", str(rate_bits), "burst", str(burst), "latency", "100ms"]
        subprocess.run(["ip", "netns", "exec", self.ns(i), "tc", "qdisc", "replace", "dev", "eth0", *args],
                       check=True, capture_output=True, text=True, timeout=30)
        subprocess.run(["tc", "qdisc", "replace", "dev", self.veth(i), *args], check=True, capture_output=True,
                       text=True, timeout=30)

    def unshape(self, i):
        subprocess.run(["ip", "netns", "exec", self.ns(i), "tc", "qdisc", "del", "dev", "eth0", "root"],
                       capture_output=True, timeout=30)
        subprocess.run(["tc", "qdisc", "del", "dev", self.veth(i), "root"], capture_output=True, timeout=30)

    def start_server(self, i, dataset, partition, env, extra=()):
        cmd = ["ip", "netns", "exec", self.ns(i), str(BIN / "fanout-server"), "--dataset", str(dataset),
               "--partition", str(partition), "--bind", self.addr(i), "--port", "7000", "--admin-port", "7001",
               # These "hosts" share this machine's filesystem: without this a
               # trainer here would map their exports (Unix sockets know no
               # network namespace) instead of reaching them over the network.
               "--local-socket", "off", *extra]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        self.procs.append(p)
        deadline = time.time() + 120
        line = ""
        while time.time() < deadline:
            line = p.stdout.readline()
            if not line or "ready" in line:
                break
        assert "ready" in line, f"server on host {i} did not start: {line!r}"
        assert f"rpc {self.addr(i)}:7000" in line, line
        return f"{self.addr(i)}:7000"

    def link(self, i, up):
        ip("link", "set", self.veth(i), "up" if up else "down")

    def destroy(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
            p.wait(timeout=30)
            if p.stdout:
                p.stdout.close()
        for i in range(1, self.n + 1):
            # Explicitly: a namespace outlives its name while sockets in it
            # still hold unsent data (a server killed behind a downed link),
            # and its veth pair with it.
            ip("link", "del", self.veth(i), check=False)
        for ns in self.namespaces:
            ip("netns", "del", ns, check=False)
        if self.made_bridge:
            ip("link", "del", self.bridge, check=False)


def can_make_namespaces():
    if os.geteuid() != 0:
        return "not root: network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN"
    if shutil.which("ip") is None:
        return "the ip command (iproute2) is missing"
    probe = f"{TAG}{os.getpid()}probe"
    r = ip("netns", "add", probe, check=False)
    if r.returncode != 0:
        return f"cannot create a network namespace here: {r.stderr.strip()}"
    ip("netns", "del", probe, check=False)
    return None
