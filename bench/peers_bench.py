"""./run bench peers: Fanout's sampler beside its peers' on the same graph.

Not in CI. Each peer goes into a virtual environment of its own under
BUILD/peers/ with the torch it was built for, pinned (PEERS below); the PyG
baseline uses the venv `./run` keeps for the PyG tests (BUILD/pydeps: Debian's
torch 1.13 with the torch-sparse `./run` builds), since PyG's own CPU sampler
needs pyg-lib or torch-sparse and PyPI carries neither as a wheel. A peer that
cannot be installed or run is reported with the reason and the rest run.

The graph: R-MAT (a, b, c = 0.57, 0.19, 0.19, 16 edges per node, as
fanout-partition's generator) at each --scales, drawn here with NumPy from a
fixed seed and written once as an int64 CSR whose row v holds v's
in-neighbors (BUILD/peers/graph-s<scale>/indptr.npy, indices.npy), with a
seeded 10% train split. Every system is handed those same arrays and samples
those same rows: fanouts [15, 10, 5], batches of 1,024 train ids in an order
the bench shuffles per round and hands every system.

Case in_process: one thread pinned to CPU 0 per system (torch's threads set to
1), each system's documented in-process sampling call (bench/peers_worker.py
and fanout-bench-peers-worker say which), the systems alternated within each of
--rounds rounds (the first system of a round rotates), medians. The figure is
sampled edges per CPU-second of the process (`edges_per_cpu_s`, "per core");
each system's edges per batch is reported beside it, since GraphBolt resamples
the nodes of earlier hops and so samples more per batch than the others.
`ratio_best_peer` = Fanout's edges per CPU-second / the best peer's in the same round,
median over rounds (target >= 10); `ratios` the same per peer.

Cases distributed_best and distributed_like_for_like (at --dist-scale, 20 by
default): the same graph with 128-dim float32 features (seeded, written once
as features.npy), split in 2 at random by each system's own partitioner, 2
servers and 1 trainer on this host, batches of 1,024 train ids with [15, 10, 5]
and every batch's feature rows read, for --seconds after a warm-up, the
systems alternated within rounds. The figure is batches per CPU-second summed
over every process of the system (trainer and both servers: /proc's utime +
stime over the trainer's timed window), with batches/s, edges and feature
bytes per batch beside it; ratios are taken within each round and the median
over rounds kept.
- distributed_best: each system in its best documented same-host setting.
  Fanout: data_plane "auto", both servers' exports read in the trainer
  (bench/peers_dist_fanout.py --mode best). DistDGL: its trainer on machine 0,
  partition 0 in shared memory and partition 1 over DGL's RPC, the second
  "machine" being a server in a private /dev/shm (bench/peers_dist_dgl.py):
  DistDGL maps only its own machine's partition. `ratio_distdgl` = Fanout's
  batches per CPU-second / DistDGL's (target >= 10).
- distributed_like_for_like: Fanout the way DistDGL runs: partition 0
  through its export, partition 1 over Thrift (`fanout_thrift`: its server
  with --local-socket off --data-plane off) and over UCX (`fanout_ucx`:
  --local-socket off), beside the same DistDGL run (target >= 5 each).
  GraphLearn-for-PyTorch in distributed_best: its server-client mode, one CPU
  sampling worker (a process) per server sampling that server's train ids,
  batches sent to the trainer (bench/peers_dist_glt.py); its servers' CPU is
  that of their process trees (`ratio_glt`).

--json writes a JSON array of cases. --cleanup removes the graph files at the
end (the venvs stay: they take minutes to install); --remove-venvs removes
those too.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> (venv folder, pip install steps, import check). Versions pinned:
# DGL 2.1.0 is the last release on PyPI and carries GraphBolt for torch up to
# 2.2.1; graphlearn-torch 0.2.4's wheel is built against torch 2.3.0 (pre-C++11
# ABI, as PyPI's torch). --no-deps where the package pins a torch of its own
# (torchdata) or would pull a second one.
PEERS = {
    "dgl": (
        "venv-dgl",
        [
            ["torch==2.2.1", "numpy==1.26.4"],
            ["--no-deps", "dgl==2.1.0", "torchdata==0.7.1"],
            ["scipy==1.13.1", "networkx==3.3", "pandas==2.2.3", "requests", "tqdm", "psutil", "pyyaml", "pydantic"],
        ],
        "import dgl.graphbolt",
    ),
    # graphlearn_torch imports torch_sparse, which PyPI has as source only: it
    # is built here against the venv's torch (no cache: pip would otherwise
    # reuse a wheel it built for another torch, which then aborts on import).
    "glt": (
        "venv-glt",
        [
            ["torch==2.3.0", "numpy==1.26.4"],
            ["--no-deps", "graphlearn-torch==0.2.4"],
            ["torch-geometric==2.5.3", "scipy==1.13.1", "wheel"],
            [
                "--no-deps",
                "--no-build-isolation",
                "--no-cache-dir",
                "torch-scatter==2.1.2",
                "torch-sparse==0.6.18",
            ],
        ],
        "import graphlearn_torch",
    ),
}
# What a fresh install of both venvs takes on disk (torch with its CUDA
# libraries, twice), and a graph at scale 22 (indices and indptr).
VENV_BYTES = 12 << 30


# The peers' venvs run without this process's PYTHONPATH: `./run` puts the
# fanout package and the PyG venv (Debian's torch 1.13 and what was built
# for it) there, and a venv's own packages must not be shadowed by them.
PEER_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def log(msg):
    print("peers: " + msg, flush=True)


def rmat_edges(scale, edge_factor, seed, chunk=1 << 22):
    """R-MAT edges (src, dst) with a, b, c = 0.57, 0.19, 0.19, drawn in chunks."""
    rng = np.random.default_rng(seed)
    total = edge_factor << scale
    src = np.empty(total, dtype=np.int64)
    dst = np.empty(total, dtype=np.int64)
    a, b, c = 0.57, 0.19, 0.19
    for lo in range(0, total, chunk):
        hi = min(total, lo + chunk)
        s = np.zeros(hi - lo, dtype=np.int64)
        d = np.zeros(hi - lo, dtype=np.int64)
        for bit in range(scale):
            r = rng.random(hi - lo)
            down = r >= a + b  # quadrants c and d: the source's bit is set
            right = ((r >= a) & (r < a + b)) | (r >= a + b + c)  # b and d: the destination's
            s |= down.astype(np.int64) << bit
            d |= right.astype(np.int64) << bit
        src[lo:hi] = s
        dst[lo:hi] = d
    return src, dst


def write_json(path, obj):
    """Writes `obj` to `path` whole: aside, then renamed over it."""
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f)
    os.replace(path + ".tmp", path)


def ensure_graph(work, scale, seed):
    folder = os.path.join(work, "graph-s%d" % scale)
    meta_path = os.path.join(folder, "meta.json")
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
        if meta.get("seed") == seed:
            return folder, meta
    os.makedirs(folder, exist_ok=True)
    log("drawing R-MAT scale %d (%d edges, seed %d) ..." % (scale, 16 << scale, seed))
    t = time.time()
    src, dst = rmat_edges(scale, 16, seed)
    n = 1 << scale
    log("  sorting by destination (%.0f s so far) ..." % (time.time() - t))
    perm = np.argsort(dst, kind="stable")
    indices = src[perm]
    del perm, src
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    del dst
    rng = np.random.default_rng(seed + 1)
    train = np.sort(rng.choice(n, size=n // 10, replace=False)).astype(np.int64)
    for name, arr in (("indptr", indptr), ("indices", indices), ("train", train)):
        tmp = os.path.join(folder, name + ".tmp.npy")
        np.save(tmp, arr)
        os.replace(tmp, os.path.join(folder, name + ".npy"))
    meta = {
        "scale": scale,
        "nodes": n,
        "edges": int(indices.shape[0]),
        "seed": seed,
        "train": int(train.shape[0]),
        "rows": "in-neighbors",
    }
    write_json(meta_path, meta)
    log("  written in %.0f s: %s" % (time.time() - t, folder))
    return folder, meta


def ensure_peer(work, name):
    """The peer's interpreter, or (None, why)."""
    venv, steps, check = PEERS[name]
    path = os.path.join(work, venv)
    py = os.path.join(path, "bin", "python")
    if os.path.exists(py) and subprocess.run([py, "-c", check], capture_output=True, env=PEER_ENV).returncode == 0:
        return py, None
    log("installing %s into %s (pinned; several GB the first time) ..." % (name, path))
    if not os.path.exists(py):
        r = subprocess.run([sys.executable, "-m", "venv", path], capture_output=True, text=True)
        if r.returncode != 0:
            return None, "could not make a venv: " + (r.stderr.strip() or r.stdout.strip())[-300:]
    logfile = os.path.join(work, name + "-install.log")
    with open(logfile, "a") as out:
        for step in steps:
            log("  pip install " + " ".join(step))
            r = subprocess.run(
                [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"] + step,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=dict(PEER_ENV, MAX_JOBS=str(os.cpu_count() or 1)),
            )
            if r.returncode != 0:
                return None, "pip install %s failed (log: %s)" % (" ".join(step), logfile)
    r = subprocess.run([py, "-c", check], capture_output=True, text=True, env=PEER_ENV)
    if r.returncode != 0:
        return None, "%s does not import after install: %s" % (name, r.stderr.strip()[-300:])
    return py, None


def pyg_python(build):
    py = os.path.join(build, "pydeps", "bin", "python")
    if not os.path.exists(py):
        return None, "no PyG venv at %s (./run bench peers installs it)" % os.path.dirname(os.path.dirname(py))
    r = subprocess.run([py, "-c", "import torch_geometric, torch_sparse"], capture_output=True, text=True)
    if r.returncode != 0:
        return None, (
            "torch-sparse is not built in %s (./run builds it unless FANOUT_PYG_BASELINE=0): %s"
            % (os.path.dirname(os.path.dirname(py)), r.stderr.strip().splitlines()[-1] if r.stderr else "")
        )
    return py, None


def run_worker(cmd, timeout, env=None):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return None, "timed out after %d s" % timeout
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        return None, "exit %d: %s" % (r.returncode, " | ".join(tail))
    for line in reversed(r.stdout.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line), None
    return None, "no result line in its output"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def ensure_features(folder, meta, seed, dim=128):
    path = os.path.join(folder, "features.npy")
    if os.path.exists(path) and meta.get("feature_dim") == dim:
        return
    log("drawing %d x %d float32 features ..." % (meta["nodes"], dim))
    x = np.random.default_rng(seed + 2).standard_normal((meta["nodes"], dim), dtype=np.float32)
    np.save(path + ".tmp.npy", x)
    os.replace(path + ".tmp.npy", path)
    meta["feature_dim"] = dim
    write_json(os.path.join(folder, "meta.json"), meta)


def ensure_partitioned(cmd, out, graph_meta, timeout=3600, env=None):
    """Runs `cmd` (a partitioner writing `out`) unless `out` holds the same graph already."""
    stamp = os.path.join(out, "peers-graph.json")
    want = {k: graph_meta[k] for k in ("scale", "seed", "edges")}
    if os.path.exists(stamp):
        with open(stamp) as f:
            if json.load(f) == want:
                return None
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    log("  " + " ".join(os.path.basename(c) if i < 2 else c for i, c in enumerate(cmd)))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if r.returncode != 0:
        return "partitioning failed (exit %d): %s" % (r.returncode, " | ".join((r.stderr or r.stdout).strip().splitlines()[-3:]))
    write_json(stamp, want)
    return None


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_distdgl(py, part, graph, seconds, timeout):
    """Two DistDGL servers (the second in a private /dev/shm) and the trainer; its JSON, or (None, why)."""
    script = os.path.join(HERE, "peers_dist_dgl.py")
    ip = os.path.join(part, "ip_config.txt")
    with open(ip, "w") as f:
        f.write("127.0.0.1 %d\n127.0.0.1 %d\n" % (free_port(), free_port()))
    env = dict(PEER_ENV, DGL_DIST_MODE="distributed", DGL_IP_CONFIG=ip, DGL_NUM_SERVER="1", DGL_NUM_CLIENT="1",
               DGL_CONF_PATH=os.path.join(part, "peers.json"), DGL_GRAPH_FORMAT="csc")
    logs, servers = [], []
    try:
        for sid in (0, 1):
            log_path = os.path.join(part, "server-%d.log" % sid)
            logs.append(log_path)
            cmd = [py, script, "server"]
            if sid == 1:
                cmd = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                       'mount -t tmpfs tmpfs /dev/shm && exec "$@"', "sh"] + cmd
            with open(log_path, "w") as out:
                servers.append(subprocess.Popen(cmd, env=dict(env, DGL_ROLE="server", DGL_SERVER_ID=str(sid)),
                                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True))
        deadline = time.time() + 600
        while True:
            ready = 0
            for s, path in zip(servers, logs):
                if s.poll() is not None:
                    with open(path) as f:
                        return None, "a DistDGL server exited: " + " | ".join(f.read().strip().splitlines()[-3:])
                with open(path) as f:
                    ready += "waiting for connections" in f.read()
            if ready == 2:
                break
            if time.time() > deadline:
                return None, "the DistDGL servers did not get ready in 600 s"
            time.sleep(0.5)
        cmd = [py, script, "trainer", part, "--graph", graph, "--seconds", str(seconds), "--server-pids",
               ",".join(str(s.pid) for s in servers), "--cpus", ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))]
        res, why = run_worker(cmd, timeout, env=dict(env, DGL_ROLE="client", DGL_NUM_SAMPLER="0", DGL_GROUP_ID="0"))
        return res, None if res is not None else "the DistDGL trainer: " + why
    finally:
        stop_groups(servers)


def stop_groups(procs):
    """SIGTERM to each process's group (it and the workers it started), then SIGKILL after 30 s."""
    import signal

    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


def run_glt(py, part, seconds, timeout):
    """GLT's two servers (server-client mode) and its trainer; its JSON, or (None, why)."""
    script = os.path.join(HERE, "peers_dist_glt.py")
    port, loader_port = free_port(), free_port()
    servers, logs = [], []
    try:
        for rank in (0, 1):
            log_path = os.path.join(part, "server-%d.log" % rank)
            logs.append(log_path)
            with open(log_path, "w") as out:
                servers.append(subprocess.Popen([py, script, "server", str(rank), part, "--port", str(port)],
                                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                                env=PEER_ENV))
        # The servers wait for each other and the client in init_server: the
        # trainer starts with them; their ready lines come once all have met.
        cmd = [py, script, "trainer", part, "--port", str(port), "--loader-port", str(loader_port), "--seconds",
               str(seconds), "--server-pids", ",".join(str(s.pid) for s in servers)]
        res, why = run_worker(cmd, timeout, env=PEER_ENV)
        if res is not None:
            return res, None
        tails = []
        for path in logs:
            with open(path) as f:
                tails += f.read().strip().splitlines()[-2:]
        return None, "the GLT trainer: %s | servers: %s" % (why, " | ".join(tails))
    finally:
        stop_groups(servers)


def dist_figures(res):
    cpu = res["trainer_cpu_s"] + sum(res["server_cpu_s"])
    return {
        "batches_per_s": res["batches"] / res["wall_s"],
        "cpu_s_per_batch": cpu / res["batches"],
        "batches_per_cpu_s": res["batches"] / max(cpu, 1e-9),
        "edges_per_batch": res["edges"] / res["batches"],
        "feature_bytes_per_batch": res["feature_bytes"] / res["batches"],
        "trainer_cpu_s": res["trainer_cpu_s"],
        "server_cpu_s": res["server_cpu_s"],
    }


def measure_distributed(args, build, work, systems, interpreters, skipped, folder, meta, today):
    """Cases distributed_best and distributed_like_for_like (see the top)."""
    ensure_features(folder, meta, args.seed)
    runners = {}
    failures = {}
    fanout_py = interpreters.get("fanout_py")
    if "fanout" in systems and fanout_py:
        out = os.path.join(work, "fanout-s%d" % meta["scale"])
        log("partitioning for Fanout (fanout.partition_pyg, random, 2 parts) ...")
        why = ensure_partitioned([fanout_py, os.path.join(HERE, "peers_dist_fanout.py"), "partition", folder, out], out, meta)
        if why:
            failures["fanout"] = why
        else:
            for mode in ("best", "thrift", "ucx"):
                runners["fanout_" + mode] = ("fanout", [fanout_py, os.path.join(HERE, "peers_dist_fanout.py"), "run", out,
                                                         "--mode", mode, "--bin-dir", os.path.join(build, "bin"),
                                                         "--seconds", str(args.seconds)])
    # The peers partition with their own tools, in their own venvs.
    for system, name, script, how in (("dgl", "distdgl", "peers_dist_dgl.py", "dgl.distributed.partition_graph, random"),
                                      ("glt", "glt", "peers_dist_glt.py", "glt.partition.RandomPartitioner")):
        if system not in systems:
            continue
        if system not in interpreters:
            failures[name] = skipped.get(system, "not installed")
            continue
        out = os.path.join(work, "%s-s%d" % (name, meta["scale"]))
        log("partitioning for %s (%s, 2 parts) ..." % (name, how))
        why = ensure_partitioned([interpreters[system], os.path.join(HERE, script), "partition", folder, out],
                                 out, meta, env=PEER_ENV)
        if why:
            failures[name] = why
        else:
            runners[name] = (system, out)
    names = list(runners)
    runs = {n: [] for n in names}
    log("distributed, scale %d: 2 servers + 1 trainer, features on, %d round(s) of %.0f s each"
        % (meta["scale"], args.rounds, args.seconds))
    for r in range(args.rounds):
        turn = names[r % len(names):] + names[:r % len(names)] if names else []
        for name in turn:
            if name in failures:
                continue
            kind, spec = runners[name]
            if kind == "dgl":
                res, why = run_distdgl(interpreters["dgl"], spec, folder, args.seconds, int(args.seconds * 4 + 900))
            elif kind == "glt":
                res, why = run_glt(interpreters["glt"], spec, args.seconds, int(args.seconds * 4 + 900))
            else:
                res, why = run_worker(spec, timeout=int(args.seconds * 4 + 900))
            if res is None:
                failures[name] = why
                log("  round %d %-13s failed: %s" % (r + 1, name, why))
                continue
            fig = dist_figures(res)
            fig["setting"] = res.get("setting")
            fig["versions"] = res.get("versions")
            if "paths" in res:
                fig["paths"] = [p.get("path") for p in res["paths"] or []]
            fig["round"] = r
            runs[name].append(fig)
            log("  round %d %-13s %7.2f batches/CPU-s  %7.2f batches/s  %6.3f CPU-s/batch  %8.0f edges/batch"
                % (r + 1, name, fig["batches_per_cpu_s"], fig["batches_per_s"], fig["cpu_s_per_batch"], fig["edges_per_batch"]))
    per = {}
    for name in names:
        if name in failures or not runs[name]:
            continue
        rs = runs[name]
        per[name] = {k: statistics.median(x[k] for x in rs) for k in
                     ("batches_per_cpu_s", "batches_per_s", "cpu_s_per_batch", "edges_per_batch", "feature_bytes_per_batch")}
        per[name].update(runs=len(rs), setting=rs[0]["setting"], versions=rs[0]["versions"],
                         batches_per_cpu_s_by_round=[x["batches_per_cpu_s"] for x in rs])
        if "paths" in rs[0]:
            per[name]["paths"] = rs[0]["paths"]

    def ratio(a, b):
        """Median over rounds of a's batches per CPU-second / b's in the same round."""
        if a not in per or b not in per:
            return None
        ra = {x["round"]: x["batches_per_cpu_s"] for x in runs[a]}
        rb = {x["round"]: x["batches_per_cpu_s"] for x in runs[b]}
        both = [ra[r] / rb[r] for r in sorted(ra) if r in rb]
        return statistics.median(both) if both else None

    common = {"scale": meta["scale"], "nodes": meta["nodes"], "edges": meta["edges"], "feature_dim": 128,
              "fanouts": [15, 10, 5], "batch_size": 1024, "rounds": args.rounds, "seconds": args.seconds,
              "cpu": cpu_model(), "cpus": os.cpu_count(), "date": today, "skipped": dict(failures)}
    best = dict(common, case="distributed_best",
                systems={k: per[k] for k in ("fanout_best", "distdgl", "glt") if k in per},
                ratio_distdgl=ratio("fanout_best", "distdgl"), ratio_glt=ratio("fanout_best", "glt"))
    like = dict(common, case="distributed_like_for_like",
                systems={k: per[k] for k in ("fanout_thrift", "fanout_ucx", "distdgl") if k in per},
                ratio_distdgl_thrift=ratio("fanout_thrift", "distdgl"),
                ratio_distdgl_ucx=ratio("fanout_ucx", "distdgl"))
    for c, target in ((best, 10), (like, 5)):
        log("%s: " % c["case"] + ", ".join("%s %.2f batches/CPU-s" % (k, v["batches_per_cpu_s"]) for k, v in c["systems"].items())
            + "; " + ", ".join("%s %.2fx" % (k, v) for k, v in c.items() if k.startswith("ratio") and v is not None)
            + " (target >= %d)" % target)
    return [best, like]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.environ.get("FANOUT_BUILD_DIR", os.path.join(HERE, "..", "build")))
    ap.add_argument("--scales", default="20,22", help="R-MAT scales, comma-separated")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5.0, help="timed sampling per system per round")
    ap.add_argument("--systems", default="fanout,pyg,dgl,glt")
    ap.add_argument("--cases", default="in_process,distributed",
                    help="in_process, distributed (= distributed_best and distributed_like_for_like)")
    ap.add_argument("--dist-scale", type=int, default=20, help="R-MAT scale of the distributed cases")
    ap.add_argument("--seed", type=int, default=20)
    ap.add_argument("--json", default=None)
    ap.add_argument("--cleanup", action="store_true", help="remove the graph files at the end")
    ap.add_argument("--remove-venvs", action="store_true", help="remove the peers' venvs at the end")
    args = ap.parse_args()
    if args.rounds < 1 or args.seconds <= 0:
        ap.error("--rounds must be >= 1 and --seconds > 0")
    scales = [int(s) for s in args.scales.split(",") if s]
    if any(s < 14 or s > 26 for s in scales):
        ap.error("--scales must lie in [14, 26] (below 14 the 10% train split holds less than a batch)")
    systems = [s for s in args.systems.split(",") if s]
    unknown = set(systems) - {"fanout", "pyg", "dgl", "glt"}
    if unknown:
        ap.error("unknown systems: " + ",".join(sorted(unknown)))
    wanted = set(c for c in args.cases.split(",") if c)
    if wanted - {"in_process", "distributed"}:
        ap.error("unknown cases: " + ",".join(sorted(wanted - {"in_process", "distributed"})))
    if not 15 <= args.dist_scale <= 24:
        ap.error("--dist-scale must lie in [15, 24] (GLT splits the train ids by server, each needs a batch)")
    if "in_process" not in wanted:
        scales = []
    build = os.path.abspath(args.build)
    work = os.path.join(build, "peers")
    os.makedirs(work, exist_ok=True)

    # Disk and memory first: the venvs (unless there), the graphs, and one
    # graph's arrays held by a worker (and by the bench while it draws one).
    graph_bytes = sum((16 << s) * 8 * 3 + (1 << s) * 8 for s in scales)
    if "distributed" in wanted:  # the graph, its features, and each system's partitions of both
        d = args.dist_scale
        graph_bytes += ((16 << d) * 8 * 3 + (1 << d) * (8 + 512)) * 3
    have_venvs = all(os.path.exists(os.path.join(work, PEERS[p][0], "bin", "python")) for p in PEERS if p in systems)
    need = graph_bytes + (0 if have_venvs else VENV_BYTES)
    free = shutil.disk_usage(work).free
    log("needs about %.1f GB of disk under %s (%.1f GB free)" % (need / 1e9, work, free / 1e9))
    if free < need:
        log("not enough disk: free some, or run fewer --scales")
        return 1
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    # Drawing a graph holds about 5 int64 arrays of its edges; DistDGL's
    # partitioner peaks near 7x the edges' bytes plus the features.
    top = max(scales + ([args.dist_scale] if "distributed" in wanted else []))
    biggest = (16 << top) * 8 * (7 if "distributed" in wanted else 5)
    if mem < biggest:
        log("not enough free memory for scale %d: %.1f GB needed, %.1f GB free" % (top, biggest / 1e9, mem / 1e9))
        return 1

    interpreters, skipped = {}, {}
    fanout_worker = os.path.join(build, "bin", "fanout-bench-peers-worker")
    for name in systems:
        if name == "fanout":
            if os.path.exists(fanout_worker):
                interpreters[name] = fanout_worker
            else:
                skipped[name] = "%s is not built (./run build)" % fanout_worker
            continue
        py, why = pyg_python(build) if name == "pyg" else ensure_peer(work, name)
        if py:
            interpreters[name] = py
        else:
            skipped[name] = why
            log("%s skipped: %s" % (name, why))
    if "distributed" in wanted and "fanout" in systems:
        r = subprocess.run([sys.executable, "-c", "import fanout, torch_geometric, pyarrow"], capture_output=True, text=True)
        if r.returncode == 0:
            interpreters["fanout_py"] = sys.executable
        else:
            skipped["fanout_distributed"] = ("the fanout package, torch_geometric or pyarrow does not import here "
                                             "(./run bench peers puts build/python and build/pydeps on PYTHONPATH): "
                                             + r.stderr.strip().splitlines()[-1])
    running = [s for s in systems if s in interpreters]
    cases = []
    today = datetime.date.today().isoformat()
    for scale in scales:
        folder, meta = ensure_graph(work, scale, args.seed)
        train = np.load(os.path.join(folder, "train.npy"))
        runs = {s: [] for s in running}
        failures = {}
        log(
            "in_process, scale %d: %d nodes, %d edges, %d train ids; [15,10,5], batch 1024, 1 thread, %d round(s) of %.0f s each"
            % (scale, meta["nodes"], meta["edges"], meta["train"], args.rounds, args.seconds)
        )
        for r in range(args.rounds):
            order = np.random.default_rng(args.seed * 1000 + r).permutation(train)
            order_path = os.path.join(folder, "order-%d.npy" % r)
            np.save(order_path, order)
            turn = running[r % len(running) :] + running[: r % len(running)] if running else []
            for name in turn:
                if name in failures:
                    continue
                common = ["--graph", folder, "--order", order_path, "--seconds", str(args.seconds), "--cpu", "0"]
                if name == "fanout":
                    cmd = [interpreters[name]] + common
                else:
                    cmd = [interpreters[name], os.path.join(HERE, "peers_worker.py"), "--system", name] + common
                res, why = run_worker(cmd, timeout=int(args.seconds * 4 + 600),
                                      env=PEER_ENV if name in PEERS else None)
                if res is None:
                    failures[name] = why
                    log("  round %d %-6s failed: %s" % (r + 1, name, why))
                    continue
                res["edges_per_s"] = res["edges"] / res["wall_s"]
                res["edges_per_cpu_s"] = res["edges"] / max(res["cpu_s"], 1e-9)
                res["edges_per_batch"] = res["edges"] / res["batches"]
                res["round"] = r
                runs[name].append(res)
                log(
                    "  round %d %-6s %8.2f M edges/CPU-s  %8.2f M edges/s  %9.0f edges/batch  (%d batches)"
                    % (r + 1, name, res["edges_per_cpu_s"] / 1e6, res["edges_per_s"] / 1e6, res["edges_per_batch"], res["batches"])
                )
            os.remove(order_path)
        per = {}
        for name in running:
            if name in failures or not runs[name]:
                continue
            rs = runs[name]
            per[name] = {
                "edges_per_cpu_s": statistics.median(x["edges_per_cpu_s"] for x in rs),
                "edges_per_s": statistics.median(x["edges_per_s"] for x in rs),
                "edges_per_batch": statistics.median(x["edges_per_batch"] for x in rs),
                "nodes_per_batch": statistics.median(x["nodes"] / x["batches"] for x in rs),
                "runs": len(rs),
                "versions": rs[0].get("versions", {"fanout": rs[0].get("version")}),
                "sampler": rs[0].get("sampler"),
                "edges_per_cpu_s_by_round": [x["edges_per_cpu_s"] for x in rs],
            }
        peers = {k: v for k, v in per.items() if k != "fanout"}
        best = max(peers, key=lambda k: peers[k]["edges_per_cpu_s"]) if peers else None
        # Ratios within each round (the systems ran back to back there), then
        # the median over rounds: this machine's speed drifts between rounds.
        by_round = {n: {x["round"]: x["edges_per_cpu_s"] for x in runs[n]} for n in per}
        round_best, round_each = [], {k: [] for k in peers}
        for r in range(args.rounds):
            if r not in by_round.get("fanout", {}):
                continue
            there = {k: by_round[k][r] for k in peers if r in by_round[k]}
            if there:
                round_best.append(by_round["fanout"][r] / max(there.values()))
            for k, v in there.items():
                round_each[k].append(by_round["fanout"][r] / v)
        case = {
            "case": "in_process",
            "scale": scale,
            "nodes": meta["nodes"],
            "edges": meta["edges"],
            "fanouts": [15, 10, 5],
            "batch_size": 1024,
            "threads": 1,
            "rounds": args.rounds,
            "seconds": args.seconds,
            "cpu": cpu_model(),
            "cpus": os.cpu_count(),
            "date": today,
            "systems": per,
            "skipped": dict(skipped, **failures),
            "best_peer": best,
            "ratio_best_peer": statistics.median(round_best) if round_best else None,
            "ratio_best_peer_by_round": round_best,
            "ratios": {k: statistics.median(v) for k, v in round_each.items() if v},
        }
        cases.append(case)
        line = "in_process, scale %d: " % scale + ", ".join(
            "%s %.2f M edges/CPU-s" % (k, v["edges_per_cpu_s"] / 1e6) for k, v in per.items()
        )
        log(line)
        if case["ratio_best_peer"] is not None:
            log(
                "  Fanout = %.2fx the best peer (%s) per core (target >= 10); per peer: %s"
                % (case["ratio_best_peer"], best, ", ".join("%s %.2fx" % kv for kv in case["ratios"].items()))
                + "; the best peer of each round: " + ", ".join("%.2fx" % x for x in round_best)
            )
    if "distributed" in wanted:
        folder, meta = ensure_graph(work, args.dist_scale, args.seed)
        cases += measure_distributed(args, build, work, systems, interpreters, skipped, folder, meta, today)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(cases, f, indent=1)
        log("wrote " + args.json)
    if args.cleanup:
        for scale in set(scales) | ({args.dist_scale} if "distributed" in wanted else set()):
            for name in ("graph-s%d", "fanout-s%d", "distdgl-s%d", "glt-s%d"):
                shutil.rmtree(os.path.join(work, name % scale), ignore_errors=True)
        log("removed the graph files")
    if args.remove_venvs:
        for p in PEERS:
            shutil.rmtree(os.path.join(work, PEERS[p][0]), ignore_errors=True)
        log("removed the peers' venvs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
