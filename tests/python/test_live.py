"""Live graphs from Python: fanout.Cluster.update on servers run with --live-dir, loader batches
that name the versions they read, a snapshot that stays put while writers go on, and bad updates
refused by name."""
import json
import subprocess
import time

import pytest
import torch


def _nodes(batch):
    return batch.n_id.tolist(), batch.edge_index.tolist()


def test_updates_are_seen_by_the_next_batch_and_a_snapshot_stays_put(cora2, fanout, tmp_path):
    with fanout.LocalCluster(cora2, server_args=["--live-dir", str(tmp_path / "live")]) as lc:
        c = lc.cluster()
        kw = dict(num_neighbors=[5, 3], batch_size=16, shuffle=False, num_workers=1)
        seeds = torch.arange(16)
        before = next(iter(fanout.NodeLoader(c, seeds, **kw)))
        assert before.versions == [0, 0]
        # Every seed gains an edge to a node of the other partition (both ways), and a label.
        far = c.num_nodes - 1
        versions = c.update(add_edges=torch.stack([seeds, torch.full_like(seeds, far)]),
                            labels={0: 3}, undirected=True)
        assert versions == [1, 1]
        after = next(iter(fanout.NodeLoader(c, seeds, **kw)))
        assert after.versions == [1, 1]
        assert _nodes(after) != _nodes(before)
        assert int(after.y[0]) == 3
        # Pinned at the base: the batch before the update, value for value, whatever is written now.
        c.update(remove_edges=torch.stack([seeds, torch.full_like(seeds, far)]), undirected=True)
        pinned = next(iter(fanout.NodeLoader(c, seeds, snapshot=[0, 0], **kw)))
        assert pinned.versions == [0, 0]
        assert _nodes(pinned) == _nodes(before)
        assert torch.equal(pinned.x, before.x) and torch.equal(pinned.y, before.y)
        at1 = next(iter(fanout.NodeLoader(c, seeds, snapshot=[1, 1], **kw)))
        assert _nodes(at1) == _nodes(after)
        # "epoch": the versions of the epoch's start for all its batches.
        loader = fanout.NodeLoader(c, torch.arange(32), snapshot="epoch", **kw)
        it = iter(loader)
        first = next(it)
        c.update(labels={1: 2})
        assert next(it).versions == first.versions == [2, 2]
        assert [b.versions for b in loader] == [[3, 2], [3, 2]]


def test_bad_updates_are_refused_by_name(cora2, fanout, tmp_path):
    with fanout.LocalCluster(cora2, server_args=["--live-dir", str(tmp_path / "live")]) as lc:
        c = lc.cluster()
        with pytest.raises(fanout.InvalidArgument, match="names a node outside"):
            c.update(add_edges=[[0], [c.num_nodes]])
        with pytest.raises(fanout.InvalidArgument, match=r"must be \[2, E\]"):
            c.update(add_edges=[0, 1])
        # A part that a partition would refuse (a time on a dataset without edge times) refuses the
        # whole update before any part is sent: the next update's versions are each partition's first.
        far = c.num_nodes - 1
        within = [[0, far], [1, far - 1]]  # 0 -> 1 in partition 0, far -> far - 1 in partition 1
        with pytest.raises(fanout.InvalidArgument, match="partition 1 would refuse its part.*nothing was sent"):
            c.update(add_edges=within, edge_times=[0, 5])
        assert c.update(add_edges=within) == [1, 1]
        with pytest.raises(fanout.InvalidArgument, match="snapshot"):
            fanout.NodeLoader(c, torch.arange(4), num_neighbors=[2], snapshot="yesterday")


def test_a_static_cluster_takes_no_updates(cluster, fanout):
    with pytest.raises(fanout.InvalidArgument, match="static partition"):
        cluster.update(add_edges=[[0], [1]])


def test_compact_folds_the_delta_into_a_base_that_samples_the_same(cora2, fanout, tmp_path):
    args = ["--live-dir", str(tmp_path / "live"), "--live-compact-ratio", "0", "--live-compact-mib", "0"]
    with fanout.LocalCluster(cora2, server_args=args) as lc:
        c = lc.cluster()
        kw = dict(num_neighbors=[5, 3], batch_size=16, shuffle=False, num_workers=1)
        seeds = torch.arange(16)
        far = c.num_nodes - 1
        assert c.update(add_edges=torch.stack([seeds, torch.full_like(seeds, far)]), undirected=True) == [1, 1]
        assert c.update(labels={0: 3}) == [2, -1]
        before = next(iter(fanout.NodeLoader(c, seeds, **kw)))
        assert before.versions == [2, 1]
        done = c.compact()
        assert [d["compacted"] for d in done] == [True, True], done
        assert [d["version"] for d in done] == [2, 1]
        assert all(d["edges"] > 0 and d["seconds"] >= 0 for d in done)
        # The same batch from the new bases, value for value.
        after = next(iter(fanout.NodeLoader(c, seeds, **kw)))
        assert after.versions == [2, 1]
        assert _nodes(after) == _nodes(before)
        assert torch.equal(after.x, before.x) and torch.equal(after.y, before.y)
        # Nothing more to fold (or the generation before still kept): said, not raised.
        again = c.compact([0])
        assert len(again) == 1 and again[0]["partition"] == 0 and not again[0]["compacted"]
        assert "already holds" in again[0]["reason"] or "still kept" in again[0]["reason"]
        with pytest.raises(fanout.InvalidArgument, match="partition 5 of 2"):
            c.compact([5])


def test_a_static_cluster_cannot_be_compacted(cluster, fanout):
    with pytest.raises(fanout.InvalidArgument, match="static partition"):
        cluster.compact()


def test_temporal_hops_read_new_edges_at_their_times_with_no_rebuild(college_msg, fanout, tmp_path):
    """Edges appended with their times are sampled by temporal hops at once (no compaction, no
    rebuild): at a seed time after an edge's, not before; the "last" strategy takes the newest;
    a batch pinned at the base has none of them."""
    data, times = college_msg
    with fanout.LocalCluster(data, server_args=["--live-dir", str(tmp_path / "live")]) as lc:
        c = lc.cluster()
        n = c.num_nodes
        t = int(times.max())  # every stored edge is at or before it
        u = 0

        def hop(at, num_neighbors=(-1,), **extra):
            b = next(iter(fanout.NodeLoader(c, torch.tensor([u]), input_time=torch.tensor([at]),
                                            num_neighbors=list(num_neighbors), batch_size=1, shuffle=False,
                                            labels=False, features=False, **extra)))
            into_seed = b.edge_index[1] == 0
            return set(b.n_id[b.edge_index[0][into_seed]].tolist()), b

        before, _ = hop(t)
        v, w = [x for x in range(n - 1, 0, -1) if x not in before and x != u][:2]
        versions = c.update(add_edges=[[u, u], [v, w]], edge_times=[t - 5, t + 1000], undirected=True)
        assert max(versions) >= 1
        now, b = hop(t)
        assert now == before | {v}, "the edge at t - 5 is sampled at t, the one at t + 1000 is not"
        assert bool((b.e_id[b.n_id[b.edge_index[0]] == v] >= times.numel()).all())  # an added edge's id
        later, _ = hop(t + 1000)
        assert later == before | {v, w}
        newest, _ = hop(t + 1000, num_neighbors=(1,), temporal_strategy="last")
        assert newest == {w}
        pinned, _ = hop(t + 1000, snapshot=[0, 0])
        assert pinned == before
        # Removed again: gone from the next batch, still there in a batch pinned before the removal.
        c.update(remove_edges=[[u], [v]], undirected=True)
        assert hop(t + 1000)[0] == before | {w}
        assert hop(t + 1000, snapshot=b.versions)[0] == before | {v, w}


def _follower(fanout, cora2, part, primary, live_dir, ready):
    """A follower replica of `primary` (fanout-server --live-follow), once it is ready: (process, rpc address,
    admin address)."""
    proc = subprocess.Popen([fanout.find_binary("fanout-server"), "--dataset", str(cora2), "--partition", str(part),
                             "--port", "0", "--admin-port", "0", "--local-socket", "off", "--live-dir", str(live_dir),
                             "--live-follow", primary, "--ready-file", str(ready)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None and ready.exists(), proc.communicate(timeout=30)[0]
    record = json.loads(ready.read_text())["fanout_server_ready"]
    return proc, "127.0.0.1:%d" % record["rpc_port"], "127.0.0.1:%d" % record["admin_port"]


def test_replicas_agree_and_a_follower_killed_mid_epoch_changes_no_pinned_batch(cora2, fanout, tmp_path):
    """A follower per partition: Cluster.update finds each primary whatever order the replicas are listed in,
    an acknowledged update is on the follower already, a follower killed (-9) in the middle of a pinned epoch
    changes no batch, writes go on without it, and restarted it has caught up before it serves."""
    with fanout.LocalCluster(cora2, server_args=["--live-dir", str(tmp_path / "primaries")]) as lc:
        procs = []
        try:
            for part in range(2):
                procs.append(_follower(fanout, cora2, part, lc.addresses[part], tmp_path / "followers",
                                       tmp_path / ("ready%d.json" % part)))
            c = fanout.Cluster([[procs[0][1], lc.addresses[0]], [lc.addresses[1], procs[1][1]]],
                               health_check_ms=200)
            seeds = torch.arange(64)
            far = c.num_nodes - 1
            versions = c.update(add_edges=torch.stack([seeds, torch.full_like(seeds, far)]), labels={0: 3},
                                undirected=True)
            assert versions == [1, 1]
            for proc, _, admin in procs:
                assert fanout.stats(admin)["live"]["committed_version"] == 1
            kw = dict(num_neighbors=[5, 3], batch_size=16, shuffle=False, num_workers=1, prefetch=1,
                      snapshot=versions)
            reference = [_nodes(b) for b in fanout.NodeLoader(c, seeds, **kw)]
            assert len(reference) == 4
            got = []
            it = iter(fanout.NodeLoader(c, seeds, **kw))
            got.append(_nodes(next(it)))
            procs[0][0].kill()  # partition 0's follower, the replica its sessions start on
            procs[0][0].wait()
            assert c.update(labels={1: 2}) == [2, -1]  # on partition 0's primary alone, after the wait
            got += [_nodes(b) for b in it]
            assert got == reference
            # Back: caught up before it serves (its ready file comes after the catch-up).
            (tmp_path / "ready0.json").unlink()
            procs[0] = _follower(fanout, cora2, 0, lc.addresses[0], tmp_path / "followers", tmp_path / "ready0.json")
            assert fanout.stats(procs[0][2])["live"]["committed_version"] == 2
            assert fanout.stats(procs[0][2])["live"]["replication"]["primary"] == lc.addresses[0]
        finally:
            for proc, _, _ in procs:
                proc.kill()
                proc.communicate(timeout=30)
