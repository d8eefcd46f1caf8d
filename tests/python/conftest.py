"""Shared fixtures: Cora (Planetoid split) partitioned in 2, served by a LocalCluster."""
import os
import sys

import pytest

ROOT = os.environ.get("FANOUT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture(scope="session")
def fanout():
    import fanout as f
    return f


@pytest.fixture(scope="session")
def cora2(tmp_path_factory, fanout):
    out = tmp_path_factory.mktemp("data") / "cora2"
    return fanout.partition(os.path.join(ROOT, "datasets", "data", "planetoid", "cora"), out, format="planetoid",
                            parts=2)


@pytest.fixture(scope="session")
def local(cora2, fanout):
    with fanout.LocalCluster(cora2) as lc:
        yield lc


@pytest.fixture(scope="session")
def cluster(local):
    return local.cluster()


@pytest.fixture(scope="session")
def movielens2(tmp_path_factory, fanout):
    """MovieLens ml-latest-small (users, movies, genres; reverse relations) partitioned in 2."""
    out = tmp_path_factory.mktemp("data") / "ml2"
    return fanout.partition(os.path.join(ROOT, "datasets", "data", "movielens", "ml-latest-small"), out,
                            format="movielens", parts=2, undirected=True)


@pytest.fixture(scope="session")
def movielens_timed(tmp_path_factory, fanout):
    """MovieLens ml-latest-small with its ratings' and tags' timestamps (has_genre edges at time 0; reverse
    relations) partitioned in 2: (dataset folder, each edge's time by edge id: ratings, tags, has_genre in file
    order, then their reverses in the same order)."""
    import csv
    import torch
    src = os.path.join(ROOT, "datasets", "data", "movielens", "ml-latest-small")

    def stamps(name):
        with open(os.path.join(src, name), newline="", encoding="utf-8") as f:
            return [int(r["timestamp"]) for r in csv.DictReader(f)]

    with open(os.path.join(src, "movies.csv"), newline="", encoding="utf-8") as f:
        genre_edges = sum(len([g for g in r["genres"].split("|") if g]) for r in csv.DictReader(f))
    once = stamps("ratings.csv") + stamps("tags.csv") + [0] * genre_edges
    out = tmp_path_factory.mktemp("data") / "mlt2"
    folder = fanout.partition(src, out, format="movielens", parts=2, undirected=True, edge_times=True)
    return folder, torch.tensor(once + once)


@pytest.fixture(scope="session")
def college_msg(tmp_path_factory, fanout):
    """CollegeMsg with its timestamps partitioned in 2 (random): (dataset folder, each edge's time in file
    order, which is edge id order)."""
    import gzip
    import torch
    path = os.path.join(ROOT, "datasets", "data", "snap-temporal", "CollegeMsg.txt.gz")
    with gzip.open(path, "rt") as f:
        times = torch.tensor([int(line.split()[2]) for line in f])
    out = tmp_path_factory.mktemp("data") / "cm2"
    return fanout.partition(path, out, format="snap", parts=2, method="random", edge_times=True), times


def cpp_example(fanout):
    """(A helper, not a fixture.) The C++ example program: in a build tree only (the wheel carries the package and its three commands;
    ./run test runs these tests, ./run torch2 runs the wheel where there is none)."""
    try:
        return fanout.find_binary("train-graphsage")
    except fanout.NotFound:
        pytest.skip("train-graphsage (the C++ LibTorch example) is not installed here: it is in build/bin only")
