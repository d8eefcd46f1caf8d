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


def run_ranks(argv_of_rank, timeout=300, world=2):
    """Runs one process per rank (argv_of_rank(rank)) with torchrun's environment for gloo on loopback;
    fails naming the hang if any rank does not finish in time, or with its log if one exits non-zero."""
    port = str(free_port())
    procs = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=port, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen(argv_of_rank(rank), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True))
    logs = []
    for p in procs:
        try:
            logs.append(p.communicate(timeout=timeout)[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise AssertionError("a DDP rank did not finish in %d s (hung at an all-reduce?)" % timeout)
    for p, log in zip(procs, logs):
        assert p.returncode == 0, log[-3000:]


def cluster_file(local, tmp_path):
    spec = tmp_path / "cluster.json"
    spec.write_text(json.dumps({"partitions": [{"partition": i, "replicas": [a]}
                                               for i, a in enumerate(local.addresses)]}))
    return spec


def run_ddp(spec, out, epochs=2):
    run_ranks(lambda rank: [sys.executable, EXAMPLE, "--cluster", str(spec), "--epochs", str(epochs), "--json",
                            str(out)])
    return [json.load(open("%s.rank%d" % (out, r)))["results"][0] for r in range(2)]


def test_two_ranks_shard_every_epoch_and_repeat_exactly(local, cluster, tmp_path):
    spec = cluster_file(local, tmp_path)
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


UNEVEN = r'''
import datetime, json, sys, torch, fanout
torch.distributed.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
cluster = fanout.Cluster.from_file(sys.argv[1], data_plane="tcp")
drop_last = sys.argv[3] == "1"
# 129 seeds over 2 ranks, batches of 64: dealt round-robin without padding, rank 0 would
# get 65 seeds (2 batches) and rank 1 64 (1 batch), and rank 0 would wait at its second
# all-reduce for ever.
loader = fanout.NodeLoader(cluster, torch.arange(129), num_neighbors=[3, 2], batch_size=64, num_workers=1,
                           seed=5, drop_last=drop_last)
torch.manual_seed(0)
net = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(cluster.feature_dim, cluster.num_classes))
opt = torch.optim.SGD(net.parameters(), lr=0.1)
counts, seeds = [], []
for epoch in range(3):
    n = 0
    for b in loader:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(b.x[:b.batch_size]), b.y[:b.batch_size])
        loss.backward()  # an all-reduce across the two ranks
        opt.step()
        n += 1
    counts.append(n)
    seeds.append(loader.epoch_seeds(epoch).tolist())
json.dump({"len": len(loader), "counts": counts, "seeds": seeds}, open(sys.argv[2], "w"))
'''


def test_ddp_with_an_uneven_seed_count_finishes_every_epoch(local, tmp_path):
    """Three epochs of DDP over 129 seeds on 2 ranks: every rank yields the same
    number of batches (padding repeats the epoch's first seed; drop_last cuts to
    64 a rank), so no rank waits at an all-reduce the other never makes."""
    spec = cluster_file(local, tmp_path)
    script = tmp_path / "uneven.py"
    script.write_text(UNEVEN)
    for drop_last in (False, True):
        run_ranks(lambda rank: [sys.executable, str(script), str(spec), str(tmp_path / ("r%d.json" % rank)),
                                "1" if drop_last else "0"], timeout=240)
        r = [json.load(open(tmp_path / ("r%d.json" % rank))) for rank in range(2)]
        want = 1 if drop_last else 2
        for x in r:
            assert x["len"] == want and x["counts"] == [want] * 3, (drop_last, x["len"], x["counts"])
        for e in range(3):
            a, b = r[0]["seeds"][e], r[1]["seeds"][e]
            assert len(a) == len(b) == (64 if drop_last else 65)
            if drop_last:
                assert not set(a) & set(b) and len(set(a) | set(b)) == 128
            else:
                assert set(a) | set(b) == set(range(129))  # one seed twice: the padding
