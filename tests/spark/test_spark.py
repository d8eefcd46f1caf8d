"""The Spark partitioning job (python -m fanout.spark) in Spark's local mode: the stores it writes serve what the
native tool's serve for the same tables, schema and method (every node's ids, features, labels and split, every
row's neighbors and edge ids in stored order, and a sampled batch); bad tables are refused naming the file and row
with nothing published; a killed run publishes nothing and the next run clears what it left."""
import gzip
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (./run installs it into build/pydeps)")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
torch = pytest.importorskip("torch")
import fanout  # noqa: E402
import fanout.spark  # noqa: E402


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    s = (SparkSession.builder.master("local[2]").appName("fanout-spark-test")
         .config("spark.ui.enabled", "false").config("spark.driver.memory", "1g")
         .config("spark.sql.shuffle.partitions", "4")
         .config("spark.local.dir", str(tmp_path_factory.mktemp("spark-local"))).getOrCreate())
    s.sparkContext.setLogLevel("ERROR")
    try:
        yield s
    finally:
        s.stop()


def write_graph(folder, string_ids, n=700, e=5000, seed=3, compact=False, timed=False, weighted=False):
    """A homogeneous graph as tables: nodes in two Parquet files and a CSV (ids shuffled, not compact; features as a
    list column and as CSV text; labels; masks), edges in Parquet, CSV and gzip'd CSV (duplicates, self-loops and
    one dangling endpoint among them; with times, with weights)."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    raw = rng.permutation(n) + 1000 if compact else rng.permutation(50 * n)[:n] * 7 + 11
    ids = ["u%d" % x for x in raw] if string_ids else [int(x) for x in raw]
    feats = rng.standard_normal((n, 6)).astype(np.float32)
    labels = rng.integers(-1, 5, n)
    which = rng.integers(0, 4, n)
    cut = [0, 250, 500, n]
    for k in range(2):
        a, z = cut[k], cut[k + 1]
        pq.write_table(pa.table({"id": ids[a:z], "f": [list(map(float, r)) for r in feats[a:z]],
                                 "y": labels[a:z], "train": which[a:z] == 1, "val": which[a:z] == 2,
                                 "test": which[a:z] == 3}), os.path.join(folder, "nodes-%d.parquet" % k),
                       row_group_size=64)
    with open(os.path.join(folder, "nodes-2.csv"), "w") as f:
        f.write("id,f,y,train,val,test\n")
        for i in range(cut[2], n):
            f.write("%s,%s,%s,%d,%d,%d\n" % (ids[i], " ".join(repr(float(x)) for x in feats[i]),
                                             "" if labels[i] < 0 else labels[i], which[i] == 1, which[i] == 2,
                                             which[i] == 3))
    src = rng.integers(0, n, e)
    dst = (src + rng.integers(0, 40, e)) % n  # some self-loops
    src[17], dst[17] = src[3], dst[3]  # a duplicate
    s_ids, d_ids = [ids[i] for i in src], [ids[i] for i in dst]
    s_ids[100] = "nobody" if string_ids else -5  # dangling
    ecut = [0, 2 * e // 5, 7 * e // 10, e]
    t = rng.integers(1000, 1100, e)  # many ties: the stored order is by time, then input order
    w = (rng.random(e) * 4).astype(np.float32)
    w[::11] = 0  # zero weights: never drawn
    cols = {"s": s_ids[:ecut[1]], "d": d_ids[:ecut[1]]}
    if timed:
        cols["t"] = t[:ecut[1]]
    if weighted:
        cols["w"] = w[:ecut[1]]
    pq.write_table(pa.table(cols), os.path.join(folder, "edges-0.parquet"), row_group_size=500)

    def csv_rows(a, z):
        return "".join("%s,%s%s%s\n" % (s_ids[i], d_ids[i], ",%d" % t[i] if timed else "",
                                        ",%.9g" % w[i] if weighted else "") for i in range(a, z))
    head = "s,d" + (",t" if timed else "") + (",w" if weighted else "") + "\n"
    with open(os.path.join(folder, "edges-1.csv"), "w") as f:
        f.write(head + csv_rows(ecut[1], ecut[2]))
    with gzip.open(os.path.join(folder, "edges-2.csv.gz"), "wt") as f:
        f.write(head + csv_rows(ecut[2], e))
    schema = {"name": "spark-test",
              "nodes": [{"files": ["nodes-*.parquet", "nodes-2.csv"], "id": "id",
                         "id_type": "string" if string_ids else "int64", "features": "f", "label": "y",
                         "train_mask": "train", "val_mask": "val", "test_mask": "test"}],
              "edges": [{"files": ["edges-0.parquet", "edges-1.csv", "edges-2.csv.gz"], "source": "s",
                         "destination": "d"}],
              "dangling_edges": "drop"}
    if timed:
        schema["edges"][0]["time"] = "t"
    if weighted:
        schema["edges"][0]["weight"] = "w"
    with open(os.path.join(folder, "graph.json"), "w") as f:
        json.dump(schema, f)
    return os.path.join(folder, "graph.json")


def native(schema, out, parts, method, **kw):
    return fanout.partition_tables(schema, out, parts=parts, method=method, **kw)


def served(out):
    """What a store serves: per node its ids, features, label and split; every row's neighbors and edge ids in
    stored order; one sampled batch."""
    with fanout.LocalCluster(out) as lc:
        c = lc.cluster()
        n = c.num_nodes
        ids = torch.arange(n)
        got = [c.original_ids(ids), c.features(ids), c.labels(ids)]
        if json.load(open(os.path.join(out, "meta.json"))).get("has_original_names"):
            got.append(c.original_names(ids))
        got += [c.split_nodes(s) for s in ("train", "val", "test")]
        b = next(iter(fanout.NodeLoader(c, ids, num_neighbors=[-1], batch_size=n, shuffle=False, labels=False,
                                        features=False)))
        got += [b.n_id, b.edge_index, b.e_id]
        b = next(iter(fanout.NodeLoader(c, ids[::7], num_neighbors=[4, 3], batch_size=64, shuffle=True, seed=9)))
        got += [b.n_id, b.edge_index, b.e_id, b.x, b.y]
        if json.load(open(os.path.join(out, "meta.json"))).get("has_edge_times"):
            seeds = ids[::5]
            b = next(iter(fanout.NodeLoader(c, seeds, num_neighbors=[3, 2], batch_size=64, shuffle=False, seed=4,
                                            input_time=torch.full((len(seeds),), 1050), temporal_strategy="last")))
            got += [b.n_id, b.edge_index, b.e_id]
        if json.load(open(os.path.join(out, "meta.json"))).get("has_edge_weights"):
            b = next(iter(fanout.NodeLoader(c, ids[::3], num_neighbors=[3, 2], batch_size=128, shuffle=False, seed=6,
                                            weighted=True, features=False, labels=False)))
            got += [b.n_id, b.edge_index, b.e_id]
        return got


def assert_same_store(a, b):
    ma, mb = (json.load(open(os.path.join(x, "meta.json"))) for x in (a, b))
    for m in (ma, mb):
        m.pop("dataset_id")
        m.pop("source_path")
    assert ma == mb
    for x, y in zip(served(a), served(b)):
        if isinstance(x, torch.Tensor):
            assert torch.equal(x, y)
        else:
            assert x == y


CASES = [
    # string ids, method, options
    (True, "hash", dict(undirected=True, drop_self_loops=True)),
    (False, "range", dict(direction="out", undirected=True)),
    (True, "random", dict(seed=5, feature_dtype="bfloat16")),
    (False, "file", dict(normalize_features=True, weighted=True)),
    (True, "hash", dict(undirected=True, timed=True, weighted=True)),
]


@pytest.mark.parametrize("string_ids,method,options", CASES, ids=["hash", "range", "random", "file", "timed"])
def test_the_spark_job_writes_the_native_tools_store(spark, tmp_path, string_ids, method, options):
    timed, weighted = options.pop("timed", False), options.pop("weighted", False)
    schema = write_graph(str(tmp_path / "t"), string_ids, compact=method == "range", timed=timed, weighted=weighted)  # compact: an id
    # map indexed by id
    parts = 3
    if method == "file":
        assignment = tmp_path / "parts.txt"
        assignment.write_text("# gpmetis-style: one part per node\n" +
                              "".join("%d\n" % ((i * 7) % parts) for i in range(700)))
        options = dict(options, assignment=str(assignment))
    nat = native(schema, tmp_path / "native", parts, method, **options)
    meta = fanout.spark.partition_on_spark(spark, schema, tmp_path / "spark", parts=parts, method=method, **options)
    assert meta["num_nodes"] == 700 and meta["num_parts"] == parts
    assert_same_store(nat, str(tmp_path / "spark"))
    assert not [p for p in os.listdir(tmp_path) if ".tmp-" in p]


@pytest.mark.parametrize("string_ids", [True, False], ids=["string_ids", "int_ids"])
def test_small_chunks_and_slices_give_the_same_store(spark, tmp_path, string_ids):
    """Several chunks per partition (the writer's chunk boundaries) and Parquet files read in several slices of
    row groups (tasks), dropped edges among them (edge ids by rank), edge weights; with string ids, edge times and
    Spark's join instead of the id map file."""
    schema = write_graph(str(tmp_path / "t"), string_ids, n=700, e=3000, timed=string_ids, weighted=True)
    nat = native(schema, tmp_path / "native", 2, "hash", chunk_nodes=64, undirected=True, drop_self_loops=True)
    report = {}
    fanout.spark.partition_on_spark(spark, schema, tmp_path / "spark", parts=2, method="hash", chunk_nodes=64,
                                    undirected=True, drop_self_loops=True, slice_rows=(100, 600), report=report,
                                    map_nodes=0 if string_ids else 1 << 25)  # Spark's join / the id map file
    assert_same_store(nat, str(tmp_path / "spark"))
    # The driver collected counts, not nodes or edges.
    assert report["driver_collected_rows"] < 100


def write_hetero_graph(folder, n_users=300, n_items=200, n_tags=40, seed=5):
    """A heterogeneous temporal graph as tables: users (string ids, 2 scalar features, labels; Parquet and CSV),
    items (int64 ids, not compact, a list feature column of 3, masks; Parquet), tags (int64 ids, no features; CSV);
    rated (user -> item, weighted, with a reverse type), tagged (item -> tag) and similar (item -> item, self-loops
    among them), each with times, a dangling endpoint among them."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    users = ["u-%d" % x for x in rng.permutation(10 * n_users)[:n_users]]
    items = [int(x) * 3 + 7 for x in rng.permutation(50 * n_items)[:n_items]]
    age, score = rng.integers(10, 90, n_users), rng.random(n_users).astype(np.float32)
    cls = rng.integers(-1, 4, n_users)
    half = n_users // 2
    pq.write_table(pa.table({"uid": users[:half], "age": age[:half], "score": score[:half], "cls": cls[:half]}),
                   os.path.join(folder, "users-0.parquet"), row_group_size=64)
    with open(os.path.join(folder, "users-1.csv"), "w") as f:
        f.write("uid,age,score,cls\n" + "".join("%s,%d,%r,%s\n" % (users[i], age[i], float(score[i]),
                                                                     "" if cls[i] < 0 else cls[i])
                                                for i in range(half, n_users)))
    emb = rng.standard_normal((n_items, 3)).astype(np.float32)
    which = rng.integers(0, 3, n_items)
    pq.write_table(pa.table({"iid": items, "emb": [list(map(float, r)) for r in emb], "train": which == 1,
                             "test": which == 2}), os.path.join(folder, "items.parquet"), row_group_size=50)
    with open(os.path.join(folder, "tags.csv"), "w") as f:
        f.write("tid\n" + "".join("%d\n" % t for t in range(n_tags)))

    def edges(name, src, dst, extra=None, parquet=True):
        cols = {"s": src, "d": dst, "t": rng.integers(0, 60, len(src))}  # ties among the times
        if extra is not None:
            cols["w"] = extra
        if parquet:
            pq.write_table(pa.table(cols), os.path.join(folder, name + ".parquet"), row_group_size=300)
        else:
            with open(os.path.join(folder, name + ".csv"), "w") as f:
                f.write(",".join(cols) + "\n")
                for i in range(len(src)):
                    f.write(",".join(str(cols[c][i]) if c != "w" else "%.9g" % cols[c][i] for c in cols) + "\n")
    ru = [users[i] for i in rng.integers(0, n_users, 2000)]
    ri = [items[i] for i in rng.integers(0, n_items, 2000)]
    ru[77] = "nobody"
    w = (rng.random(2000) * 3).astype(np.float32)
    w[::9] = 0
    edges("rated", ru, ri, w)
    edges("tagged", [items[i] for i in rng.integers(0, n_items, 800)], list(rng.integers(0, n_tags, 800)),
          parquet=False)
    a = rng.integers(0, n_items, 900)
    b = np.where(np.arange(900) % 10 == 0, a, rng.integers(0, n_items, 900))  # self-loops
    edges("similar", [items[i] for i in a], [items[i] for i in b])
    schema = {"name": "shop-spark", "dangling_edges": "drop",
              "nodes": [{"type": "user", "files": ["users-0.parquet", "users-1.csv"], "id": "uid",
                         "id_type": "string", "features": ["age", "score"], "label": "cls"},
                        {"type": "item", "files": "items.parquet", "id": "iid", "features": "emb",
                         "train_mask": "train", "test_mask": "test"},
                        {"type": "tag", "files": "tags.csv", "id": "tid"}],
              "edges": [{"type": "rated", "files": "rated.parquet", "source": "s", "source_type": "user",
                         "destination": "d", "destination_type": "item", "time": "t", "weight": "w",
                         "reverse": "rated_by"},
                        {"type": "tagged", "files": "tagged.csv", "source": "s", "source_type": "item",
                         "destination": "d", "destination_type": "tag", "time": "t"},
                        {"type": "similar", "files": "similar.parquet", "source": "s", "source_type": "item",
                         "destination": "d", "destination_type": "item", "time": "t"}]}
    with open(os.path.join(folder, "graph.json"), "w") as f:
        json.dump(schema, f)
    return os.path.join(folder, "graph.json")


def served_hetero(out):
    """What a heterogeneous store serves: every node's ids, features, label and split; for each edge type, every
    row's neighbors and edge ids in stored order; a weighted batch and a temporal batch."""
    with fanout.LocalCluster(out) as lc:
        c = lc.cluster()
        ids = torch.arange(c.num_nodes)
        got = [c.original_ids(ids), c.features(ids), c.labels(ids), c.node_types, c.edge_types,
               c.node_type_feature_dims]
        got += [c.split_nodes(s) for s in ("train", "val", "test")]
        meta = json.load(open(os.path.join(out, "meta.json")))
        incoming = meta["direction"] == "in"
        stored = 0
        for key in c.edge_types:
            row_type = key[2] if incoming else key[0]
            rows = c.nodes_of_type(row_type)
            fan = {k: ([-1] if k == key else [0]) for k in c.edge_types}
            b = next(iter(fanout.NodeLoader(c, (row_type, rows), fan, batch_size=len(rows), shuffle=False,
                                            labels=False, features=False)))
            got += [b[key].edge_index, b[key].e_id]
            stored += b[key].edge_index.size(1)
        assert stored == meta["num_edges"] > 0  # every stored edge compared
        items = c.nodes_of_type("item")
        fan = {k: [3, 2] for k in c.edge_types}
        b = next(iter(fanout.NodeLoader(c, ("item", items), fan, batch_size=64, shuffle=False, seed=3,
                                        input_time=torch.full((len(items),), 30), temporal_strategy="last")))
        got += [b[k].edge_index for k in c.edge_types] + [b[t].n_id for t in c.node_types]
        return got


@pytest.mark.parametrize("method,options", [
    ("hash", dict(undirected=True, drop_self_loops=True)),
    ("range", dict(direction="out", chunk_nodes=64)),
    ("random", dict(seed=4, undirected=True, map_nodes=0, slice_rows=(100, 400))),  # Spark's join
], ids=["hash-undirected", "range-out", "random-join"])
def test_heterogeneous_tables_give_the_native_tools_store(spark, tmp_path, method, options):
    schema = write_hetero_graph(str(tmp_path / "h"))
    spark_only = {x: options.pop(x) for x in ("map_nodes", "slice_rows") if x in options}
    nat = native(schema, tmp_path / "native", 3, method, **options)
    meta = fanout.spark.partition_on_spark(spark, schema, tmp_path / "spark", parts=3, method=method, **options,
                                           **spark_only)
    assert meta["num_nodes"] == 540 and len(meta["node_types"]) == 3
    ma, mb = (json.load(open(os.path.join(x, "meta.json"))) for x in (nat, str(tmp_path / "spark")))
    for m in (ma, mb):
        m.pop("dataset_id")
        m.pop("source_path")
    assert ma == mb
    for x, y in zip(served_hetero(nat), served_hetero(str(tmp_path / "spark"))):
        if isinstance(x, torch.Tensor):
            assert torch.equal(x, y)
        else:
            assert x == y


def _refused(spark, tmp_path, schema, message, **kw):
    with pytest.raises(fanout.Error) as e:
        fanout.spark.partition_on_spark(spark, schema, tmp_path / "out", parts=2, **kw)
    assert message in str(e.value), str(e.value)
    assert not os.path.exists(tmp_path / "out")
    assert not [p for p in os.listdir(tmp_path) if ".tmp-" in p]
    return str(e.value)


def test_bad_tables_are_named_and_nothing_is_published(spark, tmp_path):
    schema = write_graph(str(tmp_path / "t"), True)
    # A bad value in a CSV node row: the native reader's message, naming the file, line and column.
    lines = open(tmp_path / "t" / "nodes-2.csv").read().splitlines()
    cells = lines[5].split(",")
    cells[2] = "seven"  # the label column
    lines[5] = ",".join(cells)
    open(tmp_path / "t" / "nodes-2.csv", "w").write("\n".join(lines) + "\n")
    msg = _refused(spark, tmp_path, schema, "nodes-2.csv")
    assert "seven" in msg or "line 6" in msg

    # A duplicate node id.
    schema = write_graph(str(tmp_path / "u"), True)
    t = pq.read_table(tmp_path / "u" / "nodes-1.parquet").to_pydict()
    t["id"][4] = pq.read_table(tmp_path / "u" / "nodes-0.parquet").column("id")[2].as_py()
    pq.write_table(pa.table(t), tmp_path / "u" / "nodes-1.parquet")
    msg = _refused(spark, tmp_path, schema, "is listed twice")
    assert "nodes-0.parquet row 3" in msg and "nodes-1.parquet row 5" in msg

    # A dangling endpoint where the schema refuses them.
    schema = write_graph(str(tmp_path / "v"), True)
    s = json.load(open(schema))
    s["dangling_edges"] = "error"
    json.dump(s, open(schema, "w"))
    _refused(spark, tmp_path, schema, "edges-0.parquet row 101, the source: 'nobody' names no node")

    # What the job does not take yet, and a bad method.
    with pytest.raises(fanout.NotSupported, match="normalize_features"):
        fanout.spark.partition_on_spark(spark, schema, tmp_path / "out", parts=2, feature_dtype="int8",
                                        normalize_features=True)
    with pytest.raises(fanout.InvalidArgument, match="gpmetis"):
        fanout.spark.partition_on_spark(spark, schema, tmp_path / "out", parts=2, method="metis")
    assert not os.path.exists(tmp_path / "out")


def test_a_killed_run_publishes_nothing_and_the_next_run_clears_it(tmp_path):
    schema = write_graph(str(tmp_path / "t"), True, n=700, e=5000)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "fanout.spark", "--master", "local[2]", "--schema", schema, "--output", str(out),
           "--parts", "2", "--local-dir", str(tmp_path / "spark-local"), "--executor-memory", "1g"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        for line in p.stdout:  # killed once the nodes are read: the staging folder exists then
            if "nodes in" in line:
                break
        else:
            pytest.fail("the job ended before reading its nodes (rc %s)" % p.wait())
        assert [x for x in os.listdir(tmp_path) if x.startswith("out.tmp-")]
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    time.sleep(0.5)
    assert not out.exists()
    r = subprocess.run(cmd + ["--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert (out / "meta.json").exists()
    assert not [x for x in os.listdir(tmp_path) if ".tmp-" in x]
