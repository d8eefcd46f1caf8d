"""The loader's per-stage counters (NodeLoader.stats()["stages"]) and the servers' per-method CPU
(/metrics fanout_request_cpu_seconds_total): what `./run bench stages` reads."""
import os
import sys

import pytest

ROOT = os.environ.get("FANOUT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from stages_bench import handler_seconds as cpu_by_method  # noqa: E402 (the bench's own reading of /metrics)

CLIENT = ["route", "local_sample", "sample_transfer", "merge", "local_features", "feature_transfer",
          "feature_decode", "labels", "build", "produce", "handoff", "python"]


@pytest.mark.parametrize("path", ["thrift", "local"])
def test_stages_account_for_each_batch_on_its_path(fanout, cora2, path):
    args = ["--local-socket", "off"] if path == "thrift" else []
    with fanout.LocalCluster(cora2, data_plane="tcp" if path == "thrift" else "auto", server_args=args) as lc:
        before = [cpu_by_method(a) for a in lc.admin_addresses]
        cluster = lc.cluster()
        loader = fanout.NodeLoader(cluster, "train", num_neighbors=[10, 5], batch_size=32, shuffle=False)
        n = sum(1 for _ in loader)
        s = loader.stats()
        loader.close()
        assert {p["path"] for p in s["paths"]} == {path}
        st = s["stages"]
        assert set(st) == set(CLIENT)
        assert st["produce"]["calls"] == n and st["handoff"]["calls"] == n and st["python"]["calls"] == n
        for name in CLIENT:
            assert st[name]["cpu_s"] >= 0 and st[name]["wall_s"] >= 0, name
        inside = sum(st[k]["wall_s"] for k in CLIENT if k not in ("build", "produce", "handoff", "python"))
        assert inside <= st["produce"]["wall_s"] + 1e-6
        if path == "thrift":  # requests: the transfer stages, nothing read here
            assert st["sample_transfer"]["calls"] > 0 and st["feature_transfer"]["wall_s"] > 0
            assert st["local_features"]["wall_s"] < st["feature_transfer"]["wall_s"]
            after = [cpu_by_method(a) for a in lc.admin_addresses]
            for b, a in zip(before, after):
                assert a["lookup_features"] > b.get("lookup_features", 0)
                assert a["sample_neighbors"] > b.get("sample_neighbors", 0)
        else:  # read and sampled here: no server handled a feature request
            assert st["local_features"]["calls"] > 0 and st["local_sample"]["calls"] > 0
            after = [cpu_by_method(a) for a in lc.admin_addresses]
            for b, a in zip(before, after):
                assert a["lookup_features"] == b.get("lookup_features", 0)
