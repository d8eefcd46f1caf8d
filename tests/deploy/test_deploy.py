"""The deployment files (deploy/) cannot rot silently.

Every container in every Kubernetes manifest (and every binary invoked by the
Slurm script) is checked against the binary's own --help: each flag exists,
takes a value exactly when the binary says so, and literal values (after the
container's $(VAR) substitution) have the type, choice and range --help
gives. Where `kubectl` is installed, every kustomization is rendered and the
rendered objects are checked against each other: probes and scrape
annotations hit the admin port the server listens on, the cluster file names
exactly the pods the StatefulSets create, one StatefulSet per partition, and
memory requests cover what `fanout-ctl resources` computes for the dataset.

Environment: FANOUT_BIN_DIR (the built binaries), FANOUT_SOURCE_DIR (repo).
"""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

SOURCE = Path(os.environ.get("FANOUT_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BIN = Path(os.environ.get("FANOUT_BIN_DIR", SOURCE / "build" / "bin"))
DEPLOY = SOURCE / "deploy"
BINARIES = ("fanout-server", "fanout-ctl", "train-graphsage", "fanout-partition", "fanout-sample")


# --- what a binary accepts, from its --help ---------------------------------

# CLI11 writes "  --name TYPE[:CHECK][=DEFAULT]  description": the type one
# space after the name; a switch's description starts after more padding.
OPTION_LINE = re.compile(r"^  (?:-\w,)?--([\w-]+)(?: ([A-Z][A-Z0-9]+\S*(?: in \[[^\]]*\])?))?")


class Flag:
    def __init__(self, name, spec):
        self.name = name
        self.spec = spec or ""  # e.g. "INT:INT in [0 - 65535]", "TEXT:{ucx,off}=...", ""
        m = re.match(r"([A-Z]+)", self.spec)
        self.type = m.group(1) if m else None  # None: a switch, no value

    def check_value(self, value, where):
        """Raises AssertionError when a literal value cannot be what --help asks."""
        if "$" in value:  # a shell variable: only its presence is known
            return
        if self.type in ("INT", "UINT"):
            for part in value.split(","):
                assert re.fullmatch(r"-?\d+", part), f"{where}: --{self.name} wants an integer, got {value!r}"
        elif self.type == "FLOAT":
            float(value)
        choice = re.search(r"\{([^}]*)\}", self.spec)
        if choice:
            assert value in choice.group(1).split(","), f"{where}: --{self.name}={value} is not one of {{{choice.group(1)}}}"
        bounds = re.search(r"in \[(-?[\d.e+]+) - (-?[\d.e+]+)\]", self.spec)
        if bounds and self.type in ("INT", "UINT", "FLOAT"):
            lo, hi = float(bounds.group(1)), float(bounds.group(2))
            for part in value.split(","):
                assert lo <= float(part) <= hi, f"{where}: --{self.name}={part} outside [{lo:g}, {hi:g}]"


_help_cache = {}


def accepted_flags(binary, subcommand=None):
    key = (binary, subcommand)
    if key not in _help_cache:
        exe = BIN / binary
        if not exe.exists():
            pytest.fail(f"{exe} is missing: build first (FANOUT_BIN_DIR={BIN})")
        cmd = [str(exe)] + ([subcommand] if subcommand else []) + ["--help"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, f"{' '.join(cmd)} failed: {out.stderr}"
        flags = {}
        for line in out.stdout.splitlines():
            m = OPTION_LINE.match(line)
            if m:
                flags[m.group(1)] = Flag(m.group(1), m.group(2))
        assert "help" in flags, f"no options parsed from {' '.join(cmd)} --help"
        subs = []
        if "Subcommands:" in out.stdout:
            tail = out.stdout.split("Subcommands:", 1)[1]
            subs = [m.group(1) for m in re.finditer(r"^  (\w[\w-]*)\s", tail, re.M)]
        _help_cache[key] = (flags, subs)
    return _help_cache[key]


def check_command_line(argv, where):
    """argv[0] is a Fanout binary; every --flag in argv must be one it accepts."""
    binary = os.path.basename(argv[0])
    flags, subs = accepted_flags(binary)
    args = list(argv[1:])
    if subs and args and not args[0].startswith("-"):
        assert args[0] in subs, f"{where}: {binary} has no subcommand {args[0]!r} (it has {subs})"
        flags, _ = accepted_flags(binary, args[0])
        args = args[1:]
    i = 0
    checked = 0
    while i < len(args):
        tok = args[i]
        i += 1
        if not tok.startswith("--"):
            continue  # a positional, or a value consumed below
        name, eq, value = tok[2:].partition("=")
        assert name in flags, f"{where}: {binary} does not accept --{name} (its --help lists {sorted(flags)})"
        flag = flags[name]
        checked += 1
        if flag.type is None:
            assert not eq, f"{where}: --{name} is a switch and takes no value"
            continue
        if not eq:
            assert i < len(args) and not args[i].startswith("--"), f"{where}: --{name} needs a value"
            value = args[i]
            i += 1
        flag.check_value(value, where)
    return checked


# --- the Kubernetes manifests -------------------------------------------------

def yaml_documents(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def pod_specs(doc):
    """(pod spec, where) of a workload object, a patch included."""
    kind = doc.get("kind")
    spec = doc.get("spec") or {}
    if kind in ("StatefulSet", "Deployment", "DaemonSet", "Job"):
        yield (spec.get("template") or {}).get("spec") or {}
    elif kind == "Pod":
        yield spec


def substitute(value, env):
    """Kubernetes' $(VAR) expansion in command and args."""
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)), value)


def check_container(c, where, mounts_known=False):
    """Flags against --help; where the pod is whole (rendered), every absolute
    path a flag names lies inside one of the container's volume mounts."""
    command = list(c.get("command") or [])
    if not command or os.path.basename(command[0]) not in BINARIES:
        return 0
    env = {e["name"]: str(e["value"]) for e in c.get("env") or [] if "value" in e}
    argv = [substitute(str(a), env) for a in command + list(c.get("args") or [])]
    unresolved = [a for a in argv if re.search(r"\$\([A-Za-z_]", a)]
    assert not unresolved, f"{where}: {unresolved} name variables the container does not set"
    if mounts_known:
        mounts = [m["mountPath"].rstrip("/") + "/" for m in c.get("volumeMounts") or []]
        for i, a in enumerate(argv[1:], 1):
            value = a.split("=", 1)[1] if a.startswith("--") and "=" in a else a
            if value.startswith("/"):
                assert any(value.startswith(m) for m in mounts), f"{where}: {a} is not inside a mounted volume {mounts}"
    return check_command_line(argv, where)


def all_manifests():
    return sorted(p for p in (DEPLOY / "kubernetes").rglob("*.yaml") if p.name != "kustomization.yaml")


def test_every_container_uses_only_flags_the_binaries_accept():
    files = all_manifests()
    assert files, f"no manifests under {DEPLOY / 'kubernetes'}"
    checked = 0
    for path in files:
        for doc in yaml_documents(path):
            for spec in pod_specs(doc):
                for c in spec.get("containers") or []:
                    checked += check_container(c, f"{path.relative_to(SOURCE)} container {c.get('name')}")
    assert checked >= 8, f"only {checked} flags were checked: did the manifests lose their commands?"


def test_the_checker_rejects_what_the_binaries_reject():
    # The check itself must be able to fail: a flag the server lacks, a value
    # outside its range, a switch given a value, a missing value.
    bad = [
        ["fanout-server", "--dataset=/d", "--no-such-flag=1"],
        ["fanout-server", "--port=70000"],
        ["fanout-server", "--data-plane=rdma"],
        ["fanout-partition", "--undirected=yes"],
        ["train-graphsage", "--epochs"],
        ["fanout-ctl", "no-such-subcommand"],
        ["fanout-ctl", "health", "--port=1"],
    ]
    for argv in bad:
        with pytest.raises(AssertionError):
            check_command_line(argv, "test")
    assert check_command_line(["fanout-ctl", "health", "c.json", "--timeout-ms", "100"], "test") == 1
    # A file a flag names must be inside a volume the container mounts.
    pod = {"name": "x", "command": ["fanout-server"], "args": ["--dataset=/data/x", "--tls-cert=/etc/tls/a"],
           "volumeMounts": [{"name": "d", "mountPath": "/data"}]}
    with pytest.raises(AssertionError, match="not inside a mounted volume"):
        check_container(pod, "test", mounts_known=True)


def test_slurm_script_uses_only_flags_the_binaries_accept():
    script = DEPLOY / "slurm" / "fanout-train.sbatch"
    subprocess.run(["bash", "-n", str(script)], check=True)
    text = script.read_text().replace("\\\n", " ")
    checked = 0
    for line in text.splitlines():
        line = line.split("#", 1)[0] if line.lstrip().startswith("#") else line
        for binary in BINARIES:
            for m in re.finditer(r"(?:^|[\s'\"(;])(" + re.escape(binary) + r")\s+([^|;&<>]*)", line):
                words = m.group(2).replace("'", " ").replace('"', " ").split()
                if words[:1] and not words[0].startswith("-") and binary != "fanout-ctl":
                    continue  # the name as an argument (e.g. bash -c's $0), not a command
                checked += check_command_line([binary] + words, f"{script.name}: {line.strip()}")
    assert checked >= 8, f"only {checked} flags checked in {script}"


# --- rendered overlays (kubectl kustomize) ------------------------------------

def kustomizations():
    # Components only render inside the kustomizations that include them.
    return sorted(p.parent for p in (DEPLOY / "kubernetes").rglob("kustomization.yaml")
                  if yaml_documents(p)[0].get("kind") != "Component")


def render(folder):
    kubectl = shutil.which("kubectl")
    if not kubectl:
        pytest.skip("kubectl is not installed: kustomizations not rendered (raw manifests are checked above)")
    out = subprocess.run([kubectl, "kustomize", str(folder)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, f"kubectl kustomize {folder} failed:\n{out.stderr}"
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def flag_value(argv, name):
    for i, a in enumerate(argv):
        if a == f"--{name}" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
    return None


def parse_quantity(q):
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 1e3, "M": 1e6, "G": 1e9}
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([A-Za-z]*)", str(q))
    assert m, f"bad quantity {q!r}"
    return float(m.group(1)) * units.get(m.group(2), 1)


@pytest.mark.parametrize("folder", kustomizations(), ids=lambda p: str(p.relative_to(DEPLOY)))
def test_kustomization_renders_and_its_flags_are_accepted(folder):
    docs = render(folder)
    checked = 0
    for doc in docs:
        for spec in pod_specs(doc):
            for c in spec.get("containers") or []:
                checked += check_container(c, f"{folder.name}: {doc['kind']}/{doc['metadata']['name']}",
                                           mounts_known=True)
    assert checked > 0 or not any(pod_specs(d) for d in docs)


def server_container(sts):
    (c,) = [c for c in sts["spec"]["template"]["spec"]["containers"] if c.get("command", [""])[0] == "fanout-server"]
    env = {e["name"]: str(e["value"]) for e in c.get("env") or [] if "value" in e}
    argv = [substitute(str(a), env) for a in c["command"] + c.get("args", [])]
    return c, argv


@pytest.mark.parametrize("overlay", ["cora-2x2", "cora-2x2-tls"])
def test_cora_overlay_is_consistent_with_itself_and_the_dataset(cora2, overlay):
    folder = DEPLOY / "kubernetes" / "overlays" / overlay
    docs = render(folder)
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    services = {s["metadata"]["name"]: s for s in by_kind.get("Service", [])}
    stss = by_kind["StatefulSet"]
    (cm,) = [c for c in by_kind["ConfigMap"] if "cluster.json" in c.get("data", {})]
    cluster = json.loads(cm["data"]["cluster.json"])
    assert len(cluster["partitions"]) == len(stss), "one StatefulSet per partition"

    pods = {}  # "pod.service:port" -> partition served
    for sts in stss:
        c, argv = server_container(sts)
        where = f"StatefulSet/{sts['metadata']['name']}"
        parts = int(flag_value(argv, "expect-parts"))
        assert parts == len(stss), f"{where}: --expect-parts {parts}, but {len(stss)} StatefulSets"
        admin = int(flag_value(argv, "admin-port"))
        rpc = int(flag_value(argv, "port"))
        assert flag_value(argv, "bind") == "0.0.0.0", f"{where}: must listen beyond loopback"
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        assert ports["admin"] == admin and ports["rpc"] == rpc and ports["data"] == int(flag_value(argv, "data-port"))
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            get = c[probe]["httpGet"]
            assert get["path"] == "/healthz", f"{where}: {probe} path"
            assert ports.get(get["port"], get["port"]) == admin, f"{where}: {probe} is not on the admin port"
        ann = sts["spec"]["template"]["metadata"]["annotations"]
        assert ann["prometheus.io/scrape"] == "true" and int(ann["prometheus.io/port"]) == admin
        assert ann["prometheus.io/path"] == "/metrics"
        svc = services[sts["spec"]["serviceName"]]
        assert svc["spec"]["clusterIP"] == "None", f"{where}: its Service must be headless"
        selector = svc["spec"]["selector"]
        labels = sts["spec"]["template"]["metadata"]["labels"]
        assert all(labels.get(k) == v for k, v in selector.items()), f"{where}: its Service does not select its pods"
        for other in stss:
            if other is not sts:
                other_labels = other["spec"]["template"]["metadata"]["labels"]
                assert not all(other_labels.get(k) == v for k, v in selector.items()), (
                    f"{where}: its Service also selects {other['metadata']['name']}'s pods")
        for i in range(sts["spec"]["replicas"]):
            pods[f"{sts['metadata']['name']}-{i}.{svc['metadata']['name']}:{rpc}"] = int(flag_value(argv, "partition"))
        mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        assert flag_value(argv, "dataset").startswith(mounts["dataset"] + "/")

    listed = {}
    for entry in cluster["partitions"]:
        for addr in entry["replicas"]:
            listed[addr] = entry["partition"]
    assert listed == pods, f"the cluster file's replicas {listed} are not the pods {pods}"

    # The Job mounts the same ConfigMap and trains from the file in it.
    (job,) = by_kind["Job"]
    spec = job["spec"]["template"]["spec"]
    (train,) = spec["containers"]
    cluster_arg = flag_value(train["command"] + train["args"], "cluster")
    vols = {v["name"]: v for v in spec["volumes"]}

    def mounted(path, container, volumes):
        """The volume `path` lies in (the innermost mount)."""
        mount = [m for m in container["volumeMounts"] if path.startswith(m["mountPath"].rstrip("/") + "/")]
        assert mount, f"{path} is not inside a volume mounted in {container['name']}"
        return volumes[max(mount, key=lambda m: len(m["mountPath"]))["name"]]

    volume_of = lambda path, container: mounted(path, container, vols)
    assert volume_of(cluster_arg, train)["configMap"]["name"] == cm["metadata"]["name"]

    # Security: what the servers require, the cluster file gives the client,
    # from files the Job mounts; the token is the same Secret on both sides.
    _, sargv = server_container(stss[0])
    server_spec = stss[0]["spec"]["template"]["spec"]
    server_vols = {v["name"]: v for v in server_spec["volumes"]}
    (scont,) = [c for c in server_spec["containers"] if c["name"] == "fanout-server"]

    server_volume_of = lambda path: mounted(path, scont, server_vols)

    if flag_value(sargv, "tls-cert"):
        assert "tls" in cluster and cluster["tls"].get("ca"), "servers serve TLS; the cluster file has no CA"
        volume_of(cluster["tls"]["ca"], train)
    if flag_value(sargv, "tls-ca"):  # mutual TLS
        for key in ("cert", "key"):
            assert cluster["tls"].get(key), f"servers require client certificates; the cluster file has no {key}"
            volume_of(cluster["tls"][key], train)
    token = flag_value(sargv, "auth-token-file")
    if token:
        assert cluster.get("auth_token_file"), "servers require a token; the cluster file names none"
        assert (volume_of(cluster["auth_token_file"], train)["secret"]["secretName"] ==
                server_volume_of(token)["secret"]["secretName"]), "client and servers read different tokens"
    else:
        assert "auth_token_file" not in cluster and "tls" not in cluster
    # Secrets are group-readable by the pods' user.
    for pod in (spec, server_spec):
        for v in pod["volumes"]:
            if "secret" in v:
                assert pod["securityContext"].get("fsGroup") is not None, f"secret {v['name']} unreadable by non-root"
                assert v["secret"]["defaultMode"] & 0o040, f"secret {v['name']} not group-readable"

    # Memory requests cover what fanout-ctl resources computes for the
    # dataset the overlay serves (Cora, two partitions, as its comment says).
    res = subprocess.run([str(BIN / "fanout-ctl"), "resources", "--dataset", str(cora2), "--json"],
                         capture_output=True, text=True, check=True, timeout=60)
    need = json.loads(res.stdout)
    for sts in stss:
        c, argv = server_container(sts)
        p = int(flag_value(argv, "partition"))
        (row,) = [r for r in need["partitions"] if r["partition"] == p]
        req = parse_quantity(c["resources"]["requests"]["memory"])
        lim = parse_quantity(c["resources"]["limits"]["memory"])
        assert req >= row["memory_request_bytes"], f"partition {p}: request {req:.0f} < {row['memory_request_bytes']}"
        # ... for the budgets the servers run with.
        for flag in ("max-inflight-mib", "max-reply-mib"):
            given = flag_value(argv, flag)
            assert given is not None, f"partition {p}: --{flag} unset: the server's default ignores the pod's limit"
            assert int(given) <= need[flag.replace("-", "_")], f"partition {p}: --{flag}={given} above what was sized"
        assert lim >= row["memory_limit_bytes"], f"partition {p}: limit {lim:.0f} < {row['memory_limit_bytes']}"


def _local_socket_mount(spec, container, where):
    """The host folder and mount path of a pod's same-host socket volume, and its XDG_RUNTIME_DIR."""
    env = {e["name"]: str(e.get("value", "")) for e in container.get("env") or []}
    runtime = env.get("XDG_RUNTIME_DIR")
    assert runtime, f"{where}: no XDG_RUNTIME_DIR: the server's default socket folder would be private to the pod"
    mounts = {m["name"]: m["mountPath"] for m in container.get("volumeMounts") or []}
    volumes = {v["name"]: v for v in spec.get("volumes") or []}
    found = [(volumes[n]["hostPath"]["path"], path) for n, path in mounts.items()
             if n in volumes and "hostPath" in volumes[n] and path == runtime + "/fanout"]
    assert found, f"{where}: nothing mounted from the host at {runtime}/fanout"
    return found[0]


def test_trainer_and_servers_of_a_node_share_the_local_socket_folder():
    # The same-host export is handed out on a Unix socket whose path the
    # server advertises: a trainer pod reaches it only where both pods mount
    # the same host folder at the same path (docs/DEPLOY.md).
    sts = yaml.safe_load((DEPLOY / "kubernetes" / "base" / "statefulset.yaml").read_text())
    spec = sts["spec"]["template"]["spec"]
    (server,) = [c for c in spec["containers"] if c.get("command", [""])[0] == "fanout-server"]
    served = _local_socket_mount(spec, server, "StatefulSet fanout-server")
    job = yaml.safe_load((DEPLOY / "kubernetes" / "overlays" / "cora-2x2" / "train" / "job.yaml").read_text())
    jspec = job["spec"]["template"]["spec"]
    trainer = jspec["containers"][0]
    used = _local_socket_mount(jspec, trainer, "Job train")
    assert served == used, f"servers mount {served}, the trainer {used}: the socket paths would not match"
    assert not any(a.startswith("--local-socket") for a in server.get("args", [])), \
        "the default socket path (under XDG_RUNTIME_DIR) is what both sides agree on"
