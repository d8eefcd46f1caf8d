"""Temporal link prediction on CollegeMsg with a chronological split.

CollegeMsg (SNAP; datasets/data/snap-temporal) holds 59,835 timestamped
messages among 1,899 users. The messages are split by time: the first 70 %
train, the next 15 % validation, the last 15 % test. The whole graph is
partitioned with its timestamps (fanout-partition --edge-times) and served;
every batch samples temporally (fanout.LinkLoader with edge_label_time): a
message at time t is predicted from the messages strictly before t (seed time
t - 1), so no batch ever sees the edge it is asked about, or any later one.

Model: a learnable embedding per user, two SAGE layers over the temporal
neighborhoods (the most recent neighbors: temporal_strategy="last"), and a
dot-product score; binary strict negatives in training. Evaluation: each
test message beside a message from the same sender to a random user who
never received one from them, at the same time; prints

    test_auc=0.912 degree_product_auc=0.801

the second figure being a trivial baseline computed in the same run: the
product of the two users' degrees in the training period.

  PYTHONPATH=build/python python3 examples/python/temporal_link_prediction.py [--epochs 5] [--seed 0]
"""
import argparse
import gzip
import json
import os
import random
import sys
import tempfile

import torch
import torch.nn.functional as F

import fanout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from link_prediction import auc  # noqa: E402
from train_graphsage import SAGEConv  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
COLLEGE_MSG = os.path.join(ROOT, "datasets", "data", "snap-temporal", "CollegeMsg.txt.gz")


def read_messages(path):
    """(src, dst, time) per line, SNAP ids, in file (time) order."""
    out = []
    with gzip.open(path, "rt") as f:
        for line_no, line in enumerate(f, 1):
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            if len(parts) != 3:
                raise ValueError("%s:%d: expected 'SRC DST TIME', got %r" % (path, line_no, line.strip()))
            out.append((int(parts[0]), int(parts[1]), int(parts[2])))
    return out


def chronological_split(messages, train=0.70, val=0.15):
    ordered = sorted(messages, key=lambda m: m[2])
    a, b = int(len(ordered) * train), int(len(ordered) * (train + val))
    return ordered[:a], ordered[a:b], ordered[b:]


class Model(torch.nn.Module):
    def __init__(self, num_nodes, dim, dropout):
        super().__init__()
        self.emb = torch.nn.Embedding(num_nodes, dim)
        self.conv1 = SAGEConv(dim, dim)
        self.conv2 = SAGEConv(dim, dim)
        self.p = dropout

    def forward(self, n_id, edge_index):
        x = self.emb(n_id)
        x = F.relu(self.conv1(x, edge_index))
        x = F.dropout(x, self.p, self.training)
        return self.conv2(x, edge_index)


def served_ids(cluster):
    """SNAP id -> served global id."""
    ids = {}
    for b in fanout.NodeLoader(cluster, torch.arange(cluster.num_nodes), num_neighbors=[0], batch_size=4096,
                               shuffle=False, features=False, labels=False, original_ids=True):
        ids.update(zip(b.original_id.tolist(), b.n_id.tolist()))
    return ids


def link_batches(cluster, pairs, times, fanouts, batch_size, **kw):
    return fanout.LinkLoader(cluster, pairs, num_neighbors=list(fanouts), batch_size=batch_size,
                             edge_label_time=times, temporal_strategy="last", features=False, labels=False,
                             edge_ids=False, **kw)


@torch.no_grad()
def score(model, cluster, pairs, times, fanouts):
    model.eval()
    out = []
    for b in link_batches(cluster, pairs, times, fanouts, 1024, shuffle=False):
        h = model(b.n_id, b.edge_index)
        out.append((h[b.edge_label_index[0]] * h[b.edge_label_index[1]]).sum(1))
    return torch.cat(out)


def run(cluster, train, val, test, *, epochs=5, seed=0, dim=64, lr=0.01, dropout=0.2, fanouts=(10, 5),
        batch_size=512, log=print):
    torch.manual_seed(seed)
    to_served = served_ids(cluster)

    def tensors(messages):
        pairs = torch.tensor([[to_served[s] for s, _, _ in messages], [to_served[d] for _, d, _ in messages]])
        return pairs, torch.tensor([t - 1 for _, _, t in messages])  # strictly before the message

    model = Model(cluster.num_nodes, dim, dropout)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    pairs, times = tensors(train)
    loader = link_batches(cluster, pairs, times, fanouts, batch_size, seed=seed,
                          neg_sampling=fanout.NegativeSampling("binary", amount=1))
    losses = []
    for epoch in range(1, epochs + 1):
        model.train()
        total = 0.0
        for b in loader:
            opt.zero_grad()
            h = model(b.n_id, b.edge_index)
            logits = (h[b.edge_label_index[0]] * h[b.edge_label_index[1]]).sum(1)
            loss = F.binary_cross_entropy_with_logits(logits, b.edge_label)
            loss.backward()
            opt.step()
            total += float(loss)
        losses.append(total / len(loader))
        if log:
            log("epoch %3d loss %.4f" % (epoch, losses[-1]))

    # Degrees over the training period (both directions), for the baseline.
    degree = torch.zeros(cluster.num_nodes)
    for s, d, _ in train:
        degree[to_served[s]] += 1
        degree[to_served[d]] += 1
    sent = {}
    for s, d, _ in train + val + test:
        sent.setdefault(s, set()).add(d)
    users = sorted({s for s, _, _ in train + val + test} | {d for _, d, _ in train + val + test})
    result = {"losses": losses}
    rng = random.Random(seed + 7)
    for name, messages in (("val", val), ("test", test)):
        negatives = []
        for s, d, t in messages:  # the same sender, at the same time, to a user never messaged
            while True:
                w = rng.choice(users)
                if w != s and w not in sent[s]:
                    negatives.append((s, w, t))
                    break
        pairs, times = tensors(messages + negatives)
        labels = torch.cat([torch.ones(len(messages)), torch.zeros(len(negatives))])
        s = score(model, cluster, pairs, times, fanouts)
        result[name + "_auc"] = auc(s, labels)
        result[name + "_degree_product_auc"] = auc(degree[pairs[0]] * degree[pairs[1]], labels)
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-plane", default="auto", choices=["auto", "ucx", "tcp"])
    ap.add_argument("--call-timeout-ms", type=int, default=30000, help="a request's deadline (default 30000)")
    ap.add_argument("--health-check-ms", type=int, default=1000,
                    help="replica health-check interval; requests on a replica found down move at once "
                         "(default 1000, 0 = off)")
    ap.add_argument("--json", help="write the metrics to this file")
    a = ap.parse_args()
    if a.epochs < 1:
        ap.error("--epochs must be >= 1")
    messages = read_messages(COLLEGE_MSG)
    train, val, test = chronological_split(messages)
    print("CollegeMsg: %d messages; train %d (to t=%d), val %d, test %d (from t=%d)"
          % (len(messages), len(train), train[-1][2], len(val), len(test), test[0][2]), flush=True)
    with tempfile.TemporaryDirectory(prefix="fanout-temporal-") as tmp:
        data = fanout.partition(COLLEGE_MSG, os.path.join(tmp, "collegemsg-2"), format="snap", parts=2,
                                method="random", edge_times=True)
        with fanout.LocalCluster(data, data_plane=a.data_plane) as lc:
            cluster = lc.cluster(call_timeout_ms=a.call_timeout_ms, health_check_ms=a.health_check_ms)
            r = run(cluster, train, val, test, epochs=a.epochs, seed=a.seed, log=lambda m: print(m, flush=True))
    print("val_auc=%.3f degree_product_auc=%.3f" % (r["val_auc"], r["val_degree_product_auc"]))
    print("test_auc=%.3f degree_product_auc=%.3f" % (r["test_auc"], r["test_degree_product_auc"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f)
    return 0 if r["test_auc"] > r["test_degree_product_auc"] else 1


if __name__ == "__main__":
    sys.exit(main())
