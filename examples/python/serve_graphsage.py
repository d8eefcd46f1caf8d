"""Online node classification beside training, on the same servers.

Trains a GraphSAGE (examples/python/train_graphsage.py's model), then answers
queries with it: each query is 1 to --max-seeds random test nodes, their
2-hop [10, 10] subgraph and features fetched with Cluster.sample_subgraph
(one round trip per hop, a deadline), and one forward pass. Queries arrive at
a fixed rate (--qps, open loop: a late query does not delay the clock, and
its latency counts from when it was due). It serves alone first, then while
a second training job (train_graphsage.py in its own process) runs against
the same servers, and prints the latency percentiles of both.

With --dataset it starts the servers itself (a LocalCluster) with a tenants
file: the queries are tenant `serving` (class online, served first), the
training job tenant `training` (class batch); see docs/TENANTS.md. With
--cluster the servers are yours: --token-file / --train-token-file name the
tokens of your tenants.

  python3 examples/python/serve_graphsage.py --dataset /tmp/cora2
  python3 examples/python/serve_graphsage.py --dataset /tmp/cora2 --qps 200 --seconds 20 --json serve.json

Needs the fanout package on the path: PYTHONPATH=build/python (after ./run build).
"""
import argparse
import json
import os
import random
import secrets
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

import fanout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_graphsage import GraphSage, prepare  # noqa: E402 (the example beside this one)


def percentiles(ms):
    if not ms:
        return {}
    s = sorted(ms)
    pick = lambda q: s[min(len(s) - 1, int(q * len(s)))]  # noqa: E731
    return {"queries": len(s), "p50_ms": pick(0.5), "p90_ms": pick(0.9), "p99_ms": pick(0.99), "max_ms": s[-1]}


def train_model(cluster, epochs, seed=0):
    torch.manual_seed(seed)
    model = GraphSage(cluster.feature_dim, 64, cluster.num_classes, 0.5)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    loader = fanout.NodeLoader(cluster, "train", num_neighbors=[10, 10], batch_size=64, seed=seed, edge_ids=False)
    for _ in range(epochs):
        model.train()
        for b in loader:
            opt.zero_grad()
            F.nll_loss(model(prepare(b), b.edge_index)[:b.batch_size], b.y[:b.batch_size]).backward()
            opt.step()
    return model.eval()


@torch.no_grad()
def serve(cluster, model, nodes, labels, *, seconds, qps, max_seeds, deadline_ms, seed):
    """Answers queries at `qps` for `seconds`: latencies (ms), answers checked against the labels."""
    rng = random.Random(seed)
    lat, missed, correct, answered = [], 0, 0, 0
    start = time.monotonic()
    due = start
    i = 0
    while due < start + seconds:
        now = time.monotonic()
        if now < due:
            time.sleep(due - now)
        idx = [rng.randrange(len(nodes)) for _ in range(rng.randint(1, max_seeds))]
        seeds = nodes[idx]
        try:
            b = cluster.sample_subgraph(seeds, [10, 10], seed=i, deadline_ms=deadline_ms, pyg=False)
            pred = model(prepare(b), b.edge_index)[:b.batch_size].argmax(1)
            lat.append((time.monotonic() - due) * 1e3)
            correct += int((pred == labels[idx]).sum())
            answered += len(idx)
        except fanout.DeadlineExceeded:
            missed += 1
        i += 1
        due = start + i / qps
    out = percentiles(lat)
    out.update(deadline_missed=missed, accuracy=correct / answered if answered else float("nan"),
               qps=qps, seconds=seconds)
    return out


def tenants_table(admin, token):
    """The tenants of a server's /stats (its admin credential: --admin-token-file)."""
    return fanout.stats(admin, token=token)["tenants"]["tenants"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--dataset", help="a fanout dataset folder: serve it with a LocalCluster (and tenants) here")
    src.add_argument("--cluster", help="a cluster file naming running servers")
    ap.add_argument("--token-file", help="with --cluster: the serving tenant's token file")
    ap.add_argument("--train-token-file", help="with --cluster: the training job's token file")
    ap.add_argument("--epochs", type=int, default=10, help="training epochs of the served model (default 10)")
    ap.add_argument("--seconds", type=float, default=10.0, help="serving time per phase (default 10)")
    ap.add_argument("--qps", type=float, default=50.0, help="queries per second (default 50)")
    ap.add_argument("--max-seeds", type=int, default=16, help="nodes per query: 1 to this (default 16)")
    ap.add_argument("--deadline-ms", type=int, default=200, help="each query's deadline (default 200)")
    ap.add_argument("--train-nice", type=int, default=10,
                    help="the training job's nice value (default 10; 0 = as this process)")
    ap.add_argument("--json", help="write the results here")
    a = ap.parse_args()
    if a.epochs < 1 or a.seconds <= 0 or a.qps <= 0 or not 1 <= a.max_seeds <= 4096 or a.deadline_ms < 1:
        ap.error("--epochs, --seconds, --qps and --deadline-ms must be positive, --max-seeds in [1, 4096]")

    torch.set_num_threads(1)  # one query at a time: no intra-op threads to oversubscribe the cores
    work = tempfile.mkdtemp(prefix="fanout-serve-")
    lc = trainer = None
    try:
        if a.dataset:
            serving_token, training_token = secrets.token_hex(16), secrets.token_hex(16)
            tenants = os.path.join(work, "tenants.conf")
            with open(tenants, "w") as f:
                f.write("tenant serving token=%s class=online weight=1 local=yes\n" % serving_token)
                f.write("tenant training token=%s class=batch weight=1 local=yes\n" % training_token)
            admin_token = secrets.token_hex(16)
            admin_file = os.path.join(work, "admin.token")
            with open(admin_file, "w") as f:
                f.write(admin_token + "\n")
            lc = fanout.LocalCluster(a.dataset, server_args=["--tenants", tenants,
                                                             "--admin-token-file", admin_file]).start()
            partitions = [{"partition": p, "replicas": [addr]} for p, addr in enumerate(lc.addresses)]
        else:
            with open(a.cluster) as f:
                partitions = json.load(f)["partitions"]
            read = lambda path: open(path).readline().strip() if path else None  # noqa: E731
            serving_token, training_token = read(a.token_file), read(a.train_token_file)
        # The training job's cluster file (its token in a file beside it).
        train_file = os.path.join(work, "training.json")
        spec = {"partitions": partitions}
        if training_token:
            with open(os.path.join(work, "training.token"), "w") as f:
                f.write(training_token + "\n")
            spec["auth_token_file"] = "training.token"
        with open(train_file, "w") as f:
            json.dump(spec, f)

        addresses = [p["replicas"][0] for p in partitions]
        cluster = fanout.Cluster(addresses, auth_token=serving_token, call_timeout_ms=max(a.deadline_ms, 1000))
        trainer_cluster = fanout.Cluster.from_file(train_file)
        print("training the served model: %d epoch(s)" % a.epochs, flush=True)
        model = train_model(trainer_cluster, a.epochs)
        nodes = cluster.split_nodes("test")
        labels = cluster.labels(nodes)
        opts = dict(seconds=a.seconds, qps=a.qps, max_seeds=a.max_seeds, deadline_ms=a.deadline_ms)
        serve(cluster, model, nodes, labels, seconds=min(1.0, a.seconds), qps=a.qps, max_seeds=a.max_seeds,
              deadline_ms=a.deadline_ms, seed=99)  # warm: connections, workers
        alone = serve(cluster, model, nodes, labels, seed=1, **opts)
        print("alone:          p50 %.2f ms  p99 %.2f ms  max %.2f ms  (%d queries, %d over the deadline), "
              "accuracy %.3f" % (alone["p50_ms"], alone["p99_ms"], alone["max_ms"], alone["queries"],
                                 alone["deadline_missed"], alone["accuracy"]), flush=True)

        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "train_graphsage.py")
        # A batch job at a batch job's CPU priority: on a host that also answers queries, the
        # servers put the queries first (tenant class online); the kernel does so only if told.
        trainer = subprocess.Popen([sys.executable, script, "--cluster", train_file, "--epochs", "100000"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                   preexec_fn=lambda: os.nice(a.train_nice))
        time.sleep(2.0)  # its loader running
        if trainer.poll() is not None:
            raise RuntimeError("the training job exited: " + trainer.stderr.read()[-2000:])
        beside = serve(cluster, model, nodes, labels, seed=2, **opts)
        print("beside training: p50 %.2f ms  p99 %.2f ms  max %.2f ms  (%d queries, %d over the deadline), "
              "accuracy %.3f" % (beside["p50_ms"], beside["p99_ms"], beside["max_ms"], beside["queries"],
                                 beside["deadline_missed"], beside["accuracy"]), flush=True)
        print("p99 beside training / alone: %.2fx" % (beside["p99_ms"] / alone["p99_ms"]))
        result = {"alone": alone, "beside_training": beside}
        if lc:
            for t in tenants_table(lc.admin_addresses[0], admin_token):
                if t["requests"] or t["local"]["requests"]:
                    print("  partition 0, tenant %-9s %-6s requests %7d  local %7d  queue wait p99 %.2f ms"
                          % (t["tenant"], t["class"], t["requests"], t["local"]["requests"],
                             t["queue_wait_p99_s"] * 1e3))
            result["tenants"] = tenants_table(lc.admin_addresses[0], admin_token)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(result, f, indent=1)
    finally:
        if trainer is not None and trainer.poll() is None:
            trainer.terminate()
            try:
                trainer.wait(timeout=10)
            except subprocess.TimeoutExpired:
                trainer.kill()
        if lc:
            lc.stop()
        for name in ("tenants.conf", "training.json", "training.token", "admin.token"):
            try:
                os.unlink(os.path.join(work, name))
            except FileNotFoundError:
                pass
        os.rmdir(work)


if __name__ == "__main__":
    sys.exit(main())
