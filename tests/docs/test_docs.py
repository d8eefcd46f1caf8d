"""Every fenced code block of README.md and docs/*.md, run, so that the docs cannot drift from the code.

How each kind runs (the block's fence names it):
- sh: bash, from the repository's root, with the built commands first on PATH (as after pip install) and
  HOME a fresh folder. Commands for machines this one is not are stubs that check their arguments
  instead: kubectl (apply -k needs the kustomization, create secret its --from-file flags), sbatch (the
  script exists and parses) and sudo (runs the command: the tests run as root). The README's `./run test`
  is what runs this test, so that one line is not run again.
- python: the interpreter of the tests, with the built package (and PyG) on its path, from the root.
- cpp: a program; the build writes each block out and compiles it (tests/CMakeLists.txt), this checks the
  compiled source is the block as it is now and runs it against two servers of Cora on 9100 and 9101.
- json: parsed. tenants: a tenants file a server must accept (a token_file it names is made).
- console: `$ command` lines run (two servers of Cora with a tenants file up on 9100/9101, admin 9200/9201,
  and /tmp/cora2 partitioned); the header line the block shows must be in the output.
- text: not code (sample output), not run.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import doc_blocks  # noqa: E402

ROOT = os.environ.get("FANOUT_SOURCE_DIR", os.path.join(HERE, "..", ".."))
BIN = os.environ.get("FANOUT_BIN_DIR", os.path.join(ROOT, "build", "bin"))
BUILD = os.path.dirname(BIN)

ALL = []
for _path in doc_blocks.doc_files(ROOT):
    _cpp = 0
    for _line, _lang, _text in doc_blocks.blocks(_path):
        _name = None
        if _lang == "cpp":
            _name = doc_blocks.cpp_name(_path, _cpp)
            _cpp += 1
        ALL.append((os.path.relpath(_path, ROOT), _line, _lang, _text, _name))
KNOWN = {"sh", "python", "cpp", "json", "tenants", "console", "text"}


def test_every_block_has_a_kind_this_test_runs():
    unknown = ["%s:%d %r" % (f, line, lang) for f, line, lang, _, _ in ALL if lang not in KNOWN]
    assert not unknown, "blocks without a known kind (give the fence one of %s): %s" % (sorted(KNOWN), unknown)
    assert sum(1 for b in ALL if b[2] != "text") >= 15


STUBS = {
    "sudo": """#!/bin/sh
[ "$(id -u)" = 0 ] || { echo "sudo stub: the docs tests run as root" >&2; exit 1; }
exec "$@"
""",
    "kubectl": r"""#!/bin/sh
# A stub for docs tests: checks what a command names, talks to no cluster.
while [ $# -gt 0 ]; do
  case "$1" in
    -k) [ -f "$2/kustomization.yaml" ] || { echo "kubectl stub: no kustomization in $2" >&2; exit 1; }
        python3 -c 'import sys, yaml; yaml.safe_load(open(sys.argv[1]))' "$2/kustomization.yaml" || exit 1; shift ;;
    --from-file=*) case "$1" in *=*=*) ;; *) echo "kubectl stub: $1 names no key" >&2; exit 1 ;; esac ;;
  esac
  shift
done
""",
    "sbatch": r"""#!/bin/sh
for a in "$@"; do case "$a" in -*) ;; *) script="$a" ;; esac; done
[ -f "$script" ] || { echo "sbatch stub: no script $script" >&2; exit 1; }
bash -n "$script"
""",
}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    stubs = tmp_path_factory.mktemp("stubs")
    for name, text in STUBS.items():
        p = stubs / name
        p.write_text(text)
        p.chmod(0o755)
    home = tmp_path_factory.mktemp("home")
    e = dict(os.environ)
    # /usr/bin next: `python3` in a block is the interpreter the package was built for (Debian's), not a
    # pyenv shim that happens to come first on this machine's PATH.
    e["PATH"] = "%s:%s:/usr/bin:%s" % (stubs, BIN, e.get("PATH", ""))
    e["HOME"] = str(home)
    # The admin credential the docs' tenants servers run with (docs/TENANTS.md: --admin-token-file), in the
    # blocks' home folder where their `fanout-ctl --auth-token-file ~/admin.token` finds it.
    (home / "admin.token").write_text("docs-admin-credential-0123456789\n")
    # pip install . builds where test_wheel.py built: the same build folder, so incrementally.
    e["SKBUILD_BUILD_DIR"] = os.path.join(BUILD, "wheel-build")
    return e


def by_kind(kind):
    return [pytest.param(b, id="%s:%d" % (b[0], b[1])) for b in ALL if b[2] == kind]


def run(cmd, env, timeout, **kw):
    """Runs cmd in its own process group; its output goes to a file, not a pipe, so that a server a
    failed block left in the background cannot hold this test open. Whatever is left is killed."""
    with tempfile.TemporaryFile(mode="w+") as log:
        p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True, **kw)
        timed_out = False
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)  # whatever a block left running
            except ProcessLookupError:
                pass
            p.wait()
            # ... gone before the next block binds the same ports (zombies aside: 5 s at most).
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                try:
                    os.killpg(p.pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)
        log.seek(0)
        out = log.read()
    if timed_out:
        pytest.fail("timed out after %d s:\n%s" % (timeout, out[-4000:]))
    return p.returncode, out


@pytest.mark.parametrize("block", by_kind("sh"))
def test_shell_block(block, env):
    path, line, _, text, _ = block
    script = "\n".join(": ./run test is what runs this test" if re.match(r"^\s*\./run test\b", l) else l
                       for l in text.split("\n"))
    rc, out = run(["bash", "-e", "-o", "pipefail", "-c", script], env, timeout=2400)
    assert rc == 0, "%s:%d exited %d:\n%s" % (path, line, rc, out[-6000:])


@pytest.mark.parametrize("block", by_kind("python"))
def test_python_block(block, env):
    path, line, _, text, _ = block
    rc, out = run([sys.executable, "-c", text], env, timeout=900)
    assert rc == 0, "%s:%d exited %d:\n%s" % (path, line, rc, out[-6000:])


@pytest.mark.parametrize("block", by_kind("json"))
def test_json_block(block):
    path, line, _, text, _ = block
    try:
        json.loads(text)
    except ValueError as e:
        pytest.fail("%s:%d is not JSON: %s" % (path, line, e))


class Servers:
    """Two servers of Cora (2 parts) on 9100/9101, admin 9200/9201, with `args`."""

    def __init__(self, env, args=()):
        self.dir = tempfile.mkdtemp(prefix="fanout-docs-")
        subprocess.run([os.path.join(BIN, "fanout-partition"), "--format", "planetoid", "--input",
                        os.path.join(ROOT, "datasets", "data", "planetoid", "cora"), "--parts", "2", "--output",
                        "/tmp/cora2", "--force", "--quiet"], check=True, env=env, capture_output=True)
        self.procs = []
        for p in (0, 1):
            ready = os.path.join(self.dir, "p%d.ready" % p)
            self.procs.append(subprocess.Popen(
                [os.path.join(BIN, "fanout-server"), "--dataset", "/tmp/cora2", "--partition", str(p), "--port",
                 str(9100 + p), "--admin-port", str(9200 + p), "--ready-file", ready, *args],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env))
            deadline = time.monotonic() + 60
            while not (os.path.exists(ready) and os.path.getsize(ready) > 0):
                assert self.procs[-1].poll() is None, "fanout-server exited (ports 9100/9101 taken?)"
                assert time.monotonic() < deadline, "fanout-server did not become ready"
                time.sleep(0.05)

    def stop(self):
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.wait(timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.mark.parametrize("block", by_kind("cpp"))
def test_cpp_block(block, env):
    path, line, _, text, name = block
    source = os.path.join(BUILD, "docs", name + ".cc")
    assert os.path.exists(source), "the build has no %s (reconfigure: cmake %s)" % (source, BUILD)
    assert open(source).read() == text, "%s is not %s:%d as it is now: rebuild" % (source, path, line)
    servers = Servers(env)
    try:
        rc, out = run([os.path.join(BIN, name)], env, timeout=300)
    finally:
        servers.stop()
    assert rc == 0, "%s:%d (%s) exited %d:\n%s" % (path, line, name, rc, out[-4000:])


def tenants_file(text, folder):
    for m in re.finditer(r"token_file=(\S+)", text):
        with open(os.path.join(folder, m.group(1)), "w") as f:
            f.write("a-token-from-a-file-0123456789\n")
    path = os.path.join(folder, "tenants.conf")
    with open(path, "w") as f:
        f.write(text)
    return path


def admin_args(env):
    return ["--admin-token-file", os.path.join(env["HOME"], "admin.token")]


@pytest.mark.parametrize("block", by_kind("tenants"))
def test_tenants_block(block, env, tmp_path):
    path, line, _, text, _ = block
    conf = tenants_file(text, str(tmp_path))
    servers = Servers(env, ["--tenants", conf] + admin_args(env))  # a bad file stops the server: this fails
    servers.stop()


@pytest.mark.parametrize("block", by_kind("console"))
def test_console_block(block, env, tmp_path):
    path, line, _, text, _ = block
    lines = text.strip("\n").split("\n")
    commands = [l[2:] for l in lines if l.startswith("$ ")]
    shown = [l for l in lines if not l.startswith("$ ")]
    assert commands, "%s:%d: a console block shows at least one `$ command`" % (path, line)
    tenants = [b for b in ALL if b[2] == "tenants"]
    conf = tenants_file(tenants[0][3], str(tmp_path)) if tenants else None
    servers = Servers(env, ["--tenants", conf] + admin_args(env) if conf else [])
    try:
        out = ""
        for c in commands:
            rc, o = run(["bash", "-c", c], env, timeout=120)
            assert rc == 0, "%s:%d: `%s` exited %d:\n%s" % (path, line, c, rc, o)
            out += o
    finally:
        servers.stop()
    # The block's header line (its words all column names) is the output's.
    headers = [l for l in shown if l.split() and all(re.fullmatch(r"[A-Za-z][A-Za-z0-9.]*", w) for w in l.split())]
    for h in headers[:1]:
        missing = [w for w in h.split() if w not in out.split()]
        assert not missing, "%s:%d: the output lacks %s of the header the docs show:\n%s" % (path, line, missing, out)
