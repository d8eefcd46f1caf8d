#!/usr/bin/env python3
"""./run bench network: the 2-server loader across shaped network links (root only; not in CI).

Each of 2 fanout-servers (R-MAT, 2 partitions, 128-dim float32 features) runs in a network namespace of its own
("a host"), joined to this one by a veth pair on a bridge (tests/multihost/netns_hosts.py), its link shaped with tc
tbf at each --rates value (1 Gbit/s and 10 Gbit/s by default; this kernel has tbf but not netem: no added delay).
fanout-bench-network-client runs the loader here (fanouts [15, 10, 5], batch 1024, features, 2 workers) over
Thrift and over UCX (tcp transport: these "hosts" must not share memory) with the client feature cache off, at 10%
and at 20% of the nodes, and counts the bytes the links carried (rx_bytes of the veth ends here).

Cases (`network`, one per rate, path and cache size): link_bytes_per_s, bytes_per_batch, batches_per_s,
link_utilisation = bytes moved / (the links' rate x time), and for the cached runs cache_speedup (batches/s against
the same rate and path without a cache) beside byte_ratio (bytes per batch against it). Rounds alternate the
configurations; medians of --rounds. JSON: build/bench/network.json (--json).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = Path(os.environ.get("FANOUT_SOURCE_DIR", Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(SOURCE / "tests" / "multihost"))
from netns_hosts import BIN, Hosts, can_make_namespaces, remove_leftovers  # noqa: E402


def log(msg):
    print("[network] " + msg, file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=int, default=18, help="R-MAT scale (default 18)")
    ap.add_argument("--rates", default="1gbit,10gbit", help="link rates, comma-separated (tc units)")
    ap.add_argument("--paths", default="thrift,ucx", help="thrift, ucx")
    ap.add_argument("--cache-fractions", default="0,0.1,0.2", help="client cache sizes (fractions of the nodes)")
    ap.add_argument("--seconds", type=float, default=8, help="measured seconds per run")
    ap.add_argument("--rounds", type=int, default=3, help="rounds (medians)")
    ap.add_argument("--work", help="folder for the dataset (default: a temporary one, removed)")
    ap.add_argument("--json", help="write the cases here")
    a = ap.parse_args()
    why = can_make_namespaces()
    if why:
        sys.exit("fanout bench network: " + why)
    if shutil.which("tc") is None:
        sys.exit("fanout bench network: the tc command (iproute2) is missing")
    rates = {r: parse_rate(r) for r in a.rates.split(",") if r}
    paths = [p for p in a.paths.split(",") if p]
    fractions = [float(f) for f in a.cache_fractions.split(",") if f]
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="fanout-bench-network-"))
    need = (2 ** a.scale) * (128 * 4 + 16 * 8 * 2) * 2
    free = shutil.disk_usage(work).free
    if free < need:
        sys.exit("fanout bench network: needs about %.1f GB free in %s, has %.1f GB" % (need / 1e9, work, free / 1e9))
    remove_leftovers()
    data = work / ("rmat%d-2parts-128" % a.scale)
    if not (data / "meta.json").exists():
        log("partitioning R-MAT scale %d with 128-dim features into 2 parts" % a.scale)
        subprocess.run([str(BIN / "fanout-partition"), "--format", "rmat", "--rmat-scale", str(a.scale),
                        "--feature-dim", "128", "--parts", "2", "--method", "random",
                        "--output", str(data), "--force", "--quiet"], check=True)
    hosts = Hosts(2)
    env = dict(os.environ, UCX_TLS="tcp,self", UCX_NET_DEVICES=hosts.bridge)
    server_env = dict(env, UCX_NET_DEVICES="eth0")
    runs = {}
    try:
        hosts.create()
        why = hosts.reachable(1)
        if why:
            sys.exit("fanout bench network: " + why)
        servers = ",".join(hosts.start_server(i + 1, data, i, server_env) for i in range(2))
        devs = ",".join(hosts.veth(i + 1) for i in range(2))
        for rnd in range(a.rounds):
            for rate_name, bits in rates.items():
                for i in range(2):
                    hosts.shape(i + 1, bits)
                for path in paths:
                    for f in fractions:
                        out = subprocess.run(
                            [str(BIN / "fanout-bench-network-client"), "--servers", servers, "--path", path,
                             "--cache-fraction", str(f), "--seconds", str(a.seconds), "--count-dev", devs,
                             "--link-bytes-per-s", str(2 * bits / 8)],
                            env=env, capture_output=True, text=True, timeout=600)
                        if out.returncode != 0:
                            log("%s %s cache %.0f%%: failed: %s" % (rate_name, path, f * 100,
                                                                    (out.stderr or out.stdout)[-800:]))
                            continue
                        r = json.loads(out.stdout.strip().splitlines()[-1])
                        runs.setdefault((rate_name, path, f), []).append(r)
                        log("round %d, %s x2, %s, cache %.0f%%: %.2f batches/s, %.1f MB/batch on the links, "
                            "utilisation %.2f" % (rnd + 1, rate_name, path, f * 100, r["batches_per_s"],
                                                  r["bytes_per_batch"] / 1e6, r["link_utilisation"]))
    finally:
        hosts.destroy()
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    cases = []
    for (rate_name, path, f), rs in sorted(runs.items()):
        med = {k: statistics.median(r[k] for r in rs)
               for k in ("batches_per_s", "bytes_per_batch", "link_bytes_per_s", "link_utilisation",
                         "feature_bytes_per_batch", "cache_hit_rate", "edges_per_batch")}
        case = {"case": "network", "rate": rate_name, "links": 2, "link_bits_per_s": rates[rate_name],
                "path": path, "cache_fraction": f, "scale": a.scale, "feature_dim": 128, "rounds": len(rs), **med}
        base = runs.get((rate_name, path, 0.0))
        if f > 0 and base:
            b_bps = statistics.median(r["batches_per_s"] for r in base)
            b_bpb = statistics.median(r["bytes_per_batch"] for r in base)
            case["cache_speedup"] = med["batches_per_s"] / b_bps if b_bps else 0
            case["byte_ratio"] = med["bytes_per_batch"] / b_bpb if b_bpb else 0
        cases.append(case)
    print(json.dumps(cases, indent=2))
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(cases, indent=2) + "\n")
        log("wrote " + a.json)


def parse_rate(text):
    t = text.strip().lower()
    for suffix, mult in (("gbit", 10**9), ("mbit", 10**6), ("kbit", 10**3), ("bit", 1)):
        if t.endswith(suffix):
            return int(float(t[: -len(suffix)]) * mult)
    sys.exit("fanout bench network: a rate like 1gbit or 500mbit, not %r" % text)


if __name__ == "__main__":
    main()
