"""LABOR and random walks through the Python package: every path gives the same batches and walks,
batches carry their importance weights (also through PyG), RandomWalkLoader's epochs, refusals."""
import pytest
import torch


def _paths(local):
    """The same servers reached three ways: UCX data plane, Thrift only, and (co-located) sampled here."""
    return {"ucx": local.cluster(data_plane="ucx", local_sampling="off"),
            "thrift": local.cluster(data_plane="tcp", local_sampling="off"),
            "here": local.cluster()}


def test_labor_batches_are_the_same_on_every_path_and_carry_edge_weights(local, fanout):
    runs = {}
    for name, c in _paths(local).items():
        loader = fanout.NodeLoader(c, "train", [4, 3], batch_size=32, shuffle=False, seed=5, sampler="labor",
                                   num_workers=1)
        runs[name] = list(loader)
        s = loader.stats()
        assert s["batches"] == len(runs[name])
    first = runs["ucx"]
    for name, batches in runs.items():
        assert len(batches) == len(first) > 1
        for a, b in zip(batches, first):
            for f in ("n_id", "edge_index", "e_id", "edge_weight", "x", "y"):
                assert torch.equal(getattr(a, f), getattr(b, f)), (name, f)
    for b in first:
        w = b.edge_weight
        assert w.dtype == torch.float32 and w.shape == (b.edge_index.size(1),)
        assert bool((w > 0).all()) and bool((w <= 1).all())
        assert b.to_pyg().edge_weight is w
    # Neighbor sampling's batches have no weights.
    nb = next(iter(fanout.NodeLoader(local.cluster(), "train", [4, 3], batch_size=32)))
    assert nb.edge_weight is None


def test_labor_refusals_name_what_is_wrong(cluster, fanout, movielens2):
    with pytest.raises(fanout.InvalidArgument, match="replace"):
        fanout.NodeLoader(cluster, "train", [4], sampler="labor", replace=True)
    with pytest.raises(fanout.InvalidArgument, match="'pagerank'"):
        fanout.NodeLoader(cluster, "train", [4], sampler="pagerank")
    with fanout.LocalCluster(movielens2) as lc:
        with pytest.raises(fanout.InvalidArgument, match="heterogeneous"):
            fanout.NodeLoader(lc.cluster(), ("user", None), {("user", "rates", "movie"): [3]}, sampler="labor")


def test_walks_are_the_same_on_every_path_and_pure_functions_of_the_seed(local, fanout):
    seeds = torch.tensor([0, 5, 5, 2707, 100])
    for kw in (dict(), dict(p=0.25, q=4.0, restart_prob=0.3, top_k=3, num_walks=4)):
        got = {name: c.random_walks(seeds, 6, seed=9, **kw) for name, c in _paths(local).items()}
        w = got["ucx"]
        assert w.walks.shape == (seeds.numel() * kw.get("num_walks", 1), 7)
        assert torch.equal(w.walks[::kw.get("num_walks", 1), 0], seeds)
        for name, other in got.items():
            assert torch.equal(other.walks, w.walks), name
            assert other.steps == w.steps
            if "top_k" in kw:
                assert torch.equal(other.top_nodes, w.top_nodes) and torch.equal(other.top_counts, w.top_counts)
        # Steps follow stored edges: each next node is in the row of the one before (Cora is undirected).
        if not kw:
            c = local.cluster()
            for row in w.walks.tolist():
                for u, v in zip(row, row[1:]):
                    if v < 0:
                        break
                    both = c._c.sample_batch(dict(num_neighbors=[-1], features=False, labels=False),
                                             fanout._ids_buffer(torch.tensor([u])), None, None, 0)
                    assert v in fanout._tensor(both["n_id"]).tolist()
    a = local.cluster().random_walks(seeds, 6, seed=9)
    b = local.cluster().random_walks(seeds, 6, seed=10)
    assert not torch.equal(a.walks, b.walks)
    # PinSAGE neighborhoods as an edge list.
    w = local.cluster().random_walks(seeds, 4, num_walks=8, restart_prob=0.5, top_k=5, seed=1)
    ei, ew = w.neighborhood_index()
    assert ei.shape[0] == 2 and ei.shape[1] == ew.numel() == w.top_nodes.numel()
    assert bool((ew >= 1).all())
    counts = w.top_ptr[1:] - w.top_ptr[:-1]
    assert bool((counts <= 5).all())
    assert torch.equal(ei[1], torch.repeat_interleave(seeds, counts))


def test_random_walk_loader_walks_every_seed_once_per_epoch(cluster, fanout):
    seeds = cluster.split_nodes("train")
    loader = fanout.RandomWalkLoader(cluster, seeds, walk_length=4, batch_size=32, num_walks=2, seed=3)
    assert len(loader) == (seeds.numel() + 31) // 32
    e0 = list(loader)
    e1 = list(loader)
    starts = torch.cat([b.walks[::2, 0] for b in e0])
    assert sorted(starts.tolist()) == sorted(seeds.tolist())
    assert any(not torch.equal(a.seeds, b.seeds) for a, b in zip(e0, e1))  # reshuffled
    loader.set_epoch(0)
    again = list(loader)
    for a, b in zip(e0, again):
        assert torch.equal(a.walks, b.walks) and (a.epoch, a.index) == (b.epoch, b.index)


@pytest.mark.parametrize("kw,match", [(dict(walk_length=0), "walk_length"), (dict(p=0), "node2vec p"),
                                      (dict(q=-1.0), "node2vec q"), (dict(restart_prob=1.0), "restart_prob"),
                                      (dict(num_walks=2, walk_length=2, top_k=5), "top_k 5"),
                                      (dict(num_walks=0), "num_walks")])
def test_walk_refusals_name_the_option(cluster, fanout, kw, match):
    args = dict(walk_length=3)
    args.update(kw)
    with pytest.raises(fanout.InvalidArgument, match=match):
        cluster.random_walks(torch.tensor([1, 2]), **args)
    with pytest.raises(fanout.InvalidArgument, match=match):
        fanout.RandomWalkLoader(cluster, "train", **args)
    with pytest.raises(fanout.InvalidArgument, match="2708"):
        cluster.random_walks(torch.tensor([2708]), 3)


def test_pyg_node_loader_gets_labor_batches_with_their_edge_weights(cluster, fanout):
    pytest.importorskip("torch_geometric", reason="PyTorch Geometric is not installed here")
    import fanout.pyg
    seeds = cluster.split_nodes("train")
    ours = list(fanout.NodeLoader(cluster, seeds, [5, 3], batch_size=64, shuffle=False, seed=11, sampler="labor"))
    fs, gs = fanout.pyg.FeatureStore(cluster), fanout.pyg.GraphStore(cluster)
    sampler = fanout.pyg.NeighborSampler(cluster, [5, 3], seed=11, batch_size=64, sampler="labor")
    theirs = list(fanout.pyg.NodeLoader(data=(fs, gs), node_sampler=sampler, input_nodes=seeds, batch_size=64))
    assert len(theirs) == len(ours)
    for d, b in zip(theirs, ours):
        for f in ("n_id", "edge_index", "edge_weight", "x", "y"):
            assert torch.equal(getattr(d, f), getattr(b, f)), f
        assert d.validate(raise_on_error=True)
    with pytest.raises(fanout.InvalidArgument, match="sampler"):
        fanout.pyg.NeighborSampler(cluster, [5], sampler="walk")


def test_pinsage_hops_are_the_same_on_every_path_with_normalised_visit_weights(local, fanout):
    runs = {name: list(fanout.NodeLoader(c, "train", [5, 3], batch_size=64, shuffle=False, seed=2, sampler="pinsage",
                                         num_walks=8, walk_length=4, restart_prob=0.3, num_workers=1))
            for name, c in _paths(local).items()}
    first = runs["ucx"]
    for name, batches in runs.items():
        for a, b in zip(batches, first):
            for f in ("n_id", "edge_index", "edge_weight", "x"):
                assert torch.equal(getattr(a, f), getattr(b, f)), (name, f)
    for b in first:
        col = b.edge_index[1]
        sums = torch.zeros(b.n_id.numel()).index_add_(0, col, b.edge_weight)
        assert torch.allclose(sums[torch.unique(col)], torch.ones(torch.unique(col).numel()))
        assert bool((torch.bincount(col) <= 5).all())
        assert bool((b.e_id == -1).all())  # walk neighborhoods are not stored edges
    with pytest.raises(fanout.InvalidArgument, match="top_k 50"):
        fanout.NodeLoader(local.cluster(), "train", [50], sampler="pinsage", num_walks=2, walk_length=3)
    # top_k names every hop's count.
    a = next(iter(fanout.NodeLoader(local.cluster(), "train", [5, 5], batch_size=64, shuffle=False, sampler="pinsage",
                                    num_walks=8, walk_length=4, top_k=3)))
    b = next(iter(fanout.NodeLoader(local.cluster(), "train", [3, 3], batch_size=64, shuffle=False, sampler="pinsage",
                                    num_walks=8, walk_length=4)))
    assert torch.equal(a.edge_index, b.edge_index) and torch.equal(a.n_id, b.n_id)
    with pytest.raises(fanout.InvalidArgument, match="top_k is for sampler='pinsage'"):
        fanout.NodeLoader(local.cluster(), "train", [5], top_k=3)


def test_metapath_walks_follow_their_types_on_every_path(fanout, movielens2):
    """MovieLens user -> movie -> user walks (stored direction: rev_rates from a user's row, rates from a
    movie's) are the same over UCX, Thrift and co-located reads, alternate their node types, and a metapath
    whose types do not chain is refused by name."""
    with fanout.LocalCluster(movielens2) as lc:
        paths = _paths(lc)
        c = paths["thrift"]
        users = c.nodes_of_type("user")[:200]
        movies = c.nodes_of_type("movie")
        got = {name: cl.random_walks(users, 6, num_walks=2, seed=4, metapath=["rev_rates", "rates"])
               for name, cl in paths.items()}
        w = got["thrift"].walks
        for name, other in got.items():
            assert torch.equal(other.walks, w), name
        steps = w[:, 1:]
        taken = steps >= 0
        assert int(taken.sum()) > 1000
        is_movie = torch.isin(steps, movies)
        odd = torch.zeros_like(taken)
        odd[:, 0::2] = True  # steps 1, 3, 5: to a movie; 2, 4, 6: back to a user
        assert bool((is_movie == odd)[taken].all())
        loader = fanout.RandomWalkLoader(c, users, 4, batch_size=64, metapath=[("movie", "rev_rates", "user"),
                                                                               ("user", "rates", "movie")])
        assert sum(b.walks.size(0) for b in loader) == users.numel()
        with pytest.raises(fanout.InvalidArgument, match="starts at node type 'user'"):
            c.random_walks(users, 4, metapath=["rev_rates", "rev_rates"])
        with pytest.raises(fanout.InvalidArgument, match="list of edge types"):
            c.random_walks(users, 4, metapath="rates")


def test_ppr_neighborhoods_are_the_same_on_every_path_and_feed_the_loader(local, fanout):
    """Cluster.ppr gives the same top-k lists and scores over UCX, Thrift and co-located reads; scores come
    sorted; NodeLoader(sampler="ppr") batches carry them as edge weights; bad options are refused by name."""
    seeds = torch.tensor([0, 5, 100, 2707])
    got = {name: c.ppr(seeds, 10, alpha=0.2, eps=1e-5) for name, c in _paths(local).items()}
    ptr, nodes, scores = got["thrift"]
    assert ptr.tolist()[0] == 0 and int(ptr[-1]) == nodes.numel() == scores.numel() > 10
    assert bool(((ptr[1:] - ptr[:-1]) <= 10).all())
    for name, (p2, n2, s2) in got.items():
        assert torch.equal(p2, ptr) and torch.equal(n2, nodes) and torch.equal(s2, scores), name
    for i in range(seeds.numel()):
        s = scores[ptr[i]:ptr[i + 1]]
        assert bool((s[:-1] >= s[1:]).all()) and bool((s > 0).all())
        assert int(seeds[i]) not in nodes[ptr[i]:ptr[i + 1]].tolist()
    cluster = local.cluster()
    loader = fanout.NodeLoader(cluster, "train", [6], batch_size=70, sampler="ppr", ppr_eps=1e-4, shuffle=False,
                               num_workers=1)
    for b in loader:
        assert b.edge_weight is not None and b.edge_weight.numel() == b.edge_index.size(1) > 0
        assert bool((b.e_id == -1).all())
        assert bool((b.edge_index[1] < b.batch_size).all())  # every edge ends at a seed
    # The online query path: the same neighborhoods, scores as edge weights.
    q = cluster.sample_subgraph(seeds, [10], sampler="ppr", ppr_alpha=0.2, ppr_eps=1e-5, pyg=False)
    assert q.edge_weight is not None and q.edge_index.size(1) == nodes.numel()
    for i in range(seeds.numel()):
        mine = q.edge_index[1] == i
        assert q.n_id[q.edge_index[0][mine]].tolist() == nodes[ptr[i]:ptr[i + 1]].tolist()
        assert torch.equal(q.edge_weight[mine], scores[ptr[i]:ptr[i + 1]])
    with pytest.raises(fanout.InvalidArgument, match="one hop"):
        cluster.sample_subgraph(seeds, [10, 5], sampler="ppr")
    with pytest.raises(fanout.InvalidArgument, match="alpha"):
        cluster.ppr(seeds, 5, alpha=1.0)
    with pytest.raises(fanout.InvalidArgument, match="one hop"):
        iter(fanout.NodeLoader(cluster, "train", [6, 2], sampler="ppr"))


def test_ppr_type_budgets_keep_the_best_of_each_type(fanout, movielens2):
    """On MovieLens, per-type budgets keep at most n nodes of each type, the best ones in score order: the
    budgeted list is the unbudgeted one (long enough) filtered by the budgets; bad budgets are refused."""
    with fanout.LocalCluster(movielens2) as lc:
        c = lc.cluster()
        seeds = c.nodes_of_type("movie")[:20]
        ptr, nodes, scores = c.ppr(seeds, 200, eps=1e-5)
        bptr, bnodes, bscores = c.ppr(seeds, 12, eps=1e-5, type_budgets={"user": 8, "genre": 2})
        types = c.node_type_of(bnodes)
        assert bnodes.numel() > 100
        for i in range(seeds.numel()):
            mine = bnodes[bptr[i]:bptr[i + 1]]
            t = c.node_type_of(mine).tolist()
            assert t.count(0) <= 8 and t.count(2) <= 2 and t.count(1) == 0
            want, kept = [], {0: 0, 1: 0, 2: 0}
            for v, ty in zip(nodes[ptr[i]:ptr[i + 1]].tolist(), c.node_type_of(nodes[ptr[i]:ptr[i + 1]]).tolist()):
                if kept[ty] < {0: 8, 1: 0, 2: 2}[ty] and len(want) < 12:
                    kept[ty] += 1
                    want.append(v)
            assert mine.tolist() == want, i
        assert int((types == 1).sum()) == 0
        loader = fanout.NodeLoader(c, ("movie", None), [6], batch_size=64, sampler="ppr", ppr_eps=1e-4,
                                   ppr_type_budgets={"user": 6}, features=False, labels=False, num_workers=1)
        b = next(iter(loader))
        assert bool((c.node_type_of(b.n_id[b.edge_index[0]]) == 0).all())
        with pytest.raises(fanout.InvalidArgument, match="not node types"):
            c.ppr(seeds, 5, type_budgets={"author": 3})
