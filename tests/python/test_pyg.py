"""Fanout batches consumed by real PyTorch Geometric: to_pyg() gives Data / HeteroData that validate,
with PyG's attribute names and dtypes, and that PyG's layers and transforms accept. Skipped, with the
reason, where PyG is not installed (./run installs the pinned release, see TOOLCHAIN in docs)."""
import os

import pytest
import torch

pyg = pytest.importorskip("torch_geometric", reason="PyTorch Geometric is not installed here "
                          "(./run deps installs the pinned torch-geometric into the build's Python path)")


def test_a_batch_is_valid_pyg_data_with_pyg_names_and_dtypes(cluster, fanout):
    loader = fanout.NodeLoader(cluster, "train", num_neighbors=[5, 3], batch_size=32, seed=4)
    b = next(iter(loader))
    data = b.to_pyg()
    assert isinstance(data, pyg.data.Data)
    assert data.validate(raise_on_error=True)
    assert data.num_nodes == b.n_id.numel()
    assert data.edge_index.dtype == torch.int64 and data.edge_index.size(0) == 2
    assert data.x.dtype == torch.float32 and data.x.size() == (b.n_id.numel(), cluster.feature_dim)
    assert data.y.dtype == torch.int64 and data.n_id.dtype == torch.int64
    assert int(data.batch_size) == 32
    # PyG's NeighborLoader conventions: seeds first, per-hop counts that add up.
    assert sum(data.num_sampled_nodes) == data.num_nodes
    assert sum(data.num_sampled_edges) == data.edge_index.size(1)
    assert torch.equal(data.n_id[:32], b.n_id[:32])


def test_pyg_layers_and_transforms_consume_a_batch(cluster, fanout):
    from torch_geometric.nn import GraphSAGE, SAGEConv
    import torch_geometric.transforms as T

    b = next(iter(fanout.NodeLoader(cluster, "train", num_neighbors=[5, 3], batch_size=32, seed=5)))
    data = b.to_pyg()
    conv = SAGEConv(cluster.feature_dim, 16)
    out = conv(data.x, data.edge_index)
    assert out.shape == (data.num_nodes, 16) and bool(torch.isfinite(out).all())
    model = GraphSAGE(cluster.feature_dim, 16, num_layers=2, out_channels=cluster.num_classes)
    logits = model(data.x, data.edge_index)[:data.batch_size]
    loss = torch.nn.functional.cross_entropy(logits, data.y[:data.batch_size])
    loss.backward()
    assert bool(torch.isfinite(loss))
    und = T.ToUndirected()(data.clone())
    assert und.validate(raise_on_error=True)
    assert und.edge_index.size(1) >= data.edge_index.size(1)


class _Sage(torch.nn.Module):
    """One SAGEConv with lazy input sizes: the homogeneous model to_hetero makes heterogeneous."""

    def __init__(self):
        from torch_geometric.nn import SAGEConv
        super().__init__()
        self.conv = SAGEConv((-1, -1), 8)

    def forward(self, x, edge_index):
        return self.conv(x, edge_index)


def test_a_hetero_batch_is_valid_pyg_heterodata(fanout, movielens2):
    from torch_geometric.nn import to_hetero

    with fanout.LocalCluster(movielens2) as lc:
        cluster = lc.cluster()
        movies = cluster.nodes_of_type("movie")
        fanouts = {("user", "rates", "movie"): [4, 2], "rev_rates": [0, 3], "rev_has_genre": [1, 0],
                   "has_genre": [0, 2]}
        b = next(iter(fanout.NodeLoader(cluster, ("movie", movies[:64]), num_neighbors=fanouts, batch_size=64,
                                        labels=False, seed=1)))
        h = b.to_pyg()
        assert isinstance(h, pyg.data.HeteroData)
        assert h.validate(raise_on_error=True)
        assert set(h.node_types) >= {"user", "movie"}
        assert h["movie"].x.dtype == torch.float32 and h["movie"].x.size(1) == 20
        for et in h.edge_types:
            assert h[et].edge_index.dtype == torch.int64
        # A homogeneous model made heterogeneous by PyG runs on it (node types without features get
        # a learned-free constant input, as PyG's examples do).
        for nt in h.node_types:
            if "x" not in h[nt]:
                h[nt].x = torch.ones(h[nt].num_nodes, 20)

        edge_types = [et for et in h.edge_types if h[et].edge_index.size(1) > 0]
        sub = h.edge_type_subgraph(edge_types)
        model = to_hetero(_Sage(), sub.metadata(), aggr="sum")
        out = model(sub.x_dict, sub.edge_index_dict)
        assert out["movie"].shape == (sub["movie"].num_nodes, 8)


def _pyg_loader(cluster, fanout, num_workers, seeds, batch_size=64, neighbor_loader=False):
    from torch_geometric.loader import NeighborLoader, NodeLoader
    fs, gs = fanout.pyg.FeatureStore(cluster), fanout.pyg.GraphStore(cluster)
    sampler = fanout.pyg.NeighborSampler(cluster, num_neighbors=[5, 3], seed=11, batch_size=batch_size)
    if neighbor_loader:  # PyG's NeighborLoader, handed Fanout's sampler
        return NeighborLoader((fs, gs), num_neighbors=[5, 3], input_nodes=seeds, batch_size=batch_size,
                              neighbor_sampler=sampler, num_workers=num_workers)
    return NodeLoader(data=(fs, gs), node_sampler=sampler, input_nodes=seeds, batch_size=batch_size,
                      shuffle=False, num_workers=num_workers)


def _same(a, b, fields):
    for f in fields:
        x, y = getattr(a, f), getattr(b, f)
        assert torch.equal(x, y), f


def test_pygs_node_and_neighbor_loaders_give_fanouts_batches_with_and_without_workers(cluster, fanout):
    import fanout.pyg  # noqa: F401
    seeds = cluster.split_nodes("train")
    ours = list(fanout.NodeLoader(cluster, seeds, num_neighbors=[5, 3], batch_size=64, shuffle=False, seed=11,
                                  edge_ids=True, num_workers=1))
    for neighbor_loader in (False, True):
        batches = list(_pyg_loader(cluster, fanout, 0, seeds, neighbor_loader=neighbor_loader))
        assert len(batches) == len(ours) == (seeds.numel() + 63) // 64
        for i, (d, b) in enumerate(zip(batches, ours)):
            assert d.validate(raise_on_error=True)
            assert torch.equal(d.n_id[:d.batch_size], seeds[i * 64:(i + 1) * 64])
            assert torch.equal(d.input_id, torch.arange(i * 64, i * 64 + d.batch_size))
            # The same sampled sets, ids, features and labels as fanout.NodeLoader's batch.
            _same(d, b, ("n_id", "edge_index", "e_id", "x", "y", "input_id"))
            assert list(d.num_sampled_nodes) == b.num_sampled_nodes
    # DataLoader worker processes connect on their own and give the same batches.
    with_workers = list(_pyg_loader(cluster, fanout, 2, seeds))
    assert len(with_workers) == len(ours)
    for a, b in zip(with_workers, ours):
        _same(a, b, ("n_id", "edge_index", "x", "y"))


def test_set_epoch_gives_fresh_samples_and_returning_to_an_epoch_repeats_it(cluster, fanout):
    import fanout.pyg  # noqa: F401
    from torch_geometric.loader import NodeLoader
    fs, gs = fanout.pyg.FeatureStore(cluster), fanout.pyg.GraphStore(cluster)
    sampler = fanout.pyg.NeighborSampler(cluster, [5, 3], seed=2, batch_size=64)
    loader = NodeLoader((fs, gs), node_sampler=sampler, input_nodes=cluster.split_nodes("train"), batch_size=64)
    first = [d.n_id for d in loader]
    sampler.set_epoch(1)
    second = [d.n_id for d in loader]
    sampler.set_epoch(0)
    again = [d.n_id for d in loader]
    assert any(not torch.equal(a, b) for a, b in zip(first, second))
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    with pytest.raises(fanout.InvalidArgument, match="epoch"):
        sampler.set_epoch(-1)


def _stored_edges(cluster, fanout):
    first = next(iter(fanout.NodeLoader(cluster, torch.arange(cluster.num_nodes), num_neighbors=[-1],
                                        batch_size=cluster.num_nodes, shuffle=False, features=False,
                                        labels=False)))
    return first.n_id[first.edge_index]


@pytest.mark.parametrize("mode", ["binary", "triplet"])
def test_pygs_link_loader_gives_fanouts_link_batches_and_negatives_are_never_edges(cluster, fanout, mode):
    import fanout.pyg  # noqa: F401
    from torch_geometric.loader import LinkLoader
    from torch_geometric.sampler import NegativeSampling
    stored = _stored_edges(cluster, fanout)
    edges = set(zip(stored[0].tolist(), stored[1].tolist()))
    eli = stored[:, :600]
    fs, gs = fanout.pyg.FeatureStore(cluster), fanout.pyg.GraphStore(cluster)
    sampler = fanout.pyg.NeighborSampler(cluster, [4, 2], seed=3, batch_size=64)
    pyg_loader = LinkLoader((fs, gs), link_sampler=sampler, edge_label_index=(None, eli), batch_size=64,
                            neg_sampling=NegativeSampling(mode, 2))
    ours = fanout.LinkLoader(cluster, eli, num_neighbors=[4, 2], batch_size=64, shuffle=False, seed=3,
                             neg_sampling=fanout.NegativeSampling(mode, 2), num_workers=1)
    n = 0
    for d, b in zip(pyg_loader, ours):
        assert d.validate(raise_on_error=True)
        _same(d, b, ("n_id", "edge_index", "e_id", "x", "y", "input_id"))
        if mode == "binary":
            _same(d, b, ("edge_label_index", "edge_label"))
            src, dst = d.n_id[d.edge_label_index]
            for s, t, label in zip(src.tolist(), dst.tolist(), d.edge_label.tolist()):
                assert ((s, t) in edges) == (label == 1), (s, t, label)
        else:
            _same(d, b, ("src_index", "dst_pos_index", "dst_neg_index"))
            assert list(d.dst_neg_index.shape) == [d.input_id.numel(), 2]
            src = d.n_id[d.src_index]
            for i, s in enumerate(src.tolist()):
                for t in d.n_id[d.dst_neg_index[i]].tolist():
                    assert (s, t) not in edges
        n += 1
    assert n == len(ours) == 10


def test_heterogeneous_batches_through_pygs_loaders_and_to_hetero(fanout, movielens2):
    import fanout.pyg  # noqa: F401
    from torch_geometric.loader import LinkLoader, NodeLoader
    from torch_geometric.nn import to_hetero
    from torch_geometric.sampler import NegativeSampling
    with fanout.LocalCluster(movielens2) as lc:
        cluster = lc.cluster()
        fs, gs = fanout.pyg.FeatureStore(cluster), fanout.pyg.GraphStore(cluster)
        movies = cluster.nodes_of_type("movie")
        # The stores speak PyG's type-local ids: one group per node type, one edge attr per edge type.
        assert [a.group_name for a in fs.get_all_tensor_attrs()] == ["movie"]  # the only type with x
        assert fs.get_tensor_size(group_name="movie", attr_name="x") == (movies.numel(), 20)
        x = fs.get_tensor(group_name="movie", attr_name="x", index=torch.tensor([0, 5]))
        assert torch.equal(x, fanout._tensor(cluster._c.features(movies[[0, 5]].numpy()))[:, :20])
        sizes = {a.edge_type: a.size for a in gs.get_all_edge_attrs()}
        assert sizes[("user", "rates", "movie")] == (cluster.nodes_of_type("user").numel(), movies.numel())
        fanouts = {("user", "rates", "movie"): [4, 2], "rev_rates": [0, 3], "rev_has_genre": [1, 0],
                   "has_genre": [0, 2]}
        sampler = fanout.pyg.NeighborSampler(cluster, fanouts, seed=1, batch_size=64)
        pyg_loader = NodeLoader((fs, gs), node_sampler=sampler, input_nodes=("movie", torch.arange(192)),
                                batch_size=64)
        ours = fanout.NodeLoader(cluster, ("movie", movies[:192]), num_neighbors=fanouts, batch_size=64,
                                 shuffle=False, seed=1, labels=False, num_workers=1)
        for h, b in zip(pyg_loader, ours):
            assert h.validate(raise_on_error=True)
            assert h["movie"].batch_size == 64
            for nt in cluster.node_types:  # type-local ids here, global ids in fanout's HeteroBatch
                assert torch.equal(cluster.nodes_of_type(nt)[h[nt].n_id], b[nt].n_id), nt
            for et in cluster.edge_types:
                assert torch.equal(h[et].edge_index, b[et].edge_index), et
            assert torch.equal(h["movie"].x, b["movie"].x)
            assert sum(h["movie"].num_sampled_nodes) == h["movie"].num_nodes
        # A homogeneous model made heterogeneous by PyG trains on the batch.
        for nt in h.node_types:
            if "x" not in h[nt]:
                h[nt].x = torch.ones(h[nt].num_nodes, 20)
        sub = h.edge_type_subgraph([et for et in h.edge_types if h[et].edge_index.size(1) > 0])

        model = to_hetero(_Sage(), sub.metadata(), aggr="sum")
        out = model(sub.x_dict, sub.edge_index_dict)
        out["movie"].sum().backward()
        # Typed seed edges with strict negatives: a negative is never a rating.
        et = ("user", "rates", "movie")
        with pytest.warns(UserWarning, match="copied"):
            row, col = gs.get_edge_index(edge_type=et, layout="coo")
        rated = set(zip(row.tolist(), col.tolist()))
        links = LinkLoader((fs, gs), link_sampler=fanout.pyg.NeighborSampler(cluster, fanouts, seed=2),
                           edge_label_index=(et, torch.stack([row[:512], col[:512]])), batch_size=128,
                           neg_sampling=NegativeSampling("binary", 1))
        for h in links:
            assert h.validate(raise_on_error=True)
            eli, label = h[et].edge_label_index, h[et].edge_label
            users, items = h["user"].n_id[eli[0]], h["movie"].n_id[eli[1]]
            for u, m, l in zip(users.tolist(), items.tolist(), label.tolist()):
                assert ((u, m) in rated) == (l == 1)
        from torch_geometric.sampler import NodeSamplerInput
        with pytest.raises(fanout.InvalidArgument, match="typed input nodes"):
            sampler.sample_from_nodes(NodeSamplerInput(input_id=None, node=torch.tensor([0])))
        with pytest.raises(fanout.InvalidArgument, match="no edge timestamps|--edge-times"):
            sampler.sample_from_nodes(NodeSamplerInput(input_id=None, node=torch.tensor([0]), time=torch.tensor([5]),
                                                       input_type="movie"))
        with pytest.raises(IndexError, match="out of range for node type 'movie'"):
            sampler.sample_from_nodes(NodeSamplerInput(input_id=None, node=torch.tensor([movies.numel()]),
                                                       input_type="movie"))


def test_heterogeneous_temporal_batches_through_pygs_loaders_never_look_ahead(fanout, movielens_timed):
    import fanout.pyg  # noqa: F401
    from torch_geometric.loader import LinkLoader, NodeLoader
    from torch_geometric.sampler import NegativeSampling
    folder, times = movielens_timed
    fanouts = {("user", "rates", "movie"): [4, 2], "rev_rates": [3, 2], "has_genre": [1, 1],
               "rev_has_genre": [1, 0], "tags": [2, 0], "rev_tags": [0, 1]}
    with fanout.LocalCluster(folder) as lc:
        cluster = lc.cluster()
        fs, gs = fanout.pyg.FeatureStore(cluster), fanout.pyg.GraphStore(cluster)
        users = cluster.nodes_of_type("user")
        rated = times[times > 0]
        seed_times = rated.min() + torch.randint(0, int(rated.max() - rated.min()), (users.numel(),),
                                                 generator=torch.Generator().manual_seed(1))

        def never_ahead(h, seed_time):
            checked = 0
            for et in h.edge_types:
                if h[et].edge_index.size(1) == 0:
                    continue
                tree = h[et[2]].batch[h[et].edge_index[1]]
                assert torch.equal(tree, h[et[0]].batch[h[et].edge_index[0]]), et  # one tree per edge
                assert bool((times[h[et].e_id] <= seed_time[tree]).all()), "%s looks ahead" % (et,)
                checked += h[et].edge_index.size(1)
            return checked

        for strategy in ("uniform", "last"):
            sampler = fanout.pyg.NeighborSampler(cluster, fanouts, seed=3, batch_size=64, temporal_strategy=strategy)
            pyg_loader = NodeLoader((fs, gs), node_sampler=sampler, input_nodes=("user", torch.arange(users.numel())),
                                    input_time=seed_times, batch_size=64)
            ours = fanout.NodeLoader(cluster, ("user", users), num_neighbors=fanouts, batch_size=64, shuffle=False,
                                     seed=3, input_time=seed_times, temporal_strategy=strategy, num_workers=1,
                                     labels=False)
            edges = 0
            for h, b in zip(pyg_loader, ours):
                assert h.validate(raise_on_error=True)
                assert torch.equal(h["user"].seed_time, b.seed_time)
                for nt in cluster.node_types:  # type-local ids here, global ids in fanout's HeteroBatch
                    assert torch.equal(cluster.nodes_of_type(nt)[h[nt].n_id], b[nt].n_id), nt
                    assert torch.equal(h[nt].batch, b[nt].batch), nt
                for et in cluster.edge_types:
                    assert torch.equal(h[et].edge_index, b[et].edge_index), et
                edges += never_ahead(h, h["user"].seed_time)
                assert torch.equal(b.to_pyg().seed_time, b.seed_time)
            assert edges > 1000, strategy
        # Typed seed edges at their own time, binary negatives at their positive's.
        et = ("user", "rates", "movie")
        with pytest.warns(UserWarning, match="copied"):
            row, col = gs.get_edge_index(edge_type=et, layout="coo")
        first = next(iter(fanout.NodeLoader(cluster, ("movie", cluster.nodes_of_type("movie")[:300]),
                                            num_neighbors={"rates": [-1]}, batch_size=300, shuffle=False,
                                            labels=False, features=False)))
        e_id = first[et].e_id
        src, dst = first["user"].n_id[first[et].edge_index[0]], first["movie"].n_id[first[et].edge_index[1]]
        eli = torch.stack([torch.searchsorted(users, src), torch.searchsorted(cluster.nodes_of_type("movie"), dst)])
        links = LinkLoader((fs, gs), link_sampler=fanout.pyg.NeighborSampler(cluster, fanouts, seed=2),
                           edge_label_index=(et, eli), edge_label_time=times[e_id], batch_size=128,
                           neg_sampling=NegativeSampling("binary", 1))
        n = 0
        for h in links:
            assert h.validate(raise_on_error=True)
            seed_time = times[e_id][h[et].input_id]
            n += never_ahead(h, seed_time)
        assert n > 1000


def test_temporal_inputs_through_pygs_loaders_never_look_ahead(fanout, college_msg):
    import fanout.pyg  # noqa: F401
    from torch_geometric.loader import LinkLoader, NodeLoader
    from torch_geometric.sampler import NegativeSampling
    data, times = college_msg
    with fanout.LocalCluster(data) as lc:
        cluster = lc.cluster()
        n = cluster.num_nodes
        fs, gs = fanout.pyg.FeatureStore(cluster), fanout.pyg.GraphStore(cluster)
        assert fs.get_all_tensor_attrs() == []  # no features, no classes: nothing to offer
        seed_times = times.min() + torch.randint(0, int(times.max() - times.min()), (n,),
                                                 generator=torch.Generator().manual_seed(0))
        sampler = fanout.pyg.NeighborSampler(cluster, [5, 3], seed=4, batch_size=256, temporal_strategy="last")
        pyg_loader = NodeLoader((fs, gs), node_sampler=sampler, input_nodes=torch.arange(n), input_time=seed_times,
                                batch_size=256)
        ours = fanout.NodeLoader(cluster, torch.arange(n), num_neighbors=[5, 3], batch_size=256, shuffle=False,
                                 seed=4, input_time=seed_times, temporal_strategy="last", num_workers=1,
                                 labels=False, features=False)
        for d, b in zip(pyg_loader, ours):
            _same(d, b, ("n_id", "edge_index", "e_id", "batch", "seed_time"))
            tree = d.batch[d.edge_index[1]]
            assert bool((times[d.e_id] <= d.seed_time[tree]).all())
        first = next(iter(fanout.NodeLoader(cluster, torch.arange(200), num_neighbors=[-1], batch_size=200,
                                            shuffle=False, labels=False, features=False)))
        eli, edge_time = first.n_id[first.edge_index], times[first.e_id]
        for mode in ("binary", "triplet"):
            loader = LinkLoader((fs, gs), link_sampler=fanout.pyg.NeighborSampler(cluster, [4, 2], seed=5),
                                edge_label_index=(None, eli), edge_label_time=edge_time, batch_size=64,
                                neg_sampling=NegativeSampling(mode, 1))
            for d in loader:
                assert d.validate(raise_on_error=True)
                p = d.input_id.numel()
                assert int(d.batch.max()) < p  # PyG's numbering: a tree per seed edge
                tree = d.batch[d.edge_index[1]]
                assert bool((times[d.e_id] <= edge_time[d.input_id][tree]).all())
                if mode == "binary":
                    assert torch.equal(d.edge_label_time, edge_time[d.input_id].repeat(2))


def test_the_stores_are_read_only_and_errors_are_what_pyg_users_expect(local, cluster, fanout):
    import fanout.pyg  # noqa: F401
    fs, gs = fanout.pyg.FeatureStore(cluster), fanout.pyg.GraphStore(cluster)
    assert fs.get_tensor_size(group_name=None, attr_name="x") == (2708, 1433)
    x = fs.get_tensor(group_name=None, attr_name="x", index=torch.tensor([5, 1400]))
    assert x.shape == (2, 1433)
    both = fs.multi_get_tensor([fanout.pyg.TensorAttr(None, "x", torch.tensor([5])),
                                fanout.pyg.TensorAttr(None, "y", torch.tensor([5, 6])),
                                fanout.pyg.TensorAttr(None, "x", torch.tensor([1400]))])
    assert torch.equal(both[0][0], x[0]) and torch.equal(both[2][0], x[1]) and both[1].shape == (2,)
    with pytest.raises(KeyError, match="no attribute 'edge_attr'"):
        fs.get_tensor(group_name=None, attr_name="edge_attr", index=None)
    with pytest.raises(KeyError, match="homogeneous"):
        fs.get_tensor(group_name="paper", attr_name="x", index=None)
    with pytest.raises(IndexError, match="2708 is out of range"):
        fs.get_tensor(group_name=None, attr_name="x", index=torch.tensor([0, 2708]))
    with pytest.raises(IndexError, match="out of range"):
        fs.get_tensor(group_name=None, attr_name="y", index=torch.tensor([-1]))
    with pytest.raises(fanout.NotSupported, match="read-only"):
        fs.put_tensor(torch.zeros(2, 1433), group_name=None, attr_name="x", index=torch.tensor([0, 1]))
    with pytest.raises(fanout.NotSupported, match="read-only"):
        gs.put_edge_index((torch.tensor([0]), torch.tensor([1])), edge_type=None, layout="coo",
                          size=(2708, 2708))
    with pytest.warns(UserWarning, match="copied into this process"):
        row, col = gs.get_edge_index(edge_type=None, layout="coo")
    stored = sum(fanout.stats(a)["partition"]["num_edges"] for a in local.admin_addresses)
    assert row.numel() == col.numel() == stored
    assert int(row.max()) < 2708 and int(col.max()) < 2708
    with pytest.raises(fanout.InvalidArgument, match="num_neighbors"):
        fanout.pyg.NeighborSampler(cluster, [0])
    with pytest.raises(fanout.InvalidArgument, match="temporal_strategy"):
        fanout.pyg.NeighborSampler(cluster, [3], temporal_strategy="soon")
    from torch_geometric.sampler import NegativeSampling
    from torch_geometric.loader import LinkLoader
    sampler = fanout.pyg.NeighborSampler(cluster, [3])
    weighted = NegativeSampling("binary", 1, dst_weight=torch.ones(2708))
    loader = LinkLoader((fs, gs), link_sampler=sampler, edge_label_index=(None, torch.tensor([[0], [1]])),
                        batch_size=1, neg_sampling=weighted)
    with pytest.raises(fanout.NotSupported, match="weighted negative sampling"):
        next(iter(loader))
    with pytest.raises(IndexError, match="seed edge source 5000"):
        next(iter(LinkLoader((fs, gs), link_sampler=sampler, edge_label_index=(None, torch.tensor([[5000], [1]])),
                             batch_size=1)))


def _example(name):
    import sys
    sys.path.insert(0, os.path.join(os.environ.get("FANOUT_SOURCE_DIR", "."), "examples", "python"))
    return __import__(name)


@pytest.fixture(scope="module")
def graphsage_through_fanout(cluster):
    """Test accuracies of examples/python/pyg_graphsage.py over seeds 0-4 (20 epochs), PyG's NodeLoader
    sampling through Fanout."""
    ex = _example("pyg_graphsage")
    return ex.compare(cluster, epochs=20, seeds=5, num_workers=0, baseline=False, log=lambda m: None)["fanout"]


def test_the_pyg_graphsage_example_learns_cora_over_five_seeds(cluster, fanout, graphsage_through_fanout):
    # PyG's own SAGEConv, fed by PyG's NodeLoader through Fanout: the bar.
    assert sum(graphsage_through_fanout) / 5 >= 0.77, graphsage_through_fanout
    # DataLoader workers train too (each connects on its own).
    ex = _example("pyg_graphsage")
    assert ex.run(cluster, epochs=5, seed=0, num_workers=1, log=lambda m: None)["test_acc"] >= 0.6


def test_pygs_in_process_loader_learns_the_same_within_two_points(cluster, fanout, graphsage_through_fanout):
    """PyG's own NeighborLoader over an in-memory Data of the same graph, with the same split, model and
    seeds, in the same run: the remote backend does not change what is learned."""
    ex = _example("pyg_graphsage")
    why = ex.pyg_baseline_available()
    if why is not None:
        pytest.skip(why + " (./run builds torch-sparse into build/pydeps unless FANOUT_PYG_BASELINE=0)")
    make = ex.in_memory_loaders(cluster)
    theirs = [ex.run(cluster, 20, s, 0, lambda m: None, make)["test_acc"] for s in range(5)]
    ours = graphsage_through_fanout
    assert abs(sum(ours) / 5 - sum(theirs) / 5) <= 0.02, (ours, theirs)


def test_the_pyg_movielens_example_beats_the_degree_product_baseline(fanout, tmp_path):
    """examples/python/pyg_movielens.py: PyG's LinkLoader and to_hetero(GraphSAGE) on the training
    ratings served by 2 servers (held-out ratings never pass messages), strict binary negatives; the
    test AUC beats the user x movie training-degree product on the same pairs, computed in the same run."""
    ex = _example("pyg_movielens")
    ratings = ex.read_ratings(os.path.join(ex.MOVIELENS, "ratings.csv"))
    train, _, test = ex.split(ratings, 0)
    ex.write_train_folder(train, str(tmp_path / "train"))
    data = fanout.partition(str(tmp_path / "train"), tmp_path / "ml", format="movielens", parts=2, undirected=True)
    with fanout.LocalCluster(data) as lc:
        r = ex.run(lc.cluster(), train, test, epochs=3, seed=0, log=lambda m: None)
    assert r["test_auc"] > r["degree_product_auc"] and r["test_auc"] >= 0.88, r


def test_auc_of_the_pyg_movielens_example_is_the_definition():
    ex = _example("pyg_movielens")
    scores = torch.tensor([0.1, 0.4, 0.35, 0.8, 0.4])
    labels = torch.tensor([0.0, 0.0, 1.0, 1.0, 1.0])
    # Pairs (pos, neg): (0.35 > 0.1), (0.35 < 0.4), (0.8 > both), (0.4 > 0.1), (0.4 = 0.4): 4.5 of 6.
    assert abs(ex.auc(scores, labels) - 4.5 / 6) < 1e-6


def test_read_ahead_gives_the_same_batches_in_order_and_falls_back_when_shuffled(cluster, fanout):
    """NeighborSampler(input_nodes=...): in-order batches come from the read-ahead loader (x and y with
    them, no second request) and equal the on-demand ones; shuffled input falls back to on-demand."""
    import fanout.pyg
    from torch_geometric.loader import NodeLoader
    seeds = cluster.split_nodes("train")
    fs, gs = fanout.pyg.FeatureStore(cluster), fanout.pyg.GraphStore(cluster)
    plain = fanout.pyg.NeighborSampler(cluster, [5, 3], seed=11, batch_size=32)
    ahead = fanout.pyg.NeighborSampler(cluster, [5, 3], seed=11, batch_size=32, input_nodes=seeds)
    want = list(NodeLoader((fs, gs), node_sampler=plain, input_nodes=seeds, batch_size=32))
    for epoch in range(2):  # a second pass restarts the read-ahead
        got = list(NodeLoader((fs, gs), node_sampler=ahead, input_nodes=seeds, batch_size=32))
        assert len(got) == len(want) == (seeds.numel() + 31) // 32
        for a, b in zip(got, want):
            _same(a, b, ("n_id", "edge_index", "e_id", "x", "y", "input_id"))
        assert ahead._ahead is not None and ahead._ahead["epoch"] == 0
    assert not fanout.pyg._STASH  # every read-ahead batch's rows were taken by the feature store
    ahead.set_epoch(3)
    plain.set_epoch(3)
    torch.manual_seed(0)
    shuffled = list(NodeLoader((fs, gs), node_sampler=ahead, input_nodes=seeds, batch_size=32, shuffle=True))
    torch.manual_seed(0)
    shuffled_plain = list(NodeLoader((fs, gs), node_sampler=plain, input_nodes=seeds, batch_size=32, shuffle=True))
    for a, b in zip(shuffled, shuffled_plain):
        _same(a, b, ("n_id", "edge_index", "x", "y", "input_id"))
    # A sampler that has read ahead still pickles (spawned DataLoader workers): without its loader.
    import pickle
    again = pickle.loads(pickle.dumps(ahead))
    assert again._ahead is None and torch.equal(again._input_nodes, seeds)
