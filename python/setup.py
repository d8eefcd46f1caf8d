"""Installs the fanout package that `./run build` laid out in build/python
(the compiled fanout._core included): `pip install build/python`.

The extension is built by CMake with the rest of Fanout (it links the C++
client's static libraries), not by this file: run `./run build` first.
"""
import glob
import os
import sys

from setuptools import setup
from setuptools.dist import Distribution

here = os.path.dirname(os.path.abspath(__file__))
if not glob.glob(os.path.join(here, "fanout", "_core*.so")):
    sys.exit("fanout/_core*.so is missing: build Fanout first (./run build), then "
             "pip install build/python (this file's copy in the build tree)")


def _release():
    info = {}
    with open(os.path.join(here, "fanout", "_build_info.py")) as f:
        exec(f.read(), info)
    return info["RELEASE"]


class BinaryDistribution(Distribution):
    def has_ext_modules(self):  # a platform wheel: it carries a compiled module
        return True


setup(
    name="fanout",
    version=_release(),
    description="Distributed graph sampling for GNN training (Fanout's client for PyTorch)",
    packages=["fanout"],
    package_data={"fanout": ["_core*.so"]},
    python_requires=">=3.9",
    distclass=BinaryDistribution,
    zip_safe=False,
)
