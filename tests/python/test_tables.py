"""Your own graph in: fanout.partition_tables over CSV tables with a schema, and fanout.partition_pyg over a PyG
Data / HeteroData: the store serves the graph the object holds (every edge, feature row, label and split, by original
id), the worked example partitions, and bad tables are refused naming the file, line and column with nothing
written."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def _served_edges(cluster, seeds, key=None, seed_type=None):
    """Every stored edge into `seeds` (rows hold in-neighbors: direction "in"), as (original src, original dst)
    pairs; `key` an edge type on a heterogeneous cluster."""
    kw = dict(batch_size=len(seeds), shuffle=False, labels=False, features=False)
    if key is None:
        b = next(iter(cluster_loader(cluster, seeds, [-1], **kw)))
        ei, n_id = b.edge_index, b.n_id
        src, dst = n_id[ei[0]], n_id[ei[1]]
    else:
        b = next(iter(cluster_loader(cluster, (seed_type, seeds), {key: [-1]}, **kw)))
        st = b[key]
        src, dst = b[key[0]].n_id[st.edge_index[0]], b[key[2]].n_id[st.edge_index[1]]
    o = cluster.original_ids
    return sorted(zip(o(src).tolist(), o(dst).tolist()))


def cluster_loader(cluster, seeds, num_neighbors, **kw):
    import fanout
    return fanout.NodeLoader(cluster, seeds, num_neighbors=num_neighbors, **kw)


@pytest.mark.parametrize("table_format", ["csv", "parquet"])
def test_a_pyg_data_object_is_served_as_it_holds(fanout, tmp_path, table_format):
    pyg = pytest.importorskip("torch_geometric")
    if table_format == "parquet":
        pytest.importorskip("pyarrow.parquet")
    g = torch.Generator().manual_seed(3)
    n, e = 300, 2000
    data = pyg.data.Data(x=torch.randn(n, 5, generator=g), y=torch.randint(0, 4, (n,), generator=g),
                         edge_index=torch.randint(0, n, (2, e), generator=g),
                         time=torch.randint(0, 10**9, (e,), generator=g))
    data.train_mask = torch.rand(n, generator=g) < 0.6
    data.test_mask = ~data.train_mask & (torch.rand(n, generator=g) < 0.5)
    data.y[:7] = -1  # unknown labels
    out = fanout.partition_pyg(data, tmp_path / "ds", parts=2, method="random", table_format=table_format)
    with fanout.LocalCluster(out) as lc:
        c = lc.cluster()
        assert c.num_nodes == n and c.feature_dim == 5 and not c.is_hetero()
        ids = torch.arange(n)
        orig = c.original_ids(ids)
        assert sorted(orig.tolist()) == list(range(n))
        # Every edge, by original id (multi-edges kept).
        assert _served_edges(c, ids) == sorted(zip(data.edge_index[0].tolist(), data.edge_index[1].tolist()))
        # Feature rows, labels and splits, bit for bit.
        assert torch.equal(c.features(ids), data.x[orig])
        assert torch.equal(c.labels(ids), data.y[orig])
        for name, mask in (("train", data.train_mask), ("test", data.test_mask)):
            assert sorted(c.original_ids(c.split_nodes(name)).tolist()) == mask.nonzero().view(-1).tolist()
        assert c.split_nodes("val").numel() == 0
        meta = json.load(open(os.path.join(out, "meta.json")))
        assert meta["has_edge_times"] and meta["source_format"] == "tables"
        with pytest.raises(fanout.NotFound, match="keeps no original names"):
            c.original_names(ids[:2])


def test_a_pyg_heterodata_object_is_served_as_it_holds(fanout, tmp_path):
    pyg = pytest.importorskip("torch_geometric")
    g = torch.Generator().manual_seed(5)
    h = pyg.data.HeteroData()
    h["user"].x = torch.randn(50, 3, generator=g)
    h["user"].y = torch.randint(0, 2, (50,), generator=g)
    h["item"].x = torch.randn(40, 6, generator=g)
    h["tag"].num_nodes = 10
    buys = torch.stack([torch.randint(0, 50, (400,), generator=g), torch.randint(0, 40, (400,), generator=g)])
    tags = torch.stack([torch.randint(0, 40, (100,), generator=g), torch.randint(0, 10, (100,), generator=g)])
    h["user", "buys", "item"].edge_index = buys
    h["user", "buys", "item"].time = torch.randint(0, 1000, (400,), generator=g)
    h["item", "has", "tag"].edge_index = tags
    h["item", "has", "tag"].time = torch.randint(0, 1000, (100,), generator=g)
    out = fanout.partition_pyg(h, tmp_path / "hds", parts=2)
    with fanout.LocalCluster(out) as lc:
        c = lc.cluster()
        assert c.node_types == ["user", "item", "tag"]
        assert set(c.edge_types) == {("user", "buys", "item"), ("item", "has", "tag")}
        assert c.node_type_feature_dims == [3, 6, 0]
        items, tags_ = c.nodes_of_type("item"), c.nodes_of_type("tag")
        assert _served_edges(c, items, ("user", "buys", "item"), "item") == sorted(zip(*buys.tolist()))
        assert _served_edges(c, tags_, ("item", "has", "tag"), "tag") == sorted(zip(*tags.tolist()))
        users = c.nodes_of_type("user")
        o = c.original_ids(users)
        assert torch.equal(c.features(users)[:, :3], h["user"].x[o])
        assert torch.equal(c.labels(users), h["user"].y[o])
        assert torch.equal(c.features(items), h["item"].x[c.original_ids(items)])


@pytest.mark.parametrize("table_format", ["csv", "parquet"])
def test_pyg_edge_weights_are_stored_and_weighted_sampling_draws_by_them(fanout, tmp_path, table_format):
    """edge_weight rides to the store: a weighted hop never draws a zero-weight edge and draws heavy edges more
    often than light ones; a store without weights refuses weighted sampling by name."""
    pyg = pytest.importorskip("torch_geometric")
    if table_format == "parquet":
        pytest.importorskip("pyarrow.parquet")
    g = torch.Generator().manual_seed(8)
    n, e = 200, 6000
    ei = torch.randint(0, n, (2, e), generator=g)
    w = torch.rand(e, generator=g) * 3
    w[::4] = 0  # never drawn
    w[1::4] = 50  # heavy
    data = pyg.data.Data(x=torch.randn(n, 2, generator=g), edge_index=ei, edge_weight=w)
    out = fanout.partition_pyg(data, tmp_path / "w", parts=2, method="hash", table_format=table_format)
    assert json.load(open(os.path.join(out, "meta.json")))["has_edge_weights"]
    weight_of = {}
    for i in range(e):
        weight_of.setdefault((int(ei[0, i]), int(ei[1, i])), []).append(float(w[i]))
    with fanout.LocalCluster(out) as lc:
        c = lc.cluster()
        ids = torch.arange(n)
        b = next(iter(fanout.NodeLoader(c, ids, num_neighbors=[3], batch_size=n, shuffle=False, weighted=True,
                                        features=False, labels=False, seed=2)))
        o = c.original_ids(b.n_id)
        pairs = list(zip(o[b.edge_index[0]].tolist(), o[b.edge_index[1]].tolist()))
        assert len(pairs) > 2 * n
        drawn = [max(weight_of[p]) for p in pairs]
        assert min(drawn) > 0  # no zero-weight edge drawn
        heavy = sum(x == 50 for x in drawn) / len(drawn)
        assert heavy > 0.5  # a quarter of the edges, most of the weight
        # The same batch on every path (UCX, Thrift, the same-host export), and weighted walks too.
        walks = None
        for path in (dict(data_plane="ucx", local_sampling="off"), dict(data_plane="tcp", local_sampling="off"), {}):
            cp = lc.cluster(**path)
            b2 = next(iter(fanout.NodeLoader(cp, ids, num_neighbors=[3], batch_size=n, shuffle=False, weighted=True,
                                             features=False, labels=False, seed=2)))
            assert torch.equal(b.n_id, b2.n_id) and torch.equal(b.edge_index, b2.edge_index), path
            wk = cp.random_walks(ids[:50], 5, seed=4, weighted=True).walks
            assert walks is None or torch.equal(wk, walks), path
            walks = wk
        # Each step a -> z over an edge z -> a of positive weight (rows hold in-neighbors).
        o = c.original_ids(walks.clamp(min=0).reshape(-1)).view(walks.shape).tolist()
        steps = 0
        for r, row in enumerate(walks.tolist()):
            for j in range(len(row) - 1):
                if row[j + 1] >= 0:
                    assert max(weight_of.get((o[r][j + 1], o[r][j]), [0])) > 0
                    steps += 1
        assert steps > 100
    del data.edge_weight
    out = fanout.partition_pyg(data, tmp_path / "nw", parts=2, method="hash", table_format=table_format)
    with fanout.LocalCluster(out) as lc:
        c = lc.cluster()
        with pytest.raises(fanout.InvalidArgument, match="serves no edge weights"):
            next(iter(fanout.NodeLoader(c, torch.arange(4), num_neighbors=[3], batch_size=4, weighted=True)))
    bad = pyg.data.Data(num_nodes=3, edge_index=torch.tensor([[0, 1], [1, 2]]), edge_weight=torch.tensor([1.0, -2]))
    with pytest.raises(fanout.InvalidArgument, match=r"edge_weight\[1\] is -2.0: weights must be finite and >= 0"):
        fanout.partition_pyg(bad, tmp_path / "bad", parts=1)
    assert not (tmp_path / "bad").exists()


@pytest.mark.parametrize("table_format", ["csv", "parquet"])
def test_the_worked_example_partitions_and_serves(fanout, tmp_path, table_format):
    if table_format == "parquet":
        pytest.importorskip("pyarrow.parquet")
    subprocess.run([sys.executable, os.path.join(ROOT, "datasets", "make_shop_tables.py"), str(tmp_path / "shop")]
                   + (["--parquet"] if table_format == "parquet" else []), check=True, stdout=subprocess.DEVNULL)
    out = fanout.partition_tables(tmp_path / "shop" / "graph.json", tmp_path / "shop2", parts=2)
    with fanout.LocalCluster(out) as lc:
        c = lc.cluster()
        assert c.node_types == ["user", "item"]
        assert ("item", "bought_by", "user") in c.edge_types
        assert c.node_types and c.nodes_of_type("user").numel() == 300
        items = c.nodes_of_type("item")
        assert sorted(c.original_ids(items).tolist()) == [1000 + 3 * i for i in range(120)]
        # 2,500 purchases; the 25 views naming users no table has were dropped.
        bought = _served_edges(c, items, ("user", "bought", "item"), "item")
        viewed = _served_edges(c, items, ("user", "viewed", "item"), "item")
        assert len(bought) == 2500 and len(viewed) == 6000 - 25
        # String ids are served as names (items' ids are integers: no name).
        users = c.nodes_of_type("user")
        names = c.original_names(users)
        assert sorted(names) == sorted("u%04d" % (i * 7 + 3) for i in range(300))
        assert c.original_names(items[:3]) == ["", "", ""]
        assert [names[i] for i in range(3)] == ["u%04d" % (int(o) * 7 + 3) for o in c.original_ids(users[:3])]


def test_parquet_and_csv_tables_of_one_graph_serve_the_same_graph(fanout, tmp_path):
    """The worked example written as CSV and as Parquet: every node's original id and name, feature row, label and
    split, every edge of every type, and a temporal batch are equal."""
    pytest.importorskip("pyarrow.parquet")
    stores = {}
    for fmt in ("csv", "parquet"):
        subprocess.run([sys.executable, os.path.join(ROOT, "datasets", "make_shop_tables.py"), str(tmp_path / fmt)]
                       + (["--parquet"] if fmt == "parquet" else []), check=True, stdout=subprocess.DEVNULL)
        stores[fmt] = fanout.partition_tables(tmp_path / fmt / "graph.json", tmp_path / (fmt + "2"), parts=2)
    seen = {}
    for fmt, out in stores.items():
        with fanout.LocalCluster(out) as lc:
            c = lc.cluster()
            ids = torch.arange(c.num_nodes)
            users, items = c.nodes_of_type("user"), c.nodes_of_type("item")
            edges = [_served_edges(c, items if et[2] == "item" else users, et, et[2]) for et in c.edge_types]
            loader = fanout.NodeLoader(c, ("item", items), batch_size=32, shuffle=False, seed=4,
                                       num_neighbors={et: [3, 2] for et in c.edge_types},
                                       input_time=torch.full((items.numel(),), 1_620_000_000))
            b = next(iter(loader))
            seen[fmt] = (c.original_ids(ids), c.original_names(ids), c.features(ids), c.labels(ids),
                         [c.split_nodes(s) for s in ("train", "val", "test")], edges, c.edge_types,
                         b["item"].n_id, b["user"].n_id, b["user", "bought", "item"].edge_index)
    a, b = seen["csv"], seen["parquet"]
    assert len(a[5][0]) == 2500
    for x, y in zip(a, b):
        if isinstance(x, torch.Tensor):
            assert torch.equal(x, y)
        elif isinstance(x, list) and x and isinstance(x[0], torch.Tensor):
            assert all(torch.equal(p, q) for p, q in zip(x, y))
        else:
            assert x == y


def test_a_heterogeneous_temporal_table_graph_samples_as_the_same_graph_built_from_a_pyg_object(fanout, tmp_path):
    """The worked example's tables, and a HeteroData built from the same rows (users and items in file order,
    the purchases and views with their times, the reverse types the schema names, the dangling views dropped):
    partitioned by range (dense ids in the same order), the two stores give the same features, labels and splits,
    and the same temporal batches through the loaders."""
    pyg = pytest.importorskip("torch_geometric")
    import csv
    import gzip

    shop = tmp_path / "shop"
    subprocess.run([sys.executable, os.path.join(ROOT, "datasets", "make_shop_tables.py"), str(shop)], check=True,
                   stdout=subprocess.DEVNULL)
    users = list(csv.DictReader(open(shop / "users.csv")))
    items = list(csv.DictReader(gzip.open(shop / "items.csv.gz", "rt")))
    uid = {u["user_id"]: i for i, u in enumerate(users)}
    iid = {int(it["item_id"]): i for i, it in enumerate(items)}
    h = pyg.data.HeteroData()
    h["user"].x = torch.tensor([[float(u["age"]), float(u["activity"])] for u in users])
    h["user"].y = torch.tensor([int(u["segment"]) for u in users])
    for s in ("train", "val", "test"):
        h["user"][s + "_mask"] = torch.tensor([u["split"] == s for u in users])
    h["item"].x = torch.tensor([[float(v) for v in it["embedding"].split()] for it in items])
    for name, rel in (("purchases", "bought"), ("views", "viewed")):
        rows = [r for r in csv.DictReader(open(shop / (name + ".csv"))) if r["user"] in uid]
        ei = torch.tensor([[uid[r["user"]] for r in rows], [iid[int(r["item"])] for r in rows]])
        t = torch.tensor([int(r["ts"]) for r in rows])
        h["user", rel, "item"].edge_index, h["user", rel, "item"].time = ei, t
        h["item", rel + "_by", "user"].edge_index, h["item", rel + "_by", "user"].time = ei.flip(0), t
    stores = [fanout.partition_tables(shop / "graph.json", tmp_path / "tables2", parts=2, method="range"),
              fanout.partition_pyg(h, tmp_path / "pyg2", parts=2, method="range")]
    seen = []
    for out in stores:
        with fanout.LocalCluster(out) as lc:
            c = lc.cluster()
            ids = torch.arange(c.num_nodes)
            items_ = c.nodes_of_type("item")
            fan = {et: [3, 2] for et in c.edge_types}
            batches = list(fanout.NodeLoader(c, ("item", items_), fan, batch_size=40, shuffle=True, seed=6,
                                             input_time=torch.full((items_.numel(),), 1_620_000_000)))
            seen.append((c.node_types, c.edge_types, c.features(ids), c.labels(ids),
                         [c.split_nodes(s) for s in ("train", "val", "test")],
                         [(b["item"].n_id, b["user"].n_id, [b[et].edge_index for et in c.edge_types],
                           [b[et].e_id for et in c.edge_types]) for b in batches]))
    a, b = seen
    assert a[0] == b[0] and a[1] == b[1] and len(a[5]) == 3
    assert torch.equal(a[2], b[2]) and torch.equal(a[3], b[3])
    assert all(torch.equal(x, y) for x, y in zip(a[4], b[4]))
    for (ai, au, ae, aid), (bi, bu, be, bid) in zip(a[5], b[5]):
        assert torch.equal(ai, bi) and torch.equal(au, bu)
        assert all(torch.equal(x, y) for x, y in zip(ae, be)) and all(torch.equal(x, y) for x, y in zip(aid, bid))
    assert sum(x.size(1) for x in a[5][0][2]) > 0


def _parquet(path, **cols):
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.table(cols), str(path))


def test_bad_parquet_tables_are_named_and_nothing_is_written(fanout, tmp_path):
    pa = pytest.importorskip("pyarrow")
    d = tmp_path / "p"
    d.mkdir()
    _parquet(d / "nodes.parquet", id=pa.array([1, 2, 3]), x=pa.array([[1.0, 2.0], [3.0, 4.0], [5.0]]),
             s=pa.array([{"a": 1}, {"a": 2}, {"a": 3}]))
    _parquet(d / "edges.parquet", a=pa.array([1, 2, 9]), b=pa.array([2, 3, 1], pa.uint64()))
    (d / "junk.parquet").write_bytes(b"PAR1 this is not a parquet file PAR1")

    def refused(nodes, edges, message, env=None):
        (d / "graph.json").write_text(json.dumps({"nodes": [dict({"files": "nodes.parquet", "id": "id"}, **nodes)],
                                                  "edges": [dict({"files": "edges.parquet", "source": "a",
                                                                  "destination": "b"}, **edges)]}))
        r = subprocess.run([fanout.find_binary("fanout-partition"), "--format", "tables", "--schema",
                            str(d / "graph.json"), "--parts", "1", "--output", str(tmp_path / "out"), "--quiet"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env={**os.environ, "FANOUT_PYTHON": sys.executable, **(env or {})})
        assert r.returncode != 0
        assert re.search(message, r.stdout), r.stdout
        assert not (tmp_path / "out").exists()

    refused({}, {}, r"edges.parquet: row 3 \(row group 0\): column 'a': '9' names no node of type 'node'")
    refused({"features": "x"}, {}, r"nodes.parquet: row 3 \(row group 0\): column 'x': a feature row of 1 values")
    refused({"features": "y"}, {}, r"nodes.parquet: no column 'y' \(the node type 'node''s features\); "
                                   r"its columns: id, x, s")
    refused({"id": "s"}, {}, r"nodes.parquet: column 's' \(the node type 'node''s id\) is of type struct")
    refused({"files": "junk.parquet"}, {}, r"junk.parquet: not a Parquet file pyarrow can read")
    refused({}, {}, r"reading Parquet needs pyarrow in '/usr/bin/python3'",
            env={"FANOUT_PYTHON": "/usr/bin/python3", "PYTHONPATH": "", "PYTHONNOUSERSITE": "1"})
    refused({}, {}, r"'/nonexistent/python' cannot be run", env={"FANOUT_PYTHON": "/nonexistent/python"})


def _tables(tmp_path, nodes_csv, edges_csv, **schema_extra):
    d = tmp_path / "t"
    if d.exists():
        shutil.rmtree(d)
    d.mkdir()
    (d / "nodes.csv").write_text(nodes_csv)
    (d / "edges.csv").write_text(edges_csv)
    schema = {"nodes": [{"files": "nodes.csv", "id": "id", "id_type": "string"}],
              "edges": [{"files": "edges.csv", "source": "a", "destination": "b"}]}
    schema.update(schema_extra)
    (d / "graph.json").write_text(json.dumps(schema))
    return d / "graph.json"


@pytest.mark.parametrize("nodes,edges,extra,message", [
    ("id\nx\ny\n", "a,b\nx,y\nx,zz\n", {}, r"edges.csv:3: column 'b': 'zz' names no node of type 'node'"),
    ("id\nx\nx\n", "a,b\nx,x\n", {}, r"nodes.csv:3: column 'id': id 'x' is listed twice"),
    ("id\nx\n", "a,c\nx,x\n", {}, r"edges.csv: no column 'b'"),
    ("id\nx\n", "a,b\nx,x,x\n", {}, r"edges.csv:2: expected 2 fields"),
    ("id\nx\n", "a,b\nx,x\n", {"dangling_edges": "maybe"}, r"\"dangling_edges\" must be"),
])
def test_bad_tables_are_named_and_nothing_is_written(fanout, tmp_path, nodes, edges, extra, message):
    schema = _tables(tmp_path, nodes, edges, **extra)
    with pytest.raises(fanout.InvalidArgument, match=message):
        fanout.partition_tables(schema, tmp_path / "out", parts=1)
    assert not (tmp_path / "out").exists()
    assert not [p for p in os.listdir(tmp_path) if p.startswith("out")]


def test_dangling_edges_are_dropped_and_counted_when_the_schema_says_so(fanout, tmp_path):
    schema = _tables(tmp_path, "id\nx\ny\n", "a,b\nx,y\nx,zz\nq,y\n", dangling_edges="drop")
    r = subprocess.run([fanout.find_binary("fanout-partition"), "--format", "tables", "--schema", str(schema),
                        "--parts", "1", "--method", "range", "--output", str(tmp_path / "out")],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 0, r.stdout
    assert "dropped 2 edges whose endpoint no node table has" in r.stdout
    assert json.load(open(tmp_path / "out" / "meta.json"))["num_edges"] == 1


def test_a_given_assignment_places_each_node_and_bad_ones_are_named(fanout, tmp_path):
    """--method file --assignment: one part per line, node by node in the input's order (gpmetis's output)."""
    schema = _tables(tmp_path, "id\nx\ny\nz\nw\n", "a,b\nx,y\ny,z\nz,w\n")
    parts = tmp_path / "parts.txt"
    parts.write_text("# from gpmetis\n1\n0\n\n1\n0\n")
    out = fanout.partition_tables(schema, tmp_path / "out", parts=2, method="file", assignment=str(parts))
    with fanout.LocalCluster(out) as lc:
        c = lc.cluster()
        # Partition 0 owns the first new ids: y and w (input order inside a partition), then x and z.
        assert c.original_names(torch.arange(4)) == ["y", "w", "x", "z"]
    for text, message in [("1\n0\n1\n", "gives 3 parts, for a graph of 4 nodes"),
                          ("1\n0\n1\n0\n1\n", "line 5: more lines than the graph's 4 nodes"),
                          ("1\n0\n2\n0\n", "line 3: part 2 is outside [0, 2)"),
                          ("1\n0\nzero\n0\n", "line 3: 'zero' is not a part number")]:
        parts.write_text(text)
        with pytest.raises(fanout.InvalidArgument, match=re.escape(message)):
            fanout.partition_tables(schema, tmp_path / "bad", parts=2, method="file", assignment=str(parts))
        assert not (tmp_path / "bad").exists()
    with pytest.raises(fanout.InvalidArgument, match="--method file needs --assignment"):
        fanout.partition_tables(schema, tmp_path / "bad", parts=2, method="file")
