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


def test_a_hetero_batch_is_valid_pyg_heterodata(fanout, tmp_path):
    from torch_geometric.nn import SAGEConv, to_hetero

    path = os.path.join(os.environ.get("FANOUT_SOURCE_DIR", "."), "datasets", "data", "movielens",
                        "ml-latest-small")
    data = fanout.partition(path, tmp_path / "ml2", format="movielens", parts=2, undirected=True)
    with fanout.LocalCluster(data) as lc:
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

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = SAGEConv((-1, -1), 8)

            def forward(self, x, edge_index):
                return self.conv(x, edge_index)

        edge_types = [et for et in h.edge_types if h[et].edge_index.size(1) > 0]
        sub = h.edge_type_subgraph(edge_types)
        model = to_hetero(Net(), sub.metadata(), aggr="sum")
        out = model(sub.x_dict, sub.edge_index_dict)
        assert out["movie"].shape == (sub["movie"].num_nodes, 8)


def _pyg_loader(cluster, fanout, num_workers, seeds, batch_size=64):
    from torch_geometric.loader import NodeLoader
    fs, gs = fanout.pyg.FeatureStore(cluster), fanout.pyg.GraphStore(cluster)
    sampler = fanout.pyg.NeighborSampler(cluster, num_neighbors=[5, 3], seed=11)
    return NodeLoader(data=(fs, gs), node_sampler=sampler, input_nodes=seeds, batch_size=batch_size,
                      shuffle=False, num_workers=num_workers)


def test_pygs_own_node_loader_samples_through_fanout_with_and_without_workers(cluster, fanout):
    import fanout.pyg  # noqa: F401
    seeds = cluster.split_nodes("train")
    batches = list(_pyg_loader(cluster, fanout, 0, seeds))
    assert len(batches) == (seeds.numel() + 63) // 64
    for i, d in enumerate(batches):
        assert d.validate(raise_on_error=True)
        assert torch.equal(d.n_id[:d.batch_size], seeds[i * 64:(i + 1) * 64])
        assert torch.equal(d.input_id, torch.arange(i * 64, i * 64 + d.batch_size))
        # The sampler's sets are Fanout's: the same call through the cluster gives them.
        n_id, row, col, e_id, _, _ = cluster._c.sample(d.n_id[:d.batch_size].tolist(), [5, 3],
                                                        11 * 1000003 + i * 64, False, True)
        assert torch.equal(d.n_id, fanout._tensor(n_id))
        assert torch.equal(d.edge_index, torch.stack([fanout._tensor(row), fanout._tensor(col)]))
        assert torch.equal(d.e_id, fanout._tensor(e_id))
    # Features and labels are the cluster's rows of the sampled nodes.
    d = batches[0]
    assert torch.equal(d.x, fanout._tensor(cluster._c.features(d.n_id.tolist())))
    assert torch.equal(d.y, fanout._tensor(cluster._c.labels(d.n_id.tolist())))
    # DataLoader worker processes connect on their own and give the same batches.
    with_workers = list(_pyg_loader(cluster, fanout, 2, seeds))
    assert len(with_workers) == len(batches)
    for a, b in zip(batches, with_workers):
        assert torch.equal(a.n_id, b.n_id) and torch.equal(a.edge_index, b.edge_index)
        assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y)


def test_the_stores_are_read_only_and_the_topology_copy_warns(local, cluster, fanout):
    import fanout.pyg  # noqa: F401
    fs, gs = fanout.pyg.FeatureStore(cluster), fanout.pyg.GraphStore(cluster)
    assert fs.get_tensor_size(group_name=None, attr_name="x") == (2708, 1433)
    x = fs.get_tensor(group_name=None, attr_name="x", index=torch.tensor([5, 1400]))
    assert x.shape == (2, 1433)
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
    with pytest.raises(fanout.NotSupported, match="LinkLoader"):
        fanout.pyg.NeighborSampler(cluster, [5]).sample_from_edges(None)
    with pytest.raises(fanout.InvalidArgument, match="num_neighbors"):
        fanout.pyg.NeighborSampler(cluster, [0])


def test_the_pyg_graphsage_example_learns_cora(cluster, fanout):
    import sys
    sys.path.insert(0, os.path.join(os.environ.get("FANOUT_SOURCE_DIR", "."), "examples", "python"))
    import pyg_graphsage
    r = pyg_graphsage.run(cluster, epochs=20, seed=0, num_workers=1, log=lambda m: None)
    # PyG's own SAGEConv, fed by PyG's NodeLoader through Fanout: the C++ example's bar.
    assert r["test_acc"] >= 0.74, r
