"""GraphSAGE (mean aggregation, in plain torch) on a Fanout cluster.

The same model and recipe as the C++ example (client/examples/graphsage.cc):
two SAGEConv layers (PyG's: lin_l(mean of neighbors) + lin_r(self)), hidden
64, dropout 0.5, Adam lr 0.01 with weight decay 5e-4, fanouts [10, 10],
batch 64, row-normalized features; evaluation samples all neighbors.

  python3 examples/python/train_graphsage.py --dataset /tmp/cora2      # starts a LocalCluster
  python3 examples/python/train_graphsage.py --cluster cluster.json     # servers already running
  # DDP (gloo), 2 ranks; torchrun sets the same variables where it works (Debian's
  # torch 1.13 torchrun fails on Python 3.11 with "'NoneType' object has no attribute 'get'"):
  for r in 0 1; do RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 \
    python3 examples/python/train_graphsage.py --cluster cluster.json & done; wait

Needs the fanout package on the path: PYTHONPATH=build/python (after ./run build).
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

import fanout


class SAGEConv(torch.nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.lin_l = torch.nn.Linear(d_in, d_out)
        self.lin_r = torch.nn.Linear(d_in, d_out, bias=False)

    def forward(self, x, edge_index):
        src, dst = edge_index[0], edge_index[1]
        agg = torch.zeros_like(x).index_add_(0, dst, x.index_select(0, src))
        deg = torch.zeros(x.size(0), dtype=x.dtype).index_add_(0, dst, torch.ones(dst.size(0), dtype=x.dtype))
        return self.lin_l(agg / deg.clamp_min(1).unsqueeze(1)) + self.lin_r(x)


class GraphSage(torch.nn.Module):
    def __init__(self, d_in, hidden, classes, dropout):
        super().__init__()
        self.conv1 = SAGEConv(d_in, hidden)
        self.conv2 = SAGEConv(hidden, classes)
        self.p = dropout

    def forward(self, x, edge_index):
        x = F.relu(self.conv1(x, edge_index))
        x = F.dropout(x, self.p, self.training)
        return F.log_softmax(self.conv2(x, edge_index), dim=1)


def prepare(batch):
    return batch.x / batch.x.sum(1, keepdim=True).clamp_min(1)


@torch.no_grad()
def accuracy(model, cluster, split, fanouts, num_workers):
    loader = fanout.NodeLoader(cluster, split, num_neighbors=[-1] * len(fanouts), batch_size=1024, shuffle=False,
                               num_workers=num_workers, rank=0, world_size=1, edge_ids=False)
    model.eval()
    correct = total = 0
    for b in loader:
        out = model(prepare(b), b.edge_index)[:b.batch_size]
        y = b.y[:b.batch_size]
        known = y >= 0
        correct += int((out.argmax(1) == y).logical_and(known).sum())
        total += int(known.sum())
    return correct / total if total else float("nan")


def train(cluster, *, epochs=30, seed=0, hidden=64, lr=0.01, weight_decay=5e-4, dropout=0.5, fanouts=(10, 10),
          batch_size=64, num_workers=2, on_epoch=None, rank=None, world_size=None):
    """Trains and returns {"losses": [...], "test_acc": ..., "val_acc": ...}."""
    torch.manual_seed(seed)
    model = GraphSage(cluster.feature_dim, hidden, cluster.num_classes, dropout)
    ddp = torch.distributed.is_available() and torch.distributed.is_initialized()
    net = torch.nn.parallel.DistributedDataParallel(model) if ddp else model
    opt = torch.optim.Adam(net.parameters(), lr=lr, weight_decay=weight_decay)
    loader = fanout.NodeLoader(cluster, "train", num_neighbors=list(fanouts), batch_size=batch_size, seed=seed,
                               num_workers=num_workers, edge_ids=False, rank=rank, world_size=world_size)
    losses = []
    for epoch in range(1, epochs + 1):
        t0 = time.monotonic()
        net.train()
        for b in loader:
            opt.zero_grad()
            out = net(prepare(b), b.edge_index)[:b.batch_size]
            loss = F.nll_loss(out, b.y[:b.batch_size])
            loss.backward()
            opt.step()
            losses.append(float(loss))
        if on_epoch:
            on_epoch(epoch, losses, time.monotonic() - t0)
    return {"losses": losses, "val_acc": accuracy(model, cluster, "val", fanouts, num_workers),
            "test_acc": accuracy(model, cluster, "test", fanouts, num_workers),
            "rank": loader.rank, "world_size": loader.world_size,
            "epoch_seeds": [loader.epoch_seeds(e).tolist() for e in range(epochs)]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--dataset", help="a fanout dataset folder: serve it with a LocalCluster for this run")
    src.add_argument("--cluster", help="a cluster file naming running servers")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0], help="train once per seed; report the mean")
    ap.add_argument("--data-plane", default="auto", choices=["auto", "ucx", "tcp"])
    ap.add_argument("--call-timeout-ms", type=int, default=30000, help="a request's deadline (default 30000)")
    ap.add_argument("--health-check-ms", type=int, default=1000,
                    help="replica health-check interval; requests on a replica found down move at once "
                         "(default 1000, 0 = off)")
    ap.add_argument("--json", help="write the results (losses, accuracies) to this file")
    a = ap.parse_args()
    if a.epochs < 1:
        ap.error("--epochs must be >= 1")

    ddp = "WORLD_SIZE" in os.environ and int(os.environ["WORLD_SIZE"]) > 1
    if ddp:
        torch.distributed.init_process_group("gloo")
    lc = fanout.LocalCluster(a.dataset, data_plane=a.data_plane).start() if a.dataset else None
    try:
        timeouts = dict(call_timeout_ms=a.call_timeout_ms, health_check_ms=a.health_check_ms)
        cluster = (lc.cluster(**timeouts) if lc else
                   fanout.Cluster.from_file(a.cluster, data_plane=a.data_plane, **timeouts))
        rank = torch.distributed.get_rank() if ddp else 0
        results = []
        for s in a.seeds:
            def report(epoch, losses, secs):
                if rank == 0 and (epoch % 10 == 0 or epoch == a.epochs):
                    print("seed %d epoch %3d loss %.4f (%.2f s)" % (s, epoch, losses[-1], secs), flush=True)
            r = train(cluster, epochs=a.epochs, seed=s, on_epoch=report)
            results.append(r)
            if rank == 0:
                print("seed %d: val %.3f test %.3f" % (s, r["val_acc"], r["test_acc"]), flush=True)
        mean = sum(r["test_acc"] for r in results) / len(results)
        if rank == 0:
            print("mean test accuracy over %d seed(s): %.3f" % (len(results), mean))
        if a.json:
            path = "%s.rank%d" % (a.json, rank) if ddp else a.json
            with open(path, "w") as f:
                json.dump({"seeds": a.seeds, "results": results, "mean_test_acc": mean, "rank": rank}, f)
    finally:
        if lc:
            lc.stop()
        if ddp:
            torch.distributed.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
