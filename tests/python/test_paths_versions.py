"""What a new user tripped over: each partition's path as it is (all local, mixed, Thrift only), the
ready record's one schema, versions on every surface, the import error that names the interpreter, and
the OGB format's missing-file error."""
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request

import pytest
import torch

from conftest import ROOT


def _bin(fanout, name):
    return fanout.find_binary(name)


def _paths_by_partition(paths):
    out = {}
    for p in paths:
        out.setdefault(p["partition"], []).append(p)
    return out


@pytest.fixture(scope="module")
def remote(cora2, fanout):
    """The same dataset served again with no same-host export: its partitions take the RPC paths here."""
    with fanout.LocalCluster(cora2, server_args=["--local-socket", "off"]) as lc:
        yield lc


def test_an_all_local_cluster_says_local_for_every_partition(local, fanout):
    c = local.cluster()
    assert c.data_plane == "auto"  # what was asked, not what happened
    assert c.local_partitions == [True, True]
    paths = c.paths()
    assert [p["partition"] for p in paths] == [0, 1]
    for p in paths:
        assert p["path"] == "local" and p["sampling"] == "local", p
        assert p["replica"] == local.addresses[p["partition"]]
    # A loader's workers: every partition read and sampled here, one session per worker.
    loader = fanout.NodeLoader(c, "train", num_neighbors=[5, 3], batch_size=32, num_workers=2)
    for _ in loader:
        pass
    st = loader.stats()
    assert st["local_bytes"] > 0 and st["thrift_bytes"] + st["ucx_bytes"] == 0
    by = _paths_by_partition(st["paths"])
    assert sorted(by) == [0, 1]
    for p, entries in by.items():
        assert [(e["path"], e["sampling"], e["sessions"]) for e in entries] == [("local", "local", 2)], entries


def test_local_sampling_off_reads_here_and_samples_over_rpc(local, fanout):
    c = local.cluster(local_sampling="off")
    assert c.local_sampling == "off"
    for p in c.paths():
        assert p["path"] == "local" and p["sampling"] in ("ucx", "thrift"), p
    # The same choice on a loader over a cluster that samples here.
    c2 = local.cluster()
    loader = fanout.NodeLoader(c2, "train", num_neighbors=[5], batch_size=64, local_sampling="off")
    for _ in loader:
        pass
    for p in loader.stats()["paths"]:
        assert p["path"] == "local" and p["sampling"] in ("ucx", "thrift"), p
    with pytest.raises(fanout.InvalidArgument, match="local_sampling"):
        fanout.NodeLoader(c2, "train", local_sampling="yes")


def test_a_thrift_only_cluster_says_thrift(local, fanout):
    c = local.cluster(data_plane="tcp")
    assert c.data_plane == "tcp"
    assert c.local_partitions == [False, False]
    for p in c.paths():
        assert (p["path"], p["sampling"]) == ("thrift", "thrift"), p
    loader = fanout.NodeLoader(c, "train", num_neighbors=[5], batch_size=64, num_workers=2)
    for _ in loader:
        pass
    st = loader.stats()
    assert st["local_bytes"] == 0 and st["thrift_bytes"] > 0 and st["ucx_bytes"] == 0
    assert {(p["path"], p["sessions"]) for p in st["paths"]} == {("thrift", 2)}


def test_a_mixed_cluster_names_each_partitions_path(local, remote, fanout):
    # Partition 0 from a server that exports here, partition 1 from one that does not.
    c = fanout.Cluster(partitions=[local.addresses[0], remote.addresses[1]])
    assert c.local_partitions == [True, False]
    by = _paths_by_partition(c.paths())
    assert [(e["path"], e["sampling"]) for e in by[0]] == [("local", "local")]
    # The remote partition: UCX where its server runs the data plane, else Thrift.
    expected = "ucx" if c._c.ucx_available else "thrift"
    assert [(e["path"], e["sampling"]) for e in by[1]] == [(expected, expected)]
    assert by[1][0]["replica"] == remote.addresses[1]
    loader = fanout.NodeLoader(c, "train", num_neighbors=[5, 3], batch_size=32, num_workers=2)
    for _ in loader:
        pass
    st = loader.stats()
    assert st["local_bytes"] > 0 and st["thrift_bytes"] + st["ucx_bytes"] > 0
    by = _paths_by_partition(st["paths"])
    assert by[0][0]["path"] == "local" and by[1][0]["path"] == expected
    assert by[1][0]["sessions"] == 2
    # fanout-ctl info --cluster prints the same table.
    spec = {"partitions": [{"partition": 0, "replicas": [local.addresses[0]]},
                           {"partition": 1, "replicas": [remote.addresses[1]]}]}
    out = subprocess.run([_bin(fanout, "fanout-ctl"), "info", "--cluster", "/dev/stdin"], input=json.dumps(spec),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines() if re.match(r"^\d+\s", line)]
    assert [(r[0], r[2], r[3]) for r in rows] == [("0", "local", "local"), ("1", expected, expected)], out.stdout


def _documented_ready_record():
    """The example record in docs/DEPLOY.md ("The ready record"), as text."""
    with open(os.path.join(ROOT, "docs", "DEPLOY.md")) as f:
        text = f.read()
    m = re.search(r"<!-- ready-record-example -->\s*```json\n(.*?)```", text, re.S)
    assert m, "docs/DEPLOY.md lost its ready-record example"
    return m.group(1)


def test_the_documented_ready_record_is_what_servers_write(cora2, fanout, tmp_path):
    from fanout.local_cluster import read_ready_record
    doc = tmp_path / "doc.ready"
    doc.write_text(_documented_ready_record())
    documented = read_ready_record(str(doc))  # the parser LocalCluster uses
    logs = tmp_path / "logs"
    with fanout.LocalCluster(cora2, log_dir=str(logs)) as lc:
        written = read_ready_record(str(logs / "server-p0.ready"))
        assert "%s:%d" % (written["host"], written["rpc_port"]) == lc.addresses[0]
    assert set(documented) == set(written), (sorted(documented), sorted(written))
    for k, v in documented.items():
        assert type(v) is type(written[k]), k
    # Every key has its row in the table under the example.
    with open(os.path.join(ROOT, "docs", "DEPLOY.md")) as f:
        table = f.read().split("<!-- ready-record-example -->", 1)[1]
    for k in written:
        assert "`%s`" % k in table, k
    # The server's --help points at the same description.
    helptext = subprocess.run([_bin(fanout, "fanout-server"), "--help"], capture_output=True, text=True).stdout
    assert "The ready record" in helptext and "rpc_port" in helptext


def test_versions_agree_on_every_surface(local, fanout, tmp_path):
    v = fanout.__version__
    assert re.match(r"^\d+\.\d+\.\d+(\+g[0-9a-f]{7,}(\.dirty)?)?$", v), v
    for name in ("fanout-server", "fanout-ctl", "fanout-partition"):
        out = subprocess.run([_bin(fanout, name), "--version"], capture_output=True, text=True, timeout=30)
        assert out.returncode == 0 and out.stdout.split() == [name, v], (name, out.stdout, out.stderr)
    admin = local.admin_addresses[0]
    with urllib.request.urlopen("http://%s/stats" % admin, timeout=10) as r:
        stats = json.load(r)
    assert stats["version"]["version"] == v
    assert v.startswith(stats["version"]["release"])
    with urllib.request.urlopen("http://%s/metrics" % admin, timeout=10) as r:
        metrics = r.read().decode()
    assert 'fanout_build_info{version="%s",' % v in metrics
    out = subprocess.run([_bin(fanout, "fanout-ctl"), "info", local.addresses[0]], capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 0 and ("server version %s\n" % v) in out.stdout, out.stdout
    logs = tmp_path / "logs"
    with fanout.LocalCluster(local.dataset_dir, log_dir=str(logs)):
        from fanout.local_cluster import read_ready_record
        assert read_ready_record(str(logs / "server-p1.ready"))["version"] == v


def test_an_import_without_torch_says_what_it_needs(tmp_path, fanout):
    # A fresh venv without the system's site packages: no torch there.
    venv = tmp_path / "venv"
    made = subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip("cannot make a venv here: %s" % made.stderr.strip())
    # The package alone on the path (where it is installed, torch may sit beside it: a venv's site-packages).
    alone = tmp_path / "pkg"
    shutil.copytree(os.path.dirname(fanout.__file__), alone / "fanout")
    env = dict(os.environ, PYTHONPATH=str(alone))
    out = subprocess.run([str(venv / "bin" / "python"), "-c", "import fanout"], capture_output=True, text=True,
                         env=env, timeout=60)
    assert out.returncode != 0
    err = out.stderr
    assert "fanout needs PyTorch (any version from 1.13" in err, err
    assert "pip install torch" in err, err


def test_ogb_names_the_missing_file_and_the_folder(tmp_path, fanout):
    folder = tmp_path / "ogbn-tiny"
    (folder / "raw").mkdir(parents=True)
    (folder / "raw" / "num-node-list.csv").write_text("3\n")
    with pytest.raises(fanout.InvalidArgument) as e:
        fanout.partition(str(folder), tmp_path / "out", format="ogb", parts=1, method="random")
    msg = str(e.value)
    assert "raw/edge.csv" in msg and str(folder) in msg, msg
    (folder / "raw" / "num-node-list.csv").unlink()
    with pytest.raises(fanout.InvalidArgument, match="raw/num-node-list.csv"):
        fanout.partition(str(folder), tmp_path / "out", format="ogb", parts=1, method="random")
    helptext = subprocess.run([_bin(fanout, "fanout-partition"), "--help"], capture_output=True, text=True).stdout
    for f in ("raw/num-node-list.csv", "raw/edge.csv", "raw/node-feat.csv", "raw/node-label.csv"):
        assert f in helptext, f
