"""Link prediction on MovieLens with PyTorch Geometric's heterogeneous models and loaders, sampling
through Fanout's servers.

Adapted from PyG's MovieLens link-prediction example (a GraphSAGE made heterogeneous by
torch_geometric.nn.to_hetero, user and movie embeddings, a dot-product classifier, binary negatives):
the graph (users, movies, genres; rates, has_genre and their reverse relations) lives on two Fanout
servers instead of in a HeteroData, and PyG's own LinkLoader samples it through fanout.pyg:

    data = (fanout.pyg.FeatureStore(cluster), fanout.pyg.GraphStore(cluster))       # was: HeteroData
    sampler = fanout.pyg.NeighborSampler(cluster, num_neighbors={...})
    loader = LinkLoader(data, link_sampler=sampler, edge_label_index=(("user", "rates", "movie"), eli),
                        neg_sampling=NegativeSampling("binary", 2), batch_size=1024)

The ratings are split at random (80 / 10 / 10 %, by --seed); only the training ratings are partitioned
and served, so no message passes over a held-out rating. Negatives are strict (never a training rating).
It prints the test AUC of telling held-out ratings from random user-movie pairs beside a baseline
computed in the same run on the same pairs: the product of the user's and the movie's training degrees
(popularity), e.g.

    test_auc=0.9xx degree_product_auc=0.8xx

  ./run example pyg_movielens [--epochs 5] [--seed 0]
"""
import argparse
import os
import sys
import tempfile

import torch
import torch.nn.functional as F

import fanout

try:
    import fanout.pyg
    from torch_geometric.loader import LinkLoader
    from torch_geometric.nn import SAGEConv, to_hetero
    from torch_geometric.sampler import NegativeSampling
except ImportError as e:
    sys.exit("pyg_movielens: %s" % e)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from movielens_rating import MOVIELENS, read_ratings, split, write_train_folder  # noqa: E402

RATES = ("user", "rates", "movie")
# Per edge type and hop (rows hold in-edges): a movie hears from its raters and its genres, a user from
# the movies they rated.
NUM_NEIGHBORS = {"rates": [10, 5], "rev_rates": [10, 5], "rev_has_genre": [3, 0]}
# The edge types the model passes messages over (has_genre is not sampled, so empty: it is there so that
# to_hetero updates genres too, as PyG requires of every node type).
USED = (("user", "rates", "movie"), ("movie", "rev_rates", "user"), ("genre", "rev_has_genre", "movie"),
        ("movie", "has_genre", "genre"))


class GNN(torch.nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.conv1 = SAGEConv(hidden, hidden)
        self.conv2 = SAGEConv(hidden, hidden)

    def forward(self, x, edge_index):
        return self.conv2(F.relu(self.conv1(x, edge_index)), edge_index)


class Model(torch.nn.Module):
    """Embeddings (users, movies, genres) plus the movie's genre features, a heterogeneous GraphSAGE
    (to_hetero), and a dot product of the two ends of each labelled edge."""

    def __init__(self, cluster, hidden):
        super().__init__()
        n = {t: cluster.nodes_of_type(t).numel() for t in ("user", "movie", "genre")}
        self.user_emb = torch.nn.Embedding(n["user"], hidden)
        self.movie_emb = torch.nn.Embedding(n["movie"], hidden)
        self.genre_emb = torch.nn.Embedding(n["genre"], hidden)
        self.movie_lin = torch.nn.Linear(cluster.node_type_feature_dims[cluster.node_types.index("movie")], hidden)
        self.gnn = to_hetero(GNN(hidden), (["user", "movie", "genre"], list(USED)), aggr="sum")

    def forward(self, batch):
        # PyG's ids are type-local: n_id indexes each type's embedding table directly.
        x = {"user": self.user_emb(batch["user"].n_id),
             "movie": self.movie_emb(batch["movie"].n_id) + self.movie_lin(batch["movie"].x),
             "genre": self.genre_emb(batch["genre"].n_id)}
        h = self.gnn(x, {et: batch[et].edge_index for et in USED})
        eli = batch[RATES].edge_label_index
        return (h["user"][eli[0]] * h["movie"][eli[1]]).sum(-1)


def auc(scores, labels):
    """Area under the ROC curve (ties counted half)."""
    order = torch.argsort(scores)
    ranks = torch.empty_like(scores)
    ranks[order] = torch.arange(1, scores.numel() + 1, dtype=scores.dtype)
    # Average the ranks of ties.
    uniq, inv = torch.unique(scores, return_inverse=True)
    sums = torch.zeros(uniq.numel(), dtype=scores.dtype).index_add_(0, inv, ranks)
    counts = torch.bincount(inv, minlength=uniq.numel()).to(scores.dtype)
    ranks = (sums / counts)[inv]
    pos = labels > 0.5
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def run(cluster, train, test, *, epochs, seed, hidden=32, batch_size=1024, log=print):
    torch.manual_seed(seed)
    users, movies = cluster.nodes_of_type("user"), cluster.nodes_of_type("movie")
    user_of = {int(o): i for i, o in enumerate(cluster.original_ids(users).tolist())}
    movie_of = {int(o): i for i, o in enumerate(cluster.original_ids(movies).tolist())}

    def edges(ratings):  # type-local (PyG) ids; pairs with a user or movie unseen in training are left out
        known = [(user_of[u], movie_of[m]) for u, m, _ in ratings if u in user_of and m in movie_of]
        return torch.tensor(known, dtype=torch.long).t()

    data = (fanout.pyg.FeatureStore(cluster), fanout.pyg.GraphStore(cluster))

    def loader(eli, epoch_seed, shuffle):
        sampler = fanout.pyg.NeighborSampler(cluster, NUM_NEIGHBORS, seed=epoch_seed)
        return LinkLoader(data, link_sampler=sampler, edge_label_index=(RATES, eli), batch_size=batch_size,
                          shuffle=shuffle, neg_sampling=NegativeSampling("binary", 2))

    model = Model(cluster, hidden)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    train_eli = edges(train)
    train_loader = loader(train_eli, seed, True)
    for epoch in range(1, epochs + 1):
        train_loader.link_sampler.set_epoch(epoch)
        model.train()
        total, n = 0.0, 0
        for b in train_loader:
            opt.zero_grad()
            loss = F.binary_cross_entropy_with_logits(model(b), b[RATES].edge_label)
            loss.backward()
            opt.step()
            total += float(loss) * b[RATES].edge_label.numel()
            n += b[RATES].edge_label.numel()
        log("epoch %d loss %.4f" % (epoch, total / n))

    # Test: held-out ratings against strict random pairs, scored by the model and by degree product.
    deg_user = torch.bincount(train_eli[0], minlength=users.numel()).float()
    deg_movie = torch.bincount(train_eli[1], minlength=movies.numel()).float()
    scores, base, labels = [], [], []
    model.eval()
    with torch.no_grad():
        for b in loader(edges(test), seed + 1, False):
            eli = b[RATES].edge_label_index
            u, m = b["user"].n_id[eli[0]], b["movie"].n_id[eli[1]]
            scores.append(model(b))
            base.append(deg_user[u] * deg_movie[m])
            labels.append(b[RATES].edge_label)
    labels = torch.cat(labels)
    return {"test_auc": auc(torch.cat(scores), labels), "degree_product_auc": auc(torch.cat(base), labels)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0, help="rating split and training seed")
    a = ap.parse_args()
    if a.epochs < 1:
        ap.error("--epochs must be >= 1")
    ratings = read_ratings(os.path.join(MOVIELENS, "ratings.csv"))
    train, _, test = split(ratings, a.seed)
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "ml-train")
        write_train_folder(train, folder)
        data = fanout.partition(folder, os.path.join(tmp, "ml2"), format="movielens", parts=2, undirected=True)
        with fanout.LocalCluster(data) as lc:
            r = run(lc.cluster(), train, test, epochs=a.epochs, seed=a.seed)
    print("test_auc=%.3f degree_product_auc=%.3f" % (r["test_auc"], r["degree_product_auc"]))


if __name__ == "__main__":
    main()
