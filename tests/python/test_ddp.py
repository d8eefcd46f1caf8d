"""Two training processes with torch.distributed (gloo) and DDP through the
servers: RANK/WORLD_SIZE shard each epoch (disjoint, covering it), and two
runs give the same loss trace."""
import json
import os
import socket
import subprocess
import sys

from conftest import ROOT

EXAMPLE = os.path.join(ROOT, "examples", "python", "train_graphsage.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ddp(spec, out, epochs=2):
    port = str(free_port())
    procs = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=port, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, EXAMPLE, "--cluster", str(spec), "--epochs", str(epochs),
                                       "--json", str(out)], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    logs = []
    for p in procs:
        try:
            logs.append(p.communicate(timeout=300)[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise
    for p, log in zip(procs, logs):
        assert p.returncode == 0, log[-3000:]
    return [json.load(open("%s.rank%d" % (out, r)))["results"][0] for r in range(2)]


def test_two_ranks_shard_every_epoch_and_repeat_exactly(local, cluster, tmp_path):
    spec = tmp_path / "cluster.json"
    spec.write_text(json.dumps({"partitions": [{"partition": i, "replicas": [a]}
                                               for i, a in enumerate(local.addresses)]}))
    first = run_ddp(spec, tmp_path / "a.json")
    second = run_ddp(spec, tmp_path / "b.json")
    train = sorted(cluster.split_nodes("train").tolist())
    for e in range(2):
        r0, r1 = first[0]["epoch_seeds"][e], first[1]["epoch_seeds"][e]
        assert not set(r0) & set(r1)  # disjoint
        assert sorted(r0 + r1) == train  # and covering the epoch
    assert [r["rank"] for r in first] == [0, 1] and all(r["world_size"] == 2 for r in first)
    for a, b in zip(first, second):
        assert a["losses"] == b["losses"] and len(a["losses"]) > 0
