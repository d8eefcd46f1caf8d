"""Memory tiers: the disk tier (feature files read with io_uring under a cache), compact topology,
edge ids on demand and reduced-precision features give the same batches as the memory tier, on
every path; damage is refused by name; the cache keeps to its budget."""
import json
import os
import shutil
import subprocess
import time
import urllib.request

import pytest
import torch

from conftest import ROOT, cpp_example

CORA = os.path.join(ROOT, "datasets", "data", "planetoid", "cora")


@pytest.fixture(scope="module")
def cora_files(tmp_path_factory, fanout):
    """Cora in 2 partitions, feature rows in feature files (the disk tier's)."""
    out = tmp_path_factory.mktemp("tiers") / "cora2f"
    return fanout.partition(CORA, out, format="planetoid", parts=2, feature_file=True)


@pytest.fixture(scope="module")
def memory_tier(cora_files, fanout):
    with fanout.LocalCluster(cora_files, server_args=["--features", "memory", "--index-bits", "64",
                                                      "--edge-ids", "memory"]) as lc:
        yield lc


@pytest.fixture(scope="module")
def disk_tier(cora_files, fanout):
    # A small cache (so rows are read from the file), 32-bit ids, edge ids read on demand.
    with fanout.LocalCluster(cora_files, server_args=["--features", "disk", "--feature-memory", "400K",
                                                      "--edge-ids", "on-demand"]) as lc:
        yield lc


def _stats(lc, p=0):
    with urllib.request.urlopen("http://%s/stats" % lc.admin_addresses[p], timeout=10) as r:
        return json.load(r)


def _same(a, b, fields, what):
    for f in fields:
        x, y = getattr(a, f), getattr(b, f)
        assert torch.equal(x, y), "%s: %s differs" % (what, f)


def test_every_loader_and_path_gives_the_memory_tiers_batches(memory_tier, disk_tier, fanout):
    ref_c = memory_tier.cluster(data_plane="tcp")
    kw = dict(num_neighbors=[5, 3], batch_size=64, shuffle=True, seed=11)
    ref_nodes = list(fanout.NodeLoader(ref_c, "train", **kw))
    ref_subs = list(fanout.SubgraphLoader(ref_c, "val", **kw))
    edges = torch.tensor([[0, 5, 9, 100, 300], [633, 1862, 2582, 2, 7]])
    link_kw = dict(num_neighbors=[4], batch_size=2, shuffle=False, neg_sampling="binary", seed=3)
    ref_links = list(fanout.LinkLoader(ref_c, edges, **link_kw))
    for path in ("auto", "ucx", "tcp"):
        c = disk_tier.cluster(data_plane=path)
        for a, b in zip(ref_nodes, fanout.NodeLoader(c, "train", **kw)):
            _same(a, b, ("x", "y", "n_id", "edge_index", "e_id"), "node loader over " + path)
        for a, b in zip(ref_subs, fanout.SubgraphLoader(c, "val", **kw)):
            _same(a, b, ("x", "n_id", "edge_index", "e_id"), "subgraph loader over " + path)
        got = list(fanout.LinkLoader(c, edges, **link_kw))
        assert len(got) == len(ref_links)
        for a, b in zip(ref_links, got):
            _same(a, b, ("x", "n_id", "edge_index", "e_id", "edge_label_index", "edge_label"),
                  "link loader over " + path)
        ids = torch.randperm(2708)[:700]
        assert torch.equal(c.features(ids), ref_c.features(ids)), path
    tiers = _stats(disk_tier)["tiers"]
    assert tiers["features"] == "disk" and tiers["index_bits"] == 32
    assert tiers["edge_ids"] == "read on demand"  # the loaders asked for them
    assert tiers["disk"]["block_reads"] > 0 and tiers["disk"]["read_errors"] == 0
    assert tiers["disk"]["io"].startswith(("io_uring", "pread"))
    ref_tiers = _stats(memory_tier)["tiers"]
    assert ref_tiers["features"] == "memory" and ref_tiers["index_bits"] == 64
    assert ref_tiers["edge_ids"] == "held"


def test_colocated_clients_read_the_disk_tier_themselves(disk_tier, fanout):
    c = disk_tier.cluster()
    assert c.local_partitions == [True, True]
    before = [_stats(disk_tier, p)["tiers"]["disk"]["lookups"] for p in (0, 1)]
    loader = fanout.NodeLoader(c, torch.arange(2708), num_neighbors=[3], batch_size=256, edge_ids=False)
    n = 0
    for b in loader:
        n += b.x.shape[0]
    st = loader.stats()
    assert n > 2708 and st["local_rows"] >= n and st["thrift_bytes"] == 0 and st["ucx_bytes"] == 0
    after = [_stats(disk_tier, p)["tiers"]["disk"]["lookups"] for p in (0, 1)]
    assert after == before  # not a single feature request reached the servers


def test_the_cache_never_holds_more_than_its_budget(cora_files, fanout):
    """A storm of lookups over every row from 24 connections at once: the cache's bytes stay within its
    budget, the serving threads share a bounded pool of readers (rings and aligned buffers, counted in
    /stats) however many connections there are, and the server's resident anonymous memory grows by no
    more than the budget, the readers and a fixed allowance for the connections' threads and buffers."""
    import threading
    with fanout.LocalCluster(cora_files, server_args=["--features", "disk", "--feature-memory", "1M"]) as lc:
        budget = _stats(lc)["tiers"]["disk"]["budget_bytes"]
        assert budget == 1 << 20
        base = _stats(lc)["memory"]["rss_anon_bytes"]
        clusters = [lc.cluster(data_plane="tcp") for _ in range(24)]
        errors = []

        def storm(c, seed):
            try:
                g = torch.Generator().manual_seed(seed)
                for _ in range(15):  # hot and cold rows alike
                    c.features(torch.randint(0, 2708, (3000,), generator=g))
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append(e)
        threads = [threading.Thread(target=storm, args=(c, i)) for i, c in enumerate(clusters)]
        for t in threads:
            t.start()
        peak_anon = 0
        while any(t.is_alive() for t in threads):
            s = _stats(lc)
            d = s["tiers"]["disk"]
            assert d["cache_bytes"] <= budget, d
            assert d["readers"]["made"] <= d["readers"]["max"], d["readers"]
            peak_anon = max(peak_anon, s["memory"]["rss_anon_bytes"])
        for t in threads:
            t.join()
        assert not errors, errors
        s = _stats(lc)
        d = s["tiers"]["disk"]
        assert 1 <= d["readers"]["made"] <= d["readers"]["max"] < 24, d["readers"]
        # Each reader: queue_depth blocks of the file's block size (a multiple of 4096).
        per_reader, rest = divmod(s["memory"]["disk_reader_bytes"], d["readers"]["made"])
        assert rest == 0 and per_reader % (d["queue_depth"] * 4096) == 0, (s["memory"], d)
        # In flight, replies (3000 rows of 5.7 KB each, copied into Thrift's frames) take what the request
        # budget allows; once the storm is over and the server idle (it trims its heap after 2 s quiet),
        # what stays is the cache, the readers and the connections' own threads and buffers.
        assert peak_anon - base <= s["memory"]["request_budget_bytes"] + budget + (256 << 20), (peak_anon, base)
        allowance = 64 << 20
        deadline = time.monotonic() + 20
        while True:
            grown = _stats(lc)["memory"]["rss_anon_bytes"] - base
            if grown <= budget + s["memory"]["disk_reader_bytes"] + allowance or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert grown <= budget + s["memory"]["disk_reader_bytes"] + allowance, (grown, base, peak_anon)
        assert d["evictions"] > 0 and d["hot_hits"] > 0 and d["cache_hits"] > 0
        with urllib.request.urlopen("http://%s/metrics" % lc.admin_addresses[0], timeout=10) as r:
            metrics = r.read().decode()
        for name in ("fanout_feature_cache_hits_total{cache=\"hot\"}", "fanout_feature_cache_misses_total",
                     "fanout_feature_disk_reads_total", "fanout_feature_cache_bytes",
                     "fanout_feature_cache_budget_bytes", "fanout_feature_disk_queue_depth"):
            assert name in metrics, name
        promtool = shutil.which("promtool")
        if promtool:
            out = subprocess.run([promtool, "check", "metrics"], input=metrics, capture_output=True, text=True)
            assert out.returncode == 0, out.stdout + out.stderr


def test_a_flipped_byte_is_refused_naming_the_file_and_block(cora_files, fanout, tmp_path):
    damaged = tmp_path / "damaged"
    shutil.copytree(cora_files, damaged)
    path = damaged / "part-0.features"
    with open(path, "r+b") as f:  # row 0's block (block 0 of the rows; 4096 header bytes first)
        f.seek(4096 + 10)
        b = f.read(1)
        f.seek(4096 + 10)
        f.write(bytes([b[0] ^ 0x40]))
    with fanout.LocalCluster(str(damaged), server_args=["--features", "disk", "--feature-memory", "0"]) as lc:
        for path_name in ("tcp", "ucx", "auto"):
            c = lc.cluster(data_plane=path_name)
            with pytest.raises(fanout.Corruption, match=r"part-0\.features: block 0 .*checksum"):
                c.features(torch.tensor([5, 0]))
            # Other rows are still served.
            assert c.features(torch.tensor([200, 1500])).shape == (2, 1433)
        assert _stats(lc)["tiers"]["disk"]["read_errors"] >= 2


def test_a_damaged_block_on_one_of_two_replicas_changes_no_batch(cora_files, fanout, tmp_path):
    """Replica A of each partition has a flipped byte in node 0's block, replica B is whole. On every path
    (Thrift, UCX, and auto, where this host reads A's file itself) the rows and the batches equal B's alone:
    the damaged read goes to B, counted as a data fault; only where every replica refuses does a call fail,
    naming each."""
    damaged = tmp_path / "damaged"
    shutil.copytree(cora_files, damaged)
    with open(damaged / "part-0.features", "r+b") as f:  # node 0's row: block 0, after the 4096-byte header
        f.seek(4096 + 10)
        b = f.read(1)
        f.seek(4096 + 10)
        f.write(bytes([b[0] ^ 0x40]))
    args = ["--features", "disk", "--feature-memory", "0"]
    with fanout.LocalCluster(str(damaged), server_args=args) as bad, \
            fanout.LocalCluster(str(cora_files), server_args=args) as good:
        spec = tmp_path / "cluster.json"
        spec.write_text(json.dumps({"partitions": [{"partition": p, "replicas": [a, b]} for p, (a, b) in
                                                   enumerate(zip(bad.addresses, good.addresses))]}))
        ref = good.cluster(data_plane="tcp")
        everything = torch.arange(2708)
        want = ref.features(everything)
        ref_batches = list(fanout.NodeLoader(ref, torch.arange(0, 2708, 7), num_neighbors=[5, 5], batch_size=64,
                                             seed=3, num_workers=1))
        for plane in ("tcp", "ucx", "auto"):
            c = fanout.Cluster.from_file(str(spec), data_plane=plane)
            loader = fanout.NodeLoader(c, torch.arange(0, 2708, 7), num_neighbors=[5, 5], batch_size=64, seed=3,
                                       num_workers=1)
            got = list(loader)
            assert len(got) == len(ref_batches)
            for x, y in zip(got, ref_batches):
                assert torch.equal(x.n_id, y.n_id) and torch.equal(x.x, y.x), plane
            assert loader.stats()["data_faults"] >= 1, (plane, loader.stats())
            assert torch.equal(c.features(everything), want), plane
        assert sum(_stats(bad, p)["tiers"]["disk"]["read_errors"] for p in (0, 1)) >= 1
        # Every replica damaged: the call fails naming the file and block of each.
        only_bad = tmp_path / "bad.json"
        only_bad.write_text(json.dumps({"partitions": [{"partition": p, "replicas": [a, a]} for p, a in
                                                       enumerate(bad.addresses)]}))
        with pytest.raises(fanout.Corruption, match=r"every replica refused.*part-0\.features: block 0"):
            fanout.Cluster.from_file(str(only_bad), data_plane="tcp").features(torch.tensor([0]))


def test_a_missing_or_truncated_file_stops_the_server_at_start(cora_files, fanout, tmp_path):
    server = fanout.find_binary("fanout-server")
    for damage in ("missing", "truncated"):
        d = tmp_path / damage
        shutil.copytree(cora_files, d)
        f = d / "part-1.features"
        if damage == "missing":
            f.unlink()
        else:
            os.truncate(f, os.path.getsize(f) - 4096)
        out = subprocess.run([server, "--dataset", str(d), "--partition", "1", "--port", "0", "--admin-port", "-1",
                              "--features", "disk"], capture_output=True, text=True, timeout=60)
        assert out.returncode != 0
        assert "part-1.features" in out.stderr and ("no such feature file" in out.stderr or
                                                    "truncated" in out.stderr), out.stderr
    # Disk features without feature files: refused, naming the option that writes them.
    plain = tmp_path / "plain"
    fanout.partition(CORA, plain, format="planetoid", parts=1)
    out = subprocess.run([server, "--dataset", str(plain), "--partition", "0", "--port", "0", "--admin-port", "-1",
                          "--features", "disk"], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "--feature-file" in out.stderr, out.stderr


def test_auto_takes_the_disk_where_the_memory_limit_is_below_the_partition(cora_files, fanout):
    # Cora's partition 0 holds about 8 MB of feature rows.
    with fanout.LocalCluster(cora_files, server_args=["--memory-limit", "4M"]) as small, \
            fanout.LocalCluster(cora_files, server_args=["--memory-limit", "1G"]) as big:
        assert _stats(small)["tiers"]["features"] == "disk"
        assert _stats(small)["tiers"]["disk"]["budget_bytes"] <= 4 << 20
        assert _stats(big)["tiers"]["features"] == "memory"
        log = open(small.log_paths[0]).read()
        assert "memory: features disk" in log, log
        ids = torch.arange(0, 2708, 7)
        assert torch.equal(small.cluster().features(ids), big.cluster().features(ids))


@pytest.mark.parametrize("dtype,tolerance", [("bfloat16", 4e-3), ("float16", 1e-3), ("int8", None)])
def test_reduced_precision_rows_travel_as_stored_and_convert_here(dtype, tolerance, fanout, tmp_path, cluster):
    out = fanout.partition(CORA, tmp_path / dtype, format="planetoid", parts=2, feature_dtype=dtype,
                           feature_file=True)
    meta = json.load(open(os.path.join(out, "meta.json")))
    assert meta["feature_dtype"] == dtype
    with fanout.LocalCluster(out, server_args=["--features", "disk"]) as lc:
        ids = torch.arange(0, 2708, 3)
        want = cluster.features(ids)  # float32 rows, served from the conftest's float32 store
        for path in ("auto", "tcp"):
            got = lc.cluster(data_plane=path).features(ids)
            assert got.dtype == torch.float32
            if dtype == "int8":
                scales = torch.tensor(meta["feature_scales"], dtype=torch.float32)
                assert scales.numel() == 1433
                assert torch.all((got - want).abs() <= scales / 2 * 1.0001 + 1e-7), path
            else:
                assert torch.allclose(got, want, rtol=tolerance, atol=0), path


def _train(fanout, lc, tmp_path, seed):
    """The demo's training (train-graphsage, 30 epochs) through `lc`'s servers: its test accuracy."""
    spec = {"partitions": [{"partition": p, "replicas": [a]} for p, a in enumerate(lc.addresses)]}
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(spec))
    train = cpp_example(fanout)
    out = subprocess.run([train, "--cluster", str(path), "--epochs", "30",
                          "--seed", str(seed)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return float(out.stdout.strip().splitlines()[-1].split("=")[1])


def test_reduced_precision_trains_as_well_as_float32(fanout, tmp_path):
    # Cora's bag-of-words rows normalised (PyG's NormalizeFeatures): values
    # float16, bfloat16 and int8 cannot all hold exactly. The demo's training
    # through servers whose features are on disk, 3 seeds each.
    accuracy = {}
    for dtype in ("float32", "float16", "bfloat16", "int8"):
        out = fanout.partition(CORA, tmp_path / dtype, format="planetoid", parts=2, feature_dtype=dtype,
                               feature_file=True, normalize_features=True)
        with fanout.LocalCluster(out, server_args=["--features", "disk"]) as lc:
            accuracy[dtype] = sum(_train(fanout, lc, tmp_path, s) for s in range(3)) / 3
    print("mean test accuracy over 3 seeds:", accuracy)
    assert accuracy["float32"] > 0.75
    assert abs(accuracy["float16"] - accuracy["float32"]) <= 0.005, accuracy
    assert abs(accuracy["bfloat16"] - accuracy["float32"]) <= 0.005, accuracy
    assert abs(accuracy["int8"] - accuracy["float32"]) <= 0.01, accuracy


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_x_stays_half_width_where_asked(dtype, fanout, tmp_path):
    name = "float16" if dtype == torch.float16 else "bfloat16"
    out = fanout.partition(CORA, tmp_path / name, format="planetoid", parts=2, feature_dtype=name,
                           normalize_features=True)
    with fanout.LocalCluster(out) as lc:
        c = lc.cluster()
        kw = dict(num_neighbors=[4], batch_size=128, shuffle=False)
        for full, half in zip(fanout.NodeLoader(c, "val", **kw), fanout.NodeLoader(c, "val", x_dtype=dtype, **kw)):
            assert half.x.dtype == dtype and full.x.dtype == torch.float32
            # Stored in that type: the half-width rows are the stored values exactly.
            assert torch.equal(half.x.float(), full.x)
            assert torch.equal(half.n_id, full.n_id)
    with pytest.raises(fanout.InvalidArgument, match="x_dtype"):
        fanout.NodeLoader(c, "val", x_dtype=torch.int8)
