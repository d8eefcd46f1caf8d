"""Fanout across hosts, simulated with network namespaces.

Each server runs in its own network namespace ("host"), joined to the root
namespace by a veth pair on one bridge, with an address from 198.18.0.0/15
(the benchmarking range, never routed; no other range is used) and bound to
that address only. GraphSAGE trains on Cora from the root namespace through
them (2 partitions x 2 replicas on 4 hosts) and reaches exactly the accuracy
of training in process. Then a host's link goes down mid-epoch: the client
fails over to the partition's other replica and the result is unchanged;
with both hosts of a partition down, training fails with an error naming
them, within a bound, never a hang.

Root only: it skips, saying why, where network namespaces cannot be made.
Everything it creates (namespaces, veth pairs, the bridge, server processes)
is removed at the end, also when a test fails; leftovers of a run that was
killed are removed by the next one.

Environment: FANOUT_BIN_DIR (the built binaries), FANOUT_SOURCE_DIR (repo).
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from netns_hosts import BIN, SOURCE, Hosts, can_make_namespaces, ip, remove_leftovers  # noqa: E402
TRAIN = ["--epochs", "6", "--seed", "3", "--torch-threads", "1", "--workers", "1", "--fanouts", "10,5"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    why = can_make_namespaces()
    if why:
        pytest.skip(why)
    remove_leftovers()
    data = tmp_path_factory.mktemp("netns") / "cora2"
    subprocess.run([str(BIN / "fanout-partition"), "--format", "planetoid", "--input",
                    str(SOURCE / "datasets" / "data" / "planetoid" / "cora"), "--parts", "2", "--output", str(data),
                    "--quiet"], check=True, timeout=300, stdout=subprocess.DEVNULL)
    hosts = Hosts(4)
    # The data plane as between hosts: UCX over tcp only (no shared memory,
    # which these "hosts" would otherwise share), each side on its link to
    # the bridge (the test harness pins UCX to lo, which inside a namespace
    # reaches nobody).
    env = dict(os.environ, UCX_TLS="tcp,self", UCX_NET_DEVICES=hosts.bridge)
    server_env = dict(env, UCX_NET_DEVICES="eth0")
    try:
        hosts.create()
        why = hosts.reachable(1)
        if why:
            pytest.skip(why)
        replicas = [[hosts.start_server(i, data, p, server_env) for i in (2 * p + 1, 2 * p + 2)] for p in (0, 1)]
        spec = tmp_path_factory.mktemp("netns") / "cluster.json"
        spec.write_text(json.dumps({"partitions": [{"partition": p, "replicas": r} for p, r in enumerate(replicas)]}))
        yield {"hosts": hosts, "data": data, "spec": spec, "env": env}
    finally:
        hosts.destroy()
        assert hosts.prefix not in ip("netns", "list").stdout, "a namespace was left behind"
        assert hosts.prefix not in ip("-o", "link", "show").stdout, "a link was left behind"


def train(args, env, timeout=600):
    return subprocess.run([str(BIN / "train-graphsage"), *args, *TRAIN], capture_output=True, text=True,
                          timeout=timeout, env=env)


def accuracy(out):
    m = re.search(r"^test_accuracy=([\d.]+)$", out, re.M)
    assert m, f"no test_accuracy line in:\n{out}"
    return float(m.group(1))


@pytest.fixture(scope="module")
def local_accuracy(cluster):
    r = train(["--dataset", str(cluster["data"])], cluster["env"])
    assert r.returncode == 0, r.stderr
    return accuracy(r.stdout)


def test_training_through_servers_on_four_hosts_equals_training_in_process(cluster, local_accuracy):
    r = train(["--cluster", str(cluster["spec"])], cluster["env"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert accuracy(r.stdout) == local_accuracy
    assert local_accuracy > 0.7, "GraphSAGE on Cora should pass 0.7 test accuracy even in 6 epochs"
    assert "198.18.0.1" in r.stdout  # the description names the hosts


def train_with_links_down(cluster, epoch, down):
    """Trains through the cluster; once it reports `epoch`, the links of the
    hosts `down` go down (up again at the end, whatever happens). Returns
    (rc, stdout, stderr, seconds from the links going down to the end)."""
    hosts = cluster["hosts"]
    p = subprocess.Popen([str(BIN / "train-graphsage"), "--cluster", str(cluster["spec"]), "--call-timeout-ms", "2000",
                          "--connect-timeout-ms", "1000", *TRAIN], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=cluster["env"])
    out = []
    acted_at = None
    try:
        for line in p.stdout:
            out.append(line)
            if acted_at is None and re.match(rf"epoch\s+{epoch}\s", line):
                for i in down:
                    hosts.link(i, up=False)
                acted_at = time.time()
        err = p.stderr.read()
        rc = p.wait(timeout=300)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for i in down:
            hosts.link(i, up=True)
    assert acted_at is not None, "training never reached epoch %d:\n%s" % (epoch, "".join(out))
    return rc, "".join(out), err, time.time() - acted_at


def test_hosts_whose_links_go_down_mid_epoch_are_failed_over_from(cluster, local_accuracy):
    # Host 1 (partition 0's first replica) and host 4 (partition 1's second):
    # whichever replica a session started on, one of its two is lost.
    hosts = cluster["hosts"]
    rc, out, err, _ = train_with_links_down(cluster, 2, down=(1, 4))
    assert rc == 0, out + err
    # The same batches, so the same model: failover changes no result.
    assert accuracy(out) == local_accuracy
    moved = re.findall(r"partition (\d): (\S+) failed .*; now using replica (\S+)", err)
    assert moved, err
    lost = {f"{hosts.addr(1)}:7000": f"{hosts.addr(2)}:7000", f"{hosts.addr(4)}:7000": f"{hosts.addr(3)}:7000"}
    for part, frm, to in moved:
        assert lost.get(frm) == to, f"partition {part} moved from {frm} to {to}"
    for frm in {m[1] for m in moved}:
        assert re.search(rf"replica {re.escape(frm)}: .*[1-9]\d* failed requests", out), out


def test_a_partition_whose_hosts_all_go_down_fails_naming_them(cluster):
    hosts = cluster["hosts"]
    rc, out, err, seconds = train_with_links_down(cluster, 1, down=(3, 4))
    assert rc != 0, out
    assert f"{hosts.addr(3)}:7000" in err and f"{hosts.addr(4)}:7000" in err, err
    assert seconds < 120, f"took {seconds:.0f} s to give up"


def test_a_mixed_cluster_of_a_local_and_remote_servers_trains_exactly_as_in_process(cluster, local_accuracy):
    # Partition 0 served on this host (its export mapped and sampled by the
    # trainer), partition 1 by its two "hosts" over UCX tcp: the same model.
    env = dict(os.environ, UCX_NET_DEVICES="lo")
    server = subprocess.Popen([str(BIN / "fanout-server"), "--dataset", str(cluster["data"]), "--partition", "0",
                               "--port", "0", "--admin-port", "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=env)
    try:
        line = ""
        deadline = time.time() + 120
        while time.time() < deadline and "ready" not in line:
            line = server.stdout.readline()
            if not line:
                break
        m = re.search(r"rpc (\S+) admin (\S+) data .* local (\S+);", line)
        assert m and m.group(3) != "off", f"no local export in the ready line: {line!r}"
        rpc, admin = m.group(1), m.group(2)
        remote = json.loads(cluster["spec"].read_text())["partitions"][1]
        spec = cluster["spec"].with_name("mixed.json")
        spec.write_text(json.dumps({"partitions": [{"partition": 0, "replicas": [rpc]}, remote]}))
        r = train(["--cluster", str(spec)], cluster["env"])
        assert r.returncode == 0, r.stdout + r.stderr
        assert accuracy(r.stdout) == local_accuracy
        import urllib.request
        stats = json.loads(urllib.request.urlopen(f"http://{admin}/stats", timeout=10).read())
        local = stats["totals"]["by_path"]["local"]
        assert local["requests"] > 0 and stats["totals"]["sampled_edges"] > 0, stats["totals"]
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
