"""fanout-spark-task, the Spark job's native steps, against forged input: its edge stream and node files are read as a
peer's bytes (a junk header, a block that claims too much, a cut stream, edges outside the partition or out of
range, an edge stored twice, a node file of another width): each is a clean error naming what is wrong, never a
crash, and the partition is not published. Needs no Spark."""
import json
import os
import subprocess

import numpy as np
import pytest

import fanout


def task(*args, stdin=None):
    return subprocess.run([fanout.find_binary("fanout-spark-task")] + [str(a) for a in args], input=stdin,
                          capture_output=True, timeout=120)


@pytest.fixture
def part(tmp_path):
    """A staging folder and meta for 4 nodes, 3 edges, 1 partition of 2-feature rows, and its node file."""
    out = tmp_path / "out"
    begun = json.loads(task("begin", "--output", out, "--owner-pid", os.getpid()).stdout)
    plan = {"name": "t", "source_path": "x", "num_nodes": 4, "num_edges": 3, "num_parts": 1, "offsets": [0, 4],
            "feature_dim": 2, "feature_dtype": "float32", "num_classes": 0, "has_labels": False, "has_split": False,
            "has_names": False, "direction": "in", "chunk_nodes": 2, "method": "hash", "options": {},
            "dataset_id": begun["dataset_id"], "stats": {"nodes": [4], "edges": [0], "cut_edges": 0}}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    r = task("meta", "--plan", tmp_path / "plan.json", "--out", tmp_path / "meta.json")
    assert r.returncode == 0, r.stderr
    nodes = tmp_path / "nodes"
    nodes.mkdir()
    m = 4
    block = (np.array([m, 2, 0], "<i8").tobytes() + np.full(m, -1, "<i8").tobytes() + np.zeros(m, np.uint8).tobytes()
             + np.arange(m, dtype="<i8").tobytes() + np.ones(m * 2, "<f4").tobytes())
    (nodes / "u0-p0.bin").write_bytes(b"FNSP0001" + block + np.zeros(3, "<i8").tobytes())
    (tmp_path / "spill").mkdir()
    return tmp_path, begun["staging"]


def write(tmp_path, staging, data):
    return task("write", "--meta", tmp_path / "meta.json", "--staging", staging, "--part", 0, "--nodes-dir",
                tmp_path / "nodes", "--units", 1, "--spill-dir", tmp_path / "spill", stdin=data)


def edges(rows, eids, nbrs):
    n = len(rows)
    return (np.array([n], "<i8").tobytes() + np.array(rows, "<i8").tobytes() + np.array(eids, "<i8").tobytes()
            + np.array(nbrs, "<i8").tobytes())


END = np.zeros(1, "<i8").tobytes()


def test_a_good_stream_writes_the_partition(part):
    tmp_path, staging = part
    r = write(tmp_path, staging, b"FNSW0003" + edges([3, 0, 3], [2, 0, 1], [1, 2, 0]) + END)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["edges"] == 3 and rep["cut_edges"] == 0
    assert not os.listdir(tmp_path / "spill")  # the spill file is gone


@pytest.mark.parametrize("data,message", [
    (b"GARBAGE!" + END, "does not start with FNSW0003"),
    (b"FNSW0003" + np.array([1 << 40], "<i8").tobytes(), "claims 1099511627776 edges"),
    (b"FNSW0003" + np.array([-3], "<i8").tobytes(), "claims -3 edges"),
    (b"FNSW0003" + edges([0], [0], [1])[:20], "ends inside"),
    (b"FNSW0003" + edges([0], [0], [1]), "ends inside a block header"),
    (b"FNSW0003" + edges([9], [0], [1]) + END, "outside its rows [0, 4)"),
    (b"FNSW0003" + edges([0], [7], [1]) + END, "the edge ids [0, 3)"),
    (b"FNSW0003" + edges([0], [0], [-1]) + END, "or the nodes"),
    (b"FNSW0003" + edges([0, 0], [1, 1], [1, 2]) + END, "edge id 1 is stored twice"),
    (b"FNSW0003" + edges([0, 1], [0, 1], [1, 2]) + END, "the edge ids"),  # 2 of 3: the meta's count is checked below
])
def test_forged_edge_streams_are_refused_by_name(part, data, message):
    tmp_path, staging = part
    r = write(tmp_path, staging, data)
    if message == "the edge ids":  # a short stream writes a partition of 2 edges: the driver's check refuses it
        assert r.returncode == 0 and json.loads(r.stdout)["edges"] == 2
        return
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert message in r.stderr.decode(), r.stderr
    assert b"Segmentation" not in r.stderr and b"terminate" not in r.stderr
    assert not os.listdir(staging), os.listdir(staging)  # no partial store left for a retry to trip on


def test_forged_node_files_are_refused_by_name(part):
    tmp_path, staging = part
    good = (tmp_path / "nodes" / "u0-p0.bin").read_bytes()
    for data, message in [(b"JUNKJUNK" + good[8:], "not a node file"),
                          (good[:8] + np.array([4, 7, 0], "<i8").tobytes() + good[32:], "7 features"),
                          (good[:8] + np.array([1 << 40, 2, 0], "<i8").tobytes(), "1099511627776 nodes"),
                          (good[:60], "ends inside"),
                          (good[:8] + np.zeros(3, "<i8").tobytes(), "the node files end at row 0")]:
        (tmp_path / "nodes" / "u0-p0.bin").write_bytes(data)
        r = write(tmp_path, staging, b"FNSW0003" + edges([0], [0], [1]) + END)
        assert r.returncode == 1, (data[:40], r.stdout)
        assert message in r.stderr.decode(), r.stderr
        assert not os.listdir(staging), os.listdir(staging)


def test_commit_refuses_a_staging_folder_without_every_partition(part):
    tmp_path, staging = part
    r = task("commit", "--meta", tmp_path / "meta.json", "--staging", staging, "--output", tmp_path / "out")
    assert r.returncode == 1 and b"partition 0 was not written" in r.stderr
    assert not (tmp_path / "out").exists()
