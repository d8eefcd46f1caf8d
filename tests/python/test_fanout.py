"""The fanout Python package: cluster, loader batches (PyG names), tensors
without copies, errors as exceptions, LocalCluster's lifecycle."""
import gc
import json
import os
import signal
import subprocess
import threading
import time

import pytest
import torch


def test_cluster_describes_the_graph(cluster):
    assert cluster.num_nodes == 2708
    assert cluster.feature_dim == 1433
    assert cluster.num_classes == 7
    assert cluster.num_partitions == 2
    assert len(cluster.addresses) == 2
    assert cluster.data_plane in ("auto", "ucx", "tcp")
    train = cluster.split_nodes("train")
    assert train.dtype == torch.long and train.numel() == 140  # Planetoid's public split
    assert cluster.split_nodes("val").numel() == 500
    assert cluster.split_nodes("test").numel() == 1000


def test_batches_have_pyg_shape_and_are_reproducible(cluster, fanout):
    kw = dict(num_neighbors=[5, 3], batch_size=32, shuffle=True, seed=7)
    a = fanout.NodeLoader(cluster, "train", **kw)
    b = fanout.NodeLoader(cluster, cluster.split_nodes("train"), **kw)
    assert len(a) == len(b) == 5
    seen = []
    for x, y in zip(a, b):
        n = x.n_id.numel()
        assert x.x.shape == (n, 1433) and x.x.dtype == torch.float32
        assert x.y.shape == (n,) and x.y.dtype == torch.long
        assert x.edge_index.shape[0] == 2 and x.edge_index.dtype == torch.long
        assert x.e_id.numel() == x.edge_index.shape[1]
        assert int(x.edge_index.max()) < n
        assert sum(x.num_sampled_edges) == x.edge_index.shape[1]
        assert sum(x.num_sampled_nodes) == n
        assert x.num_sampled_nodes[0] == x.batch_size
        # input_id: the seeds' positions in input_nodes
        assert torch.equal(a.input_nodes[x.input_id], x.n_id[:x.batch_size])
        for f in ("x", "y", "edge_index", "n_id", "e_id"):
            assert torch.equal(getattr(x, f), getattr(y, f)), f
        seen.append(x.n_id[:x.batch_size])
    # One epoch covers the training seeds once.
    assert sorted(torch.cat(seen).tolist()) == sorted(cluster.split_nodes("train").tolist())
    # The next iteration is the next epoch: reshuffled; set_epoch goes back.
    first = [bt.n_id[:bt.batch_size] for bt in a]
    a.set_epoch(0)
    again = [bt.n_id[:bt.batch_size] for bt in a]
    assert not all(torch.equal(p, q) for p, q in zip(first, seen))
    assert all(torch.equal(p, q) for p, q in zip(again, seen))


def test_subgraph_loader_keeps_the_nodes_and_adds_every_edge_among_them(cluster, fanout):
    kw = dict(num_neighbors=[5, 3], batch_size=64, shuffle=False, seed=3)
    nodes = list(fanout.NodeLoader(cluster, "val", **kw))
    subs = list(fanout.SubgraphLoader(cluster, "val", **kw))
    assert len(nodes) == len(subs) > 1
    for a, b in zip(nodes, subs):
        assert torch.equal(a.n_id, b.n_id) and torch.equal(a.x, b.x)
        assert b.num_sampled_nodes == a.num_sampled_nodes
        assert b.num_sampled_edges == [b.edge_index.shape[1]]
        assert b.e_id.numel() == b.edge_index.shape[1]
        # Every sampled edge (as a global edge id) is among the induced ones, and there are more.
        assert set(a.e_id.tolist()) <= set(b.e_id.tolist())
        assert b.edge_index.shape[1] > a.edge_index.shape[1]
        assert int(b.edge_index.max()) < b.n_id.numel()
    with pytest.raises(fanout.InvalidArgument, match="SubgraphLoader needs a fanout.Cluster"):
        fanout.SubgraphLoader(object(), "val")


def _stored_edges(cluster, fanout):
    """Every stored edge (src, dst) as global ids, read through the servers (fanout -1)."""
    edges = set()
    for b in fanout.NodeLoader(cluster, torch.arange(cluster.num_nodes), num_neighbors=[-1], batch_size=1000,
                               shuffle=False, features=False, labels=False):
        g = b.n_id[b.edge_index]
        edges.update(zip(g[0].tolist(), g[1].tolist()))
    return edges


def test_link_loader_batches_follow_pyg_and_negatives_are_never_edges(cluster, fanout):
    edges = _stored_edges(cluster, fanout)
    assert len(edges) == 10556  # Cora's stored (directed) edges
    seed_edges = torch.tensor(sorted(edges)[::25]).t().contiguous()
    p_all = seed_edges.shape[1]
    loader = fanout.LinkLoader(cluster, seed_edges, num_neighbors=[5, 3], batch_size=64, seed=3,
                               neg_sampling=fanout.NegativeSampling("binary", amount=2))
    batches = list(loader)
    assert len(batches) == len(loader) == (p_all + 63) // 64
    seen, negatives = [], 0
    for b in batches:
        p = b.input_id.numel()
        seen += b.input_id.tolist()
        seeds = b.n_id[:b.batch_size]
        assert torch.equal(seeds, torch.unique(seeds))  # distinct endpoints, ascending
        assert list(b.edge_label_index.shape) == [2, 3 * p]
        assert b.edge_label.dtype == torch.float32 and b.edge_label.sum().item() == p
        g = b.n_id[b.edge_label_index]
        assert torch.equal(g[:, :p], seed_edges[:, b.input_id])
        for s, d in zip(g[0, p:].tolist(), g[1, p:].tolist()):
            assert (s, d) not in edges
            negatives += 1
        assert b.x.shape == (b.n_id.numel(), 1433) and b.edge_index.shape[0] == 2
    assert sorted(seen) == list(range(p_all)) and negatives == 2 * p_all
    again = list(fanout.LinkLoader(cluster, seed_edges, num_neighbors=[5, 3], batch_size=64, seed=3,
                                   neg_sampling={"mode": "binary", "amount": 2}))
    for a, b in zip(batches, again):  # a pure function of the seed
        assert torch.equal(a.edge_label_index, b.edge_label_index) and torch.equal(a.n_id, b.n_id)

    trip = next(iter(fanout.LinkLoader(cluster, seed_edges, num_neighbors=[2], batch_size=32, shuffle=False,
                                       neg_sampling=fanout.NegativeSampling("triplet", amount=4))))
    assert trip.edge_label_index is None and trip.edge_label is None
    assert list(trip.dst_neg_index.shape) == [32, 4]
    src = trip.n_id[trip.src_index]
    assert torch.equal(src, seed_edges[0, :32]) and torch.equal(trip.n_id[trip.dst_pos_index], seed_edges[1, :32])
    for i in range(32):
        for d in trip.n_id[trip.dst_neg_index[i]].tolist():
            assert (int(src[i]), d) not in edges

    # Labels: classes 0..2 become 1..3 beside negatives labelled 0 (PyG's rule).
    labels = torch.arange(p_all) % 3
    lb = next(iter(fanout.LinkLoader(cluster, seed_edges, labels, num_neighbors=[2], batch_size=16, shuffle=False,
                                     neg_sampling="binary")))
    assert lb.edge_label.dtype == torch.int64
    assert torch.equal(lb.edge_label, torch.cat([labels[:16] + 1, torch.zeros(16, dtype=torch.long)]))
    plain = next(iter(fanout.LinkLoader(cluster, seed_edges, labels, num_neighbors=[2], batch_size=16,
                                        shuffle=False)))
    assert torch.equal(plain.edge_label, labels[:16]) and plain.edge_label_index.shape[1] == 16

    class PygStyle:  # duck-typed torch_geometric.sampler.NegativeSampling
        class mode:
            value = "triplet"
        amount = 2
    assert fanout.NegativeSampling.cast(PygStyle()).mode == "triplet"
    with pytest.raises(fanout.InvalidArgument, match=r"shape \[2, P\]"):
        fanout.LinkLoader(cluster, torch.zeros(3, 4, dtype=torch.long))
    with pytest.raises(fanout.InvalidArgument, match="2708"):
        fanout.LinkLoader(cluster, torch.tensor([[0], [2708]]))
    with pytest.raises(fanout.InvalidArgument, match="triplet"):
        fanout.LinkLoader(cluster, seed_edges, labels, neg_sampling="triplet")
    with pytest.raises(fanout.InvalidArgument, match="'pairs'"):
        fanout.LinkLoader(cluster, seed_edges, neg_sampling="pairs")
    with pytest.raises(fanout.InvalidArgument, match="integer amount"):
        fanout.NegativeSampling("triplet", amount=1.5)
    with pytest.raises(fanout.InvalidArgument, match="edge_label must hold integer"):
        fanout.LinkLoader(cluster, seed_edges, labels.float())


def test_every_data_path_gives_the_same_batches(cluster, fanout):
    kw = dict(num_neighbors=[4, 4], batch_size=50, shuffle=False)
    tcp_loader = fanout.NodeLoader(cluster, "val", data_plane="tcp", **kw)
    tcp = list(tcp_loader)
    auto_loader = fanout.NodeLoader(cluster, "val", **kw)
    auto = list(auto_loader)
    assert len(tcp) == len(auto) == 10
    for p, q in zip(tcp, auto):
        assert torch.equal(p.x, q.x) and torch.equal(p.y, q.y) and torch.equal(p.edge_index, q.edge_index)
    # data_plane= on a loader reuses the cluster (no second one with its own connections and health
    # thread): its sessions go over Thrift only, while the cluster's own read the co-located exports.
    assert tcp_loader.cluster is cluster
    t, a = tcp_loader.stats(), auto_loader.stats()
    assert t["thrift_bytes"] > 0 and t["local_bytes"] == 0 and t["ucx_bytes"] == 0, t
    assert a["local_bytes"] > 0 and a["thrift_bytes"] == 0, a


def test_co_located_servers_are_read_here_with_the_same_batches(local, cluster, fanout):
    # The LocalCluster's servers share this host: "auto" maps their exports.
    assert cluster.local_partitions == [True, True]
    assert local.cluster(data_plane="tcp").local_partitions == [False, False]
    kw = dict(num_neighbors=[4, 4], batch_size=50, shuffle=False)
    here = fanout.NodeLoader(cluster, "val", **kw)
    batches = list(here)
    rpc_sampled = list(fanout.NodeLoader(local.cluster(local_sampling="off"), "val", **kw))
    thrift = list(fanout.NodeLoader(local.cluster(data_plane="tcp"), "val", data_plane="tcp", **kw))
    assert len(batches) == len(rpc_sampled) == len(thrift) == 10
    for p, q, r in zip(batches, rpc_sampled, thrift):
        for a, b in ((p, q), (p, r)):
            assert torch.equal(a.x, b.x) and torch.equal(a.y, b.y) and torch.equal(a.edge_index, b.edge_index)
            assert torch.equal(a.n_id, b.n_id)
    s = here.stats()
    assert s["local_bytes"] > 0 and s["local_edges"] > 0 and s["local_rows"] > 0
    assert s["thrift_bytes"] == 0 and s["ucx_bytes"] == 0
    with pytest.raises(fanout.InvalidArgument, match="local_sampling"):
        local.cluster(local_sampling="sometimes")


def test_tensors_come_without_a_copy_and_are_freed_with_the_batch(cluster, fanout):
    from torch.utils.dlpack import from_dlpack
    loader = fanout.NodeLoader(cluster, "test", num_neighbors=[3], batch_size=100, shuffle=False, num_workers=1,
                               prefetch=1)
    loader._loader.set_epoch(0)
    d = loader._loader.next()
    ptr = fanout._core.capsule_data_ptr(d["x"])
    x = from_dlpack(d["x"])
    assert x.data_ptr() == ptr  # the C++ tensor's memory itself
    del x, d
    gc.collect()
    base = fanout._core.live_tensors()
    b = next(iter(loader))
    assert fanout._core.live_tensors() == base + 6  # x, y, edge_index, n_id, e_id, input_id
    del b
    gc.collect()
    assert fanout._core.live_tensors() == base


def test_bad_input_raises_clear_exceptions(cluster, fanout, tmp_path):
    with pytest.raises(fanout.InvalidArgument, match="batch_size must be >= 1, not -4"):
        fanout.NodeLoader(cluster, "train", batch_size=-4)
    with pytest.raises(fanout.InvalidArgument, match="batch_size must be an integer, not 'x'"):
        fanout.NodeLoader(cluster, "train", batch_size="x")
    with pytest.raises(fanout.InvalidArgument, match="unknown split 'holdout'"):
        fanout.NodeLoader(cluster, "holdout")
    with pytest.raises(fanout.InvalidArgument, match="2708"):
        fanout.NodeLoader(cluster, [0, 1, 2708])  # outside the graph
    with pytest.raises(fanout.InvalidArgument, match="fanout -5"):
        fanout.NodeLoader(cluster, "train", num_neighbors=[10, -5])
    with pytest.raises(fanout.InvalidArgument, match="integer ids"):
        fanout.NodeLoader(cluster, torch.tensor([0.5, 1.0]))
    with pytest.raises(fanout.InvalidArgument, match="data_plane"):
        fanout.NodeLoader(cluster, "train", data_plane="rdma")
    bad = tmp_path / "cluster.json"
    bad.write_text("{ not json")
    with pytest.raises(fanout.Error, match=str(bad)):
        fanout.Cluster.from_file(bad)
    with pytest.raises(fanout.Error, match="nowhere.json"):
        fanout.Cluster.from_file(tmp_path / "nowhere.json")
    with pytest.raises(fanout.Unavailable, match="127.0.0.1:1"):
        fanout.Cluster(partitions=["127.0.0.1:1"], connect_timeout_ms=500)
    with pytest.raises(fanout.InvalidArgument):
        fanout.Cluster(partitions="127.0.0.1:1")
    # Every fanout error is a fanout.Error and the matching builtin kind.
    assert issubclass(fanout.Unavailable, ConnectionError) and issubclass(fanout.InvalidArgument, ValueError)


def test_errors_from_the_core_arrive_as_their_fanout_class_constructors_and_iteration_included(cluster, fanout):
    # Options are checked by name in C++: an unknown one or a wrong type is named, never a silent swap.
    with pytest.raises(fanout.InvalidArgument, match="unknown loader option 'shufle'"):
        fanout._core.NodeLoader(cluster._c, [0, 1], {"num_neighbors": [2], "shufle": True}, None)
    with pytest.raises(fanout.InvalidArgument, match="loader option replace must be True or False"):
        fanout._core.NodeLoader(cluster._c, [0, 1], {"num_neighbors": [2], "replace": 1}, None)
    # A C++ constructor's std::invalid_argument (the loader's own checks) is InvalidArgument.
    with pytest.raises(fanout.InvalidArgument, match="rank 3 is outside"):
        fanout.NodeLoader(cluster, "train", rank=3, world_size=2)
    # Ids as numpy buffers: int64 only, one-dimensional.
    import numpy as np
    with pytest.raises(fanout.InvalidArgument, match="must hold int64 ids"):
        cluster._c.labels(np.array([1, 2], dtype=np.int32))
    with pytest.raises(fanout.InvalidArgument, match="one-dimensional"):
        cluster._c.labels(np.zeros((2, 2), dtype=np.int64))
    assert cluster._c.labels(np.array([0, 1], dtype=np.int64)) is not None
    # Sampling errors of a single batch (fanout.pyg's path) are classes too.
    with pytest.raises(fanout.InvalidArgument, match="no seeds"):
        cluster._c.sample_batch({"num_neighbors": [2]}, np.array([], dtype=np.int64), None, None, 1)
    # A closed loader says so.
    loader = fanout.NodeLoader(cluster, "train", num_neighbors=[2], batch_size=8)
    loader.close()
    loader.close()
    with pytest.raises(fanout.InvalidArgument, match="closed"):
        next(iter(loader))


def test_a_seed_given_twice_keeps_both_positions_in_input_id(cluster, fanout):
    seeds = torch.tensor([5, 9, 5, 100, 9, 5])
    for shuffle in (False, True):
        loader = fanout.NodeLoader(cluster, seeds, num_neighbors=[2], batch_size=4, shuffle=shuffle, seed=3)
        positions = []
        for b in loader:
            assert torch.equal(seeds[b.input_id], b.n_id[:b.batch_size])
            positions += b.input_id.tolist()
        assert sorted(positions) == list(range(6))  # every position once, duplicates included
    eli = torch.tensor([[0, 0, 633], [633, 633, 0]])
    link = fanout.LinkLoader(cluster, eli, num_neighbors=[2], batch_size=3, shuffle=False)
    assert next(iter(link)).input_id.tolist() == [0, 1, 2]


def test_cluster_file_and_stats(local, fanout, tmp_path):
    f = tmp_path / "cluster.json"
    f.write_text(json.dumps({"partitions": [{"partition": i, "replicas": [a]} for i, a in enumerate(local.addresses)],
                             "data_plane": "tcp"}))
    c = fanout.Cluster.from_file(f)
    assert c.num_nodes == 2708 and c.data_plane == "tcp"
    s = fanout.stats(local.admin_addresses[0])
    assert "totals" in s and "by_path" in s["totals"]
    # The server made itself not dumpable (PR_SET_DUMPABLE 0, read back with PR_GET_DUMPABLE): no process
    # of its uid can open /proc/<pid>/fd/N for the export's memfd or the feature file.
    assert s["security"]["dumpable"] is False, s["security"]
    with pytest.raises(fanout.Unavailable):
        fanout.stats("127.0.0.1:1", timeout_s=2)


def test_to_pyg_says_when_pyg_is_missing(cluster, fanout):
    b = next(iter(fanout.NodeLoader(cluster, "train", num_neighbors=[2], batch_size=10)))
    try:
        import torch_geometric  # noqa: F401
    except ImportError:
        with pytest.raises(fanout.NotSupported, match="torch_geometric"):
            b.to_pyg()
    else:
        data = b.to_pyg()
        assert torch.equal(data.edge_index, b.edge_index)


def test_a_dead_server_is_an_exception_naming_it_and_the_gil_is_free_meanwhile(cora2, fanout):
    # Over RPC: a co-located client reading the servers' exports never waits on them.
    with fanout.LocalCluster(cora2, server_args=["--local-socket", "off"]) as lc:
        c = lc.cluster(call_timeout_ms=1500, connect_timeout_ms=1500)
        loader = fanout.NodeLoader(c, torch.arange(2708), num_neighbors=[5], batch_size=16, num_workers=1,
                                   prefetch=1)
        it = iter(loader)
        next(it)
        victim = lc._procs[1]
        victim.send_signal(signal.SIGSTOP)
        errors = []

        def drain():
            try:
                for _ in it:
                    pass
            except fanout.Error as e:
                errors.append(e)

        t = threading.Thread(target=drain)
        t.start()
        # The loader waits on the stopped server with the GIL released: this
        # thread keeps running Python meanwhile.
        ticks = 0
        while t.is_alive() and ticks < 50:
            time.sleep(0.01)
            ticks += 1
        assert ticks >= 50 or errors  # ran while the other thread waited
        t.join(timeout=30)
        victim.send_signal(signal.SIGCONT)
        assert not t.is_alive()
        assert len(errors) == 1
        assert isinstance(errors[0], (fanout.DeadlineExceeded, fanout.Unavailable))
        assert lc.addresses[1] in str(errors[0])


def test_closing_a_loader_whose_workers_wait_on_a_stopped_server_frees_the_gil(cora2, fanout):
    """close() stops workers that sit in calls to a SIGSTOPped server: it returns once their call
    deadline has passed, and another Python thread keeps running meanwhile (the GIL is released)."""
    with fanout.LocalCluster(cora2, server_args=["--local-socket", "off"]) as lc:
        c = lc.cluster(call_timeout_ms=1500, connect_timeout_ms=1500, health_check_ms=0)
        loader = fanout.NodeLoader(c, torch.arange(2708), num_neighbors=[5], batch_size=16, num_workers=2,
                                   prefetch=4)
        next(iter(loader))
        victim = lc._procs[1]
        victim.send_signal(signal.SIGSTOP)
        try:
            loader._loader.set_epoch(1)  # the workers start on epoch 1 and block on the stopped server
            time.sleep(0.3)
            ticks = []
            done = threading.Event()

            def tick():
                while not done.is_set():
                    ticks.append(time.monotonic())
                    time.sleep(0.005)

            t = threading.Thread(target=tick)
            t.start()
            start = time.monotonic()
            loader.close()
            took = time.monotonic() - start
            done.set()
            t.join()
            # Bounded by the call deadline (1.5 s) and not a hang; the other thread ran throughout.
            assert took < 15, took
            assert len([x for x in ticks if start <= x <= start + took]) >= min(20, took / 0.05), (took, len(ticks))
            with pytest.raises(fanout.InvalidArgument, match="closed"):
                loader.stats()
        finally:
            victim.send_signal(signal.SIGCONT)


def test_local_cluster_stops_its_servers_on_exit_and_on_errors(cora2, fanout):
    procs = []
    with pytest.raises(KeyError):
        with fanout.LocalCluster(cora2) as lc:
            procs = list(lc._procs)
            assert all(p.poll() is None for p in procs)
            raise KeyError("boom")
    assert procs and all(p.poll() is not None for p in procs)
    with pytest.raises(fanout.NotFound, match="meta.json"):
        fanout.LocalCluster(os.path.dirname(cora2))


def test_a_server_flooding_its_output_does_not_block_under_local_cluster(cora2, fanout, tmp_path, monkeypatch):
    """LocalCluster sends each server's output to a log file it names, never to a pipe nobody reads: a
    server that writes far more than a pipe holds (64 KiB) still starts and serves."""
    real = fanout._bins.find_binary("fanout-server")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    wrapper = bindir / "fanout-server"
    wrapper.write_text("#!/bin/sh\nhead -c 4000000 /dev/zero | tr '\\000' x >&2\nexec %s \"$@\"\n" % real)
    wrapper.chmod(0o755)
    monkeypatch.setenv("FANOUT_BIN_DIR", str(bindir))
    with fanout.LocalCluster(cora2, startup_timeout_s=60, log_dir=str(tmp_path / "logs")) as lc:
        assert lc.cluster().num_nodes == 2708
        assert all(os.path.getsize(p) >= 4000000 for p in lc.log_paths)
        record = fanout.local_cluster.read_ready_record(str(tmp_path / "logs" / "server-p1.ready"))
        assert record["partition"] == 1 and record["num_parts"] == 2
        assert "%s:%d" % (record["host"], record["rpc_port"]) == lc.addresses[1]
    # A server that cannot start names its log and its last words.
    monkeypatch.setenv("FANOUT_BIN_DIR", os.path.dirname(real))
    with pytest.raises(fanout.Unavailable, match="(?s)exited with status .*unknown-flag.*log: "):
        fanout.LocalCluster(cora2, server_args=["--unknown-flag"]).start()


def test_a_ready_record_that_is_junk_cut_short_or_incomplete_is_refused_by_name(fanout, tmp_path):
    read = fanout.local_cluster.read_ready_record
    assert read(str(tmp_path / "absent")) is None  # not written yet
    good = {"pid": 1, "dataset": "d", "partition": 0, "num_parts": 1, "host": "127.0.0.1", "rpc_port": 9,
            "admin_port": 0, "data_port": 0, "local_socket": ""}
    text = json.dumps({"fanout_server_ready": good})
    f = tmp_path / "ready"
    f.write_text(text)
    assert read(str(f)) == good
    incomplete = dict(good)
    del incomplete["rpc_port"]
    for junk in (b"", text[: len(text) // 2].encode(), b"\xff\xfe\x00junk", b"[1, 2]", b'{"other": {}}',
                 json.dumps({"fanout_server_ready": incomplete}).encode(),
                 json.dumps({"fanout_server_ready": dict(good, rpc_port="9")}).encode(), b"{" * 100000):
        f.write_bytes(junk)
        with pytest.raises(fanout.Unavailable, match="is not a fanout-server ready record"):
            read(str(f))


def test_features_into_refuses_buffers_of_the_wrong_type_or_shape(cluster, fanout):
    import numpy as np
    ids = np.array([0, 5], dtype=np.int64)
    out = np.zeros((2, cluster.feature_dim), dtype=np.float32)
    cluster._c.features_into(ids, out)
    assert np.array_equal(out, fanout._tensor(cluster._c.features(ids)).numpy())
    for bad in (np.zeros((2, cluster.feature_dim), dtype=np.float64), np.zeros((3, cluster.feature_dim), np.float32),
                np.zeros((2, cluster.feature_dim + 1), np.float32), np.zeros((cluster.feature_dim, 2), np.float32).T):
        with pytest.raises(fanout.InvalidArgument, match="C-contiguous float32"):
            cluster._c.features_into(ids, bad)
    with pytest.raises(fanout.InvalidArgument, match="2708"):
        cluster._c.features_into(np.array([2708], dtype=np.int64), np.zeros((1, cluster.feature_dim), np.float32))


def test_partition_reports_fanout_partition_errors(fanout, tmp_path):
    with pytest.raises(fanout.InvalidArgument, match="fanout-partition failed"):
        fanout.partition(tmp_path / "missing", tmp_path / "out", format="planetoid", parts=2)
    assert not (tmp_path / "out").exists()


def test_cuda_device_is_checked(cluster, fanout):
    with pytest.raises(fanout.InvalidArgument, match="'gpu'"):
        fanout.NodeLoader(cluster, "train", device="gpu")
    if torch.cuda.is_available():
        loader = fanout.NodeLoader(cluster, "train", num_neighbors=[5], batch_size=32, device="cuda")
        b = next(iter(loader))
        assert b.x.is_cuda and b.x.shape[0] == b.n_id.numel()
        cpu = next(iter(fanout.NodeLoader(cluster, "train", num_neighbors=[5], batch_size=32)))
        assert torch.equal(b.x.cpu(), cpu.x)
    else:
        with pytest.raises(fanout.Error, match="CUDA"):
            fanout.NodeLoader(cluster, "train", device="cuda")


def test_local_cluster_stops_its_servers_on_ctrl_c(cora2, tmp_path):
    import subprocess
    import sys
    script = tmp_path / "notebook.py"
    script.write_text(
        "import sys, time, fanout\n"
        "with fanout.LocalCluster(sys.argv[1]) as lc:\n"
        "    print(' '.join(str(p.pid) for p in lc._procs), flush=True)\n"
        "    time.sleep(120)\n")
    p = subprocess.Popen([sys.executable, str(script), str(cora2)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    pids = [int(x) for x in p.stdout.readline().split()]
    assert len(pids) == 2
    p.send_signal(signal.SIGINT)  # Ctrl-C
    _, err = p.communicate(timeout=60)
    assert "KeyboardInterrupt" in err
    for pid in pids:
        for _ in range(100):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            pytest.fail("server %d outlived its LocalCluster" % pid)


def test_replica_health_and_the_auth_token(cora2, fanout, tmp_path):
    token = tmp_path / "token"
    token.write_text("python-test-token-0123456789\n")
    with fanout.LocalCluster(cora2, server_args=["--auth-token-file", str(token)]) as lc:
        f = tmp_path / "cluster.json"
        spec = {"partitions": [{"partition": i, "replicas": [a]} for i, a in enumerate(lc.addresses)]}
        f.write_text(json.dumps(spec))
        with pytest.raises(fanout.Unauthenticated, match="auth token"):
            fanout.Cluster.from_file(f)
        spec["auth_token_file"] = "token"  # relative to the cluster file
        f.write_text(json.dumps(spec))
        c = fanout.Cluster.from_file(f)
        assert c.num_nodes == 2708
        h = c.health()
        assert [(r["partition"], r["address"]) for r in h] == list(enumerate(lc.addresses))
        assert all(r["healthy"] and r["failures"] == 0 and r["failovers_to"] == 0 for r in h)
        loader = fanout.NodeLoader(c, c.split_nodes("train"), num_neighbors=[5], batch_size=64)
        assert sum(1 for _ in loader) == 3
        s = loader.stats()
        assert s["retries"] == 0 and s["failovers"] == 0 and len(s["servers"]) == 2


def test_temporal_loaders_never_look_ahead(fanout, college_msg):
    """CollegeMsg with its timestamps: NodeLoader and LinkLoader batches hold
    no edge later than the seed whose tree holds it; trees are disjoint."""
    data, times = college_msg
    with fanout.LocalCluster(data) as lc:
        cluster = lc.cluster()
        n = cluster.num_nodes
        seed_times = times.min() + torch.randint(0, int(times.max() - times.min()), (n,),
                                                 generator=torch.Generator().manual_seed(0))
        for strategy in ("uniform", "last"):
            loader = fanout.NodeLoader(cluster, torch.arange(n), num_neighbors=[5, 3], batch_size=256,
                                       input_time=seed_times, temporal_strategy=strategy, labels=False)
            edges = 0
            for b in loader:
                assert b.batch is not None and b.batch.numel() == b.n_id.numel()
                tree = b.batch[b.edge_index[1]]
                assert torch.equal(b.batch[b.edge_index[0]], tree)
                assert bool((times[b.e_id] <= b.seed_time[tree]).all())
                assert torch.equal(b.seed_time, seed_times[b.n_id[:b.batch_size]])
                edges += b.e_id.numel()
            assert edges > 5000
        # Link seeds: some stored edges at their own times (read back through the servers).
        first = next(iter(fanout.NodeLoader(cluster, torch.arange(200), num_neighbors=[-1], batch_size=200,
                                            shuffle=False, labels=False, features=False)))
        eli = first.n_id[first.edge_index]
        link = fanout.LinkLoader(cluster, eli, num_neighbors=[4, 2], batch_size=64, edge_label_time=times[first.e_id],
                                 neg_sampling="binary", labels=False)
        for b in link:
            p = b.input_id.numel()
            assert list(b.edge_label_index.shape) == [2, 2 * p]
            assert torch.equal(b.edge_label_index[0], torch.arange(2 * p))  # every endpoint its own seed
            tree = b.batch[b.edge_index[1]]
            assert bool((times[b.e_id] <= b.seed_time[tree]).all())
        # Temporal negatives: destinations first seen (among the seed edges) before the positive's time.
        seed_time = times[first.e_id]
        first_seen = {}
        for d, t in zip(eli[1].tolist(), seed_time.tolist()):
            first_seen[d] = min(t, first_seen.get(d, t))
        for temporal in ("active", "historical"):
            neg = fanout.NegativeSampling("triplet", 2, temporal=temporal)
            link = fanout.LinkLoader(cluster, eli, num_neighbors=[4, 2], batch_size=64, edge_label_time=seed_time,
                                     neg_sampling=neg, labels=False, features=False)
            checked = 0
            for b in link:
                t = seed_time[b.input_id]
                for i, row in enumerate(b.n_id[b.dst_neg_index].view(t.numel(), -1).tolist()):
                    for d in row:
                        if any(ft < int(t[i]) for ft in first_seen.values()):
                            assert first_seen.get(d, int(t[i])) < int(t[i]), (temporal, d)
                        checked += 1
            assert checked > 500
        with pytest.raises(fanout.InvalidArgument, match="edge_label_time"):
            iter(fanout.LinkLoader(cluster, eli, neg_sampling=fanout.NegativeSampling("binary", temporal="active")))
        with pytest.raises(fanout.InvalidArgument, match="'later'"):
            fanout.NegativeSampling("binary", temporal="later")
        with pytest.raises(fanout.InvalidArgument, match="input times must be integers"):
            fanout.NodeLoader(cluster, torch.arange(3), input_time=torch.ones(3))
        with pytest.raises(fanout.InvalidArgument, match="'soon' is not uniform or last"):
            fanout.NodeLoader(cluster, torch.arange(3), input_time=[1, 2, 3], temporal_strategy="soon")


def test_hetero_loaders_follow_heterodata_and_per_type_fanouts(fanout, movielens2):
    """MovieLens (user, movie, genre) with reverse relations: NodeLoader with a
    num_neighbors dict gives HeteroBatch (per-type n_id / x, per-edge-type
    edge_index in per-type indices), per-type fanouts are respected, the seeds
    are the input type's; LinkLoader on (user, rates, movie) puts typed
    negatives on that edge type; bad keys are named."""
    with fanout.LocalCluster(movielens2) as lc:
        cluster = lc.cluster()
        assert cluster.node_types == ["user", "movie", "genre"]
        assert ("user", "rates", "movie") in cluster.edge_types
        assert ("movie", "rev_rates", "user") in cluster.edge_types
        assert cluster.node_type_feature_dims == [0, 20, 0]
        users, movies = cluster.nodes_of_type("user"), cluster.nodes_of_type("movie")
        assert users.numel() == 610 and movies.numel() == 9742
        assert sorted(cluster.original_ids(users).tolist()) == list(range(1, 611))
        # Seeds are movies; rows hold in-edges, so a movie draws raters (rates) and its genres
        # (rev_has_genre) in hop 0, then users draw movies (rev_rates), genres movies (has_genre).
        fanouts = {("user", "rates", "movie"): [4, 2], "rev_rates": [0, 3], "rev_has_genre": [1, 0],
                   "has_genre": [0, 2]}
        loader = fanout.NodeLoader(cluster, ("movie", movies[:500]), num_neighbors=fanouts, batch_size=100,
                                   labels=False, seed=1)
        batches = 0
        for b in loader:
            batches += 1
            assert isinstance(b, fanout.HeteroBatch)
            assert b["movie"].batch_size == 100 and b["user"].batch_size == 0
            assert bool((cluster.node_type_of(b["movie"].n_id) == 1).all())
            assert list(b["movie"].x.shape) == [b["movie"].n_id.numel(), 20]
            assert b["user"].x is None and "user" not in b.x_dict
            for (s, r, d), store in b.edge_index_dict.items():
                if store.numel():
                    assert int(store[0].max()) < b[s].n_id.numel() and int(store[1].max()) < b[d].n_id.numel()
            # Per-type fanouts: a seed movie draws at most 4 raters and 1 genre (hop 0; no movie is
            # in hop 1's frontier), a user at most 3 movies, a genre at most 2.
            def most(key, target_type):
                ei = b[key].edge_index
                return int(torch.bincount(ei[1], minlength=b[target_type].n_id.numel()).max()) if ei.numel() else 0
            assert 0 < most(("user", "rates", "movie"), "movie") <= 4
            assert most(("genre", "rev_has_genre", "movie"), "movie") == 1
            assert 0 < most(("movie", "rev_rates", "user"), "user") <= 3
            assert 0 < most(("movie", "has_genre", "genre"), "genre") <= 2
            assert b["user", "tags", "movie"].edge_index.size(1) == 0  # not in num_neighbors: not sampled
            assert b["movie", "has_genre", "genre"].e_id is not None
        assert batches == 5
        try:
            import torch_geometric  # noqa: F401
        except ImportError:
            with pytest.raises(fanout.NotSupported, match="PyTorch Geometric"):
                b.to_pyg()
        # Link prediction on (user, rates, movie).
        first = next(iter(fanout.NodeLoader(cluster, ("movie", movies[:300]), num_neighbors={"rates": [-1]},
                                            batch_size=300, shuffle=False, labels=False, features=False)))
        st = first["user", "rates", "movie"]
        eli = torch.stack([first["user"].n_id[st.edge_index[0]], first["movie"].n_id[st.edge_index[1]]])
        rated = set(map(tuple, eli.t().tolist()))
        link = fanout.LinkLoader(cluster, (("user", "rates", "movie"), eli), num_neighbors=fanouts, batch_size=256,
                                 neg_sampling="binary", labels=False)
        negatives = 0
        for b in link:
            s = b["user", "rates", "movie"]
            p = s.input_id.numel()
            assert list(s.edge_label_index.shape) == [2, 2 * p]
            src = b["user"].n_id[s.edge_label_index[0]]
            dst = b["movie"].n_id[s.edge_label_index[1]]
            assert torch.equal(torch.stack([src[:p], dst[:p]]), eli[:, s.input_id])
            for u, m in zip(src[p:].tolist(), dst[p:].tolist()):
                assert (u, m) not in rated
                negatives += 1
        assert negatives > 500
        with pytest.raises(fanout.InvalidArgument, match="not one of the dataset's edge types"):
            fanout.NodeLoader(cluster, ("movie", None), num_neighbors={("user", "likes", "movie"): [2]})
        with pytest.raises(fanout.InvalidArgument, match="every edge type needs one fanout per hop"):
            fanout.NodeLoader(cluster, ("movie", None), num_neighbors={"rates": [2], "rev_rates": [2, 1]})
        with pytest.raises(fanout.InvalidArgument, match="is a user, not a movie"):
            fanout.NodeLoader(cluster, ("movie", users[:3]), num_neighbors={"rates": [2]})


def test_cluster_timeouts_are_options_and_bad_ones_are_refused_by_name(cora2, fanout):
    with fanout.LocalCluster(cora2) as lc:
        c = lc.cluster(call_timeout_ms=2000, health_check_ms=250)
        assert c.num_nodes == 2708
        with pytest.raises(fanout.InvalidArgument, match="health_check_ms"):
            lc.cluster(health_check_ms=-1)
        with pytest.raises(fanout.InvalidArgument, match="call_timeout_ms"):
            lc.cluster(call_timeout_ms=0)


def test_training_on_co_located_replicas_finishes_with_one_stopped(cora2, fanout, tmp_path):
    """2 partitions x 2 replicas on this host, default options (every partition read from its export
    and sampled here): a replica SIGSTOPped mid-epoch changes nothing, neither the time (no call on
    the batch path waits on it) nor the loss trace."""
    import torch.nn.functional as F
    with fanout.LocalCluster(cora2) as a, fanout.LocalCluster(cora2) as b:
        spec = tmp_path / "replicas.json"
        spec.write_text(json.dumps({"partitions": [{"partition": p, "replicas": [a.addresses[p], b.addresses[p]]}
                                                   for p in range(2)]}))

        def train(stop):
            torch.manual_seed(0)
            c = fanout.Cluster.from_file(spec)
            assert c.local_partitions == [True, True]
            lin_self, lin_nbr = torch.nn.Linear(1433, 7), torch.nn.Linear(1433, 7)
            opt = torch.optim.SGD(list(lin_self.parameters()) + list(lin_nbr.parameters()), lr=0.5)
            loader = fanout.NodeLoader(c, torch.arange(2708), num_neighbors=[5], batch_size=64, shuffle=False,
                                       num_workers=1, prefetch=1)
            losses, victim, start = [], a._procs[0], time.monotonic()
            try:
                for i, batch in enumerate(loader):
                    if stop and i == 3:
                        victim.send_signal(signal.SIGSTOP)  # the replica whose export is read here
                    src, dst = batch.edge_index
                    agg = torch.zeros(batch.x.shape[0], 1433).index_add_(0, dst, batch.x[src])
                    deg = torch.zeros(batch.x.shape[0]).index_add_(0, dst, torch.ones(dst.shape[0])).clamp(min=1)
                    out = lin_self(batch.x) + lin_nbr(agg / deg[:, None])
                    n = batch.batch_size
                    loss = F.cross_entropy(out[:n], batch.y[:n].clamp(min=0))
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    losses.append(loss.item())
                del loader
                del c  # closes (its last reports) with the replica still stopped
                return losses, time.monotonic() - start
            finally:
                if stop:
                    victim.send_signal(signal.SIGCONT)

        calm, _ = train(False)
        # A liveness bound, not a timing: before the repair this run never finished.
        result = []
        t = threading.Thread(target=lambda: result.append(train(True)))
        t.start()
        t.join(timeout=300)
        assert not t.is_alive(), "training stalled on the stopped replica"
        stopped, _ = result[0]
        assert len(calm) == (2708 + 63) // 64
        assert stopped == calm


def test_a_socket_folder_another_user_holds_costs_the_export_not_the_server(cora2, fanout, tmp_path):
    """XDG_RUNTIME_DIR/fanout made first by another uid (as root: chowned to nobody; otherwise a symbolic
    link, which fails the same check): the server still starts, serves over Thrift, and says why there is no
    export in its ready line and in /stats."""
    xdg = tmp_path / "xdg"
    xdg.mkdir(mode=0o700)
    squatted = xdg / "fanout"
    if os.geteuid() == 0:
        squatted.mkdir(mode=0o700)
        os.chown(squatted, 65534, 65534)
    else:
        (tmp_path / "elsewhere").mkdir()
        os.symlink(tmp_path / "elsewhere", squatted)
    server = fanout.find_binary("fanout-server")
    env = dict(os.environ, XDG_RUNTIME_DIR=str(xdg))
    procs, records = [], []
    try:
        for part in range(2):
            ready = tmp_path / ("ready%d.json" % part)
            procs.append(subprocess.Popen([server, "--dataset", str(cora2), "--partition", str(part), "--port", "0",
                                           "--admin-port", "0", "--ready-file", str(ready)], env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
            deadline = time.monotonic() + 60
            while not ready.exists() and procs[-1].poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert procs[-1].poll() is None, procs[-1].communicate()[0]
            records.append(json.loads(ready.read_text())["fanout_server_ready"])
        for record in records:
            assert record["local_socket"] == ""
            s = fanout.stats("127.0.0.1:%d" % record["admin_port"])
            assert s["local"]["enabled"] is False and str(squatted) in s["local"]["why_off"], s["local"]
        c = fanout.Cluster(["127.0.0.1:%d" % r["rpc_port"] for r in records])
        assert c.features(torch.arange(3)).shape[0] == 3
    finally:
        outs = []
        for proc in procs:
            proc.terminate()
            outs.append(proc.communicate(timeout=30)[0])
    assert all("same-host export off" in out and str(squatted) in out for out in outs), outs
