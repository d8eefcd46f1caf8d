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
