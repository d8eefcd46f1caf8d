"""The wheel, as a user gets it: built once (./run wheel: pip wheel with scikit-build-core), installed into a
fresh virtual environment without the system's site packages (torch and numpy come from the system through
one .pth file: the extension links no torch, whichever one imports is the one used), then a small training
through a LocalCluster whose servers are the wheel's own fanout-server, found on PATH. Prints the wheel's size
and the time from an empty venv to the first batch (docs/BENCHMARKS.md, "The wheel")."""
import os
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("FANOUT_SOURCE_DIR", os.path.join(HERE, "..", ".."))

TRAIN = r'''
import os, sys, time
import torch
import torch.nn.functional as F
import fanout

venv = os.path.realpath(sys.prefix)
assert os.path.realpath(fanout.__file__).startswith(venv), fanout.__file__
server = fanout.find_binary("fanout-server")
assert os.path.realpath(server).startswith(venv), server   # the wheel's command, on PATH
cora = fanout.partition(os.path.join(sys.argv[1], "datasets/data/planetoid/cora"), sys.argv[2], format="planetoid",
                        parts=2)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(1433, 64), torch.nn.ReLU(), torch.nn.Linear(64, 7))
opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
with fanout.LocalCluster(cora) as lc:
    cluster = lc.cluster()
    loader = fanout.NodeLoader(cluster, "train", num_neighbors=[10, 10], batch_size=64, seed=0)
    first = None
    for epoch in range(20):
        for b in loader:
            if first is None:
                first = time.time()
            opt.zero_grad()
            F.cross_entropy(model(b.x)[:b.batch_size], b.y[:b.batch_size]).backward()
            opt.step()
    right = total = 0
    for b in fanout.NodeLoader(cluster, "test", num_neighbors=[1], batch_size=1000, shuffle=False):
        right += int((model(b.x)[:b.batch_size].argmax(1) == b.y[:b.batch_size]).sum())
        total += b.batch_size
print("first_batch_at", first)
print("torch", torch.__version__, "accuracy", right / total)
'''


@pytest.fixture(scope="module")
def wheel():
    """The wheel, built once for this module by ./run wheel."""
    out = subprocess.run(["bash", os.path.join(ROOT, "run"), "wheel"], capture_output=True, text=True,
                         timeout=2400)
    assert out.returncode == 0, out.stderr[-6000:]
    path = out.stdout.strip().split("\n")[-1]
    assert path.endswith(".whl") and os.path.exists(path), out.stdout
    return path


def test_the_wheel_keeps_the_torch_a_system_site_packages_venv_already_has(wheel, tmp_path):
    """README's install: a venv with --system-site-packages over Debian's python3-torch (1.13.0a0). Installing
    the wheel with its dependencies and no index at all succeeds only if the torch already there satisfies
    them: nothing is downloaded, no second torch lands in the venv, and python -m fanout names Debian's."""
    probe = subprocess.run(["/usr/bin/python3", "-c", "import torch; print(torch.__version__); print(torch.__file__)"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.fail("the system's python3 has no torch: %s" % probe.stderr)
    system_version, system_file = probe.stdout.split()
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(venv)], check=True,
                   timeout=300)
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "--no-index", "--disable-pip-version-check", wheel],
                         capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stdout + pip.stderr  # with --no-index, a torch to fetch fails here
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert not [n for n in os.listdir(purelib) if n.lower().startswith("torch")], os.listdir(purelib)
    env = {k: v for k, v in os.environ.items() if k not in ("FANOUT_BIN_DIR", "PYTHONPATH")}
    said = subprocess.run([str(venv / "bin" / "python"), "-m", "fanout"], capture_output=True, text=True,
                          env=env, cwd=str(tmp_path), timeout=120)
    assert said.returncode == 0, said.stdout + said.stderr
    assert "torch %s (%s)" % (system_version, os.path.dirname(system_file)) in said.stdout, said.stdout


def test_the_wheel_installs_into_a_fresh_venv_and_trains(wheel, tmp_path):
    size_mb = os.path.getsize(wheel) / 2**20
    print("wheel %s: %.1f MiB" % (os.path.basename(wheel), size_mb))

    t0 = time.time()
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    # torch and numpy from the system (this machine's are Debian's), nothing else of its site packages.
    system = venv / "system"
    system.mkdir()
    probe = subprocess.run(["/usr/bin/python3", "-c", "import torch, numpy, os; "
                            "print(os.path.dirname(os.path.dirname(torch.__file__)))"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.fail("the system's python3 has no torch to lend the venv: %s" % probe.stderr)
    site = probe.stdout.strip()
    for name in ("torch", "numpy", "typing_extensions.py"):
        if os.path.exists(os.path.join(site, name)):
            os.symlink(os.path.join(site, name), system / name)
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(purelib, "system-torch.pth"), "w") as f:
        f.write(str(system) + "\n")
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "--no-deps", "--no-index",
                          "--disable-pip-version-check", "-q", wheel], capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    for command in ("fanout-server", "fanout-partition", "fanout-spark-task", "fanout-ctl"):
        v = subprocess.run([str(venv / "bin" / command), "--version"], capture_output=True, text=True, timeout=60)
        assert v.returncode == 0 and "0." in v.stdout + v.stderr, (command, v.stdout, v.stderr)

    env = {k: v for k, v in os.environ.items() if k not in ("FANOUT_BIN_DIR", "PYTHONPATH")}
    env["PATH"] = "%s:/usr/bin:/bin" % (venv / "bin")
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    run = subprocess.run([str(py), str(script), ROOT, str(tmp_path / "cora2")], capture_output=True, text=True,
                         env=env, cwd=str(tmp_path), timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = dict(l.split(" ", 1) for l in run.stdout.strip().split("\n") if " " in l)
    first = float(lines["first_batch_at"])
    accuracy = float(run.stdout.strip().split()[-1])
    print("from an empty venv to the first batch: %.1f s; %s" % (first - t0, lines["torch"]))
    assert accuracy > 0.45, run.stdout  # a trained model (an MLP on Cora's features), not chance (0.14)
