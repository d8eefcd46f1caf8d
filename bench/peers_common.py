"""What the distributed sides of `./run bench peers` share (bench/peers_dist_*.py): the timed window over a
trainer's batches and the CPU seconds of the processes that made them. Pure Python: each side imports it
under its own system's interpreter."""

import os
import resource
import time


def _stat(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()  # from field 3 (state) on: ppid [1], utime [11], stime [12]


def proc_cpu_seconds(pid):
    """utime + stime of process `pid` (all its threads)."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(root):
    """utime + stime of `root` and of every descendant alive now (GLT's sampling workers are processes)."""
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                fields = _stat(int(name))
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append((int(name), int(fields[11]) + int(fields[12])))
    try:
        fields = _stat(root)
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12])
    todo = [root]
    while todo:
        for pid, t in children.get(todo.pop(), []):
            ticks += t
            todo.append(pid)
    return ticks / os.sysconf("SC_CLK_TCK")


def self_cpu_seconds():
    """This process's CPU seconds, and its reaped children's."""
    u = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime + c.ru_utime + c.ru_stime


def endless(loader):
    """The loader's batches, epoch after epoch; an epoch with none is an error (it would spin)."""
    while True:
        empty = True
        for item in loader:
            empty = False
            yield item
        if empty:
            raise SystemExit("an epoch gave no batch: fewer train ids than --batch (drop_last)")


def measure(one, warmup, seconds, server_pids, server_cpu=proc_cpu_seconds):
    """Calls one() -> (edges, nodes, feature bytes) `warmup` times, then for `seconds`; returns the window's
    batches, edges, nodes, feature bytes, wall seconds, this process's CPU seconds and each server's."""
    for _ in range(warmup):
        one()
    servers0 = [server_cpu(p) for p in server_pids]
    cpu0 = self_cpu_seconds()
    start = time.perf_counter()
    deadline = start + seconds
    batches = edges = nodes = feature_bytes = 0
    while True:
        e, v, fb = one()
        batches += 1
        edges += e
        nodes += v
        feature_bytes += fb
        if time.perf_counter() >= deadline:
            break
    wall = time.perf_counter() - start
    return {
        "batches": batches,
        "edges": edges,
        "nodes": nodes,
        "feature_bytes": feature_bytes,
        "wall_s": wall,
        "trainer_cpu_s": self_cpu_seconds() - cpu0,
        "server_cpu_s": [server_cpu(p) - s for p, s in zip(server_pids, servers0)],
    }


def add_run_options(parser):
    """A trainer's options, the same on every side."""
    parser.add_argument("--seconds", type=float, default=5.0, help="timed window after the warm-up")
    parser.add_argument("--warmup", type=int, default=3, help="untimed batches first")
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--fanouts", default="15,10,5", help="per hop, from the seeds out")


def add_partition_command(sub):
    p = sub.add_parser("partition")
    p.add_argument("graph", help="the bench's graph folder (indptr.npy, indices.npy, features.npy, train.npy)")
    p.add_argument("out", help="the partitioned dataset's folder")
