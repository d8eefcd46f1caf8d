"""Shared fixtures of the deployment tests: the binaries and a partitioned Cora."""

import os
import subprocess
from pathlib import Path

import pytest

SOURCE = Path(os.environ.get("FANOUT_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BIN = Path(os.environ.get("FANOUT_BIN_DIR", SOURCE / "build" / "bin"))


@pytest.fixture(scope="session")
def cora2(tmp_path_factory):
    """Cora (Planetoid split) in two METIS partitions, as the cora-2x2 overlay serves."""
    out = tmp_path_factory.mktemp("datasets") / "cora2"
    subprocess.run([str(BIN / "fanout-partition"), "--format", "planetoid", "--input",
                    str(SOURCE / "datasets" / "data" / "planetoid" / "cora"), "--parts", "2", "--output", str(out),
                    "--quiet"], check=True, timeout=300, stdout=subprocess.DEVNULL)
    return out
