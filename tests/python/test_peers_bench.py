"""The pieces of `./run bench peers` that run without the peers' venvs: Fanout's worker on a graph whose batches
have a known size, its refusal of files that are not what it reads, the bench's R-MAT draw, and PyG's worker where
the PyG venv has torch-sparse (the bench itself installs GBs and stays out of CI)."""
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.environ.get("FANOUT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("FANOUT_BIN_DIR", os.path.join(ROOT, "build", "bin"))
WORKER = os.path.join(BIN, "fanout-bench-peers-worker")


def load_bench():
    spec = importlib.util.spec_from_file_location("peers_bench", os.path.join(ROOT, "bench", "peers_bench.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture()
def ring(tmp_path):
    """40 nodes, row v holding v+1 .. v+5 (mod 40): every node has 5 distinct in-neighbors."""
    n, d = 40, 5
    indptr = np.arange(0, n * d + 1, d, dtype=np.int64)
    indices = np.array([(v + k) % n for v in range(n) for k in range(1, d + 1)], dtype=np.int64)
    np.save(tmp_path / "indptr.npy", indptr)
    np.save(tmp_path / "indices.npy", indices)
    np.save(tmp_path / "order.npy", np.arange(0, n, 4, dtype=np.int64))  # 10 seeds, 4 apart
    return tmp_path


def run_worker(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


@pytest.mark.parametrize("bits", ["0", "32", "64"])
def test_fanout_worker_samples_the_fanout_of_each_seed(ring, bits):
    # Seeds 4 apart with fanout 2 and one hop: 2 edges per seed, 4 seeds per batch -> 8 edges per batch.
    code, out, err = run_worker([WORKER, "--graph", str(ring), "--order", str(ring / "order.npy"), "--seconds", "0.2",
                                 "--batch", "4", "--fanouts", "2", "--warmup", "1", "--index-bits", bits])
    assert code == 0, err
    res = json.loads(out.strip().splitlines()[-1])
    assert res["system"] == "fanout" and res["batches"] > 0
    assert res["edges"] == 8 * res["batches"]
    assert res["wall_s"] > 0 and res["cpu_s"] >= 0
    assert res["index_bits"] == (32 if bits == "0" else int(bits))
    # Two hops of [5, 5] take every neighbor: the seeds' 5 each, then 5 for each new node.
    code, out, err = run_worker([WORKER, "--graph", str(ring), "--order", str(ring / "order.npy"), "--seconds", "0.2",
                                 "--batch", "1", "--fanouts", "5,5"])
    assert code == 0, err
    res = json.loads(out.strip().splitlines()[-1])
    assert res["edges"] == 30 * res["batches"]  # 5 + 5 * 5


@pytest.mark.parametrize("bad, what", [
    (np.full(200, 40, dtype=np.int64), "entry 0 is not a node"),
    (np.zeros(10, dtype=np.float64), "not int64"),
    (np.zeros((3, 3), dtype=np.int64), "not a one-dimensional array"),
    (None, "not a .npy file"),
    ("short", "shorter than its shape says"),
])
def test_fanout_worker_refuses_what_it_cannot_read(ring, bad, what):
    target = ring / "indices.npy"
    if bad is None:
        target.write_bytes(b"hello, not numpy at all")
    elif isinstance(bad, str):
        data = target.read_bytes()
        target.write_bytes(data[:-16])
    else:
        np.save(target, bad)
    code, _, err = run_worker([WORKER, "--graph", str(ring), "--order", str(ring / "order.npy"), "--seconds", "0.1"])
    assert code == 1
    assert "indices.npy" in err and what in err


def test_fanout_worker_refuses_a_seed_that_is_not_a_node(ring):
    np.save(ring / "order.npy", np.array([1, 2, 40], dtype=np.int64))
    code, _, err = run_worker([WORKER, "--graph", str(ring), "--order", str(ring / "order.npy"), "--seconds", "0.1"])
    assert code == 1 and "seed 40 is not a node" in err


def test_rmat_draw_is_seeded_and_in_range():
    bench = load_bench()
    s1, d1 = bench.rmat_edges(10, 16, seed=3, chunk=4096)
    s2, d2 = bench.rmat_edges(10, 16, seed=3, chunk=4096)
    assert s1.shape == (16 << 10,) and np.array_equal(s1, s2) and np.array_equal(d1, d2)
    assert s1.min() >= 0 and s1.max() < 1024 and d1.min() >= 0 and d1.max() < 1024
    # R-MAT's skew: node 0 (every bit in quadrant a) is the largest source by far.
    counts = np.bincount(s1, minlength=1024)
    assert counts.argmax() == 0 and counts[0] > 20 * counts.mean()


def test_graph_rows_hold_in_neighbors(tmp_path):
    bench = load_bench()
    folder, meta = bench.ensure_graph(str(tmp_path), 10, seed=5)
    indptr = np.load(os.path.join(folder, "indptr.npy"))
    indices = np.load(os.path.join(folder, "indices.npy"))
    src, dst = bench.rmat_edges(10, 16, seed=5)
    assert meta["edges"] == src.shape[0] == indices.shape[0]
    for v in (0, 1, 7, 1023):
        assert sorted(indices[indptr[v]:indptr[v + 1]].tolist()) == sorted(src[dst == v].tolist())
    train = np.load(os.path.join(folder, "train.npy"))
    assert train.shape[0] == 102 and len(set(train.tolist())) == 102


def test_pyg_worker_where_torch_sparse_is_there(ring):
    pytest.importorskip("torch_geometric")
    pytest.importorskip("torch_sparse", reason="torch-sparse is not built in this venv (./run builds it)")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "peers_worker.py"), "--system", "pyg", "--graph",
                        str(ring), "--order", str(ring / "order.npy"), "--seconds", "0.2", "--batch", "4",
                        "--fanouts", "2"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert res["system"] == "pyg" and res["edges"] == 8 * res["batches"]
