"""Monitoring files (deploy/prometheus, deploy/grafana) against a live server.

promtool checks the Prometheus configuration and rules, and the /metrics text
of a fanout-server under load; every metric the rules and the Grafana
dashboard query is one that server exports, with the labels they group by.
"""

import json
import re
import shutil
import subprocess
import time
import urllib.request

import pytest
import yaml

from conftest import BIN, SOURCE

PROMETHEUS = SOURCE / "deploy" / "prometheus"
DASHBOARD = SOURCE / "deploy" / "grafana" / "fanout-dashboard.json"


def promtool():
    tool = shutil.which("promtool")
    if not tool:
        pytest.fail("promtool is missing: apt-get install prometheus (./run deps installs it)")
    return tool


def test_prometheus_configuration_and_rules_pass_promtool():
    out = subprocess.run([promtool(), "check", "config", str(PROMETHEUS / "prometheus.yml")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "fanout-rules.yml" in out.stdout + out.stderr, "the rules file is not part of the configuration"
    out = subprocess.run([promtool(), "check", "rules", str(PROMETHEUS / "fanout-rules.yml")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_kubernetes_scrape_configuration():
    path = PROMETHEUS / "prometheus-kubernetes.yml"
    out = subprocess.run([promtool(), "check", "config", str(path)], capture_output=True, text=True, timeout=60)
    text = out.stdout + out.stderr
    # Debian builds Prometheus without Kubernetes service discovery; that one
    # refusal is expected, anything else is a defect.
    if out.returncode != 0:
        assert "field kubernetes_sd_configs not found" in text, text
    config = yaml.safe_load(path.read_text())
    (job,) = config["scrape_configs"]
    relabel = job["relabel_configs"]
    keeps = {tuple(r["source_labels"]): r["regex"] for r in relabel if r.get("action") == "keep"}
    # The pods the manifests annotate, and only Fanout's servers.
    assert keeps[("__meta_kubernetes_pod_annotation_prometheus_io_scrape",)] == "true"
    assert keeps[("__meta_kubernetes_pod_label_app_kubernetes_io_name",)] == "fanout-server"
    addr = [r for r in relabel if r.get("target_label") == "__address__"][0]
    m = re.fullmatch(addr["regex"], "10.1.2.3:7000;7001")
    assert m and m.expand(addr["replacement"].replace("$", "\\")) == "10.1.2.3:7001"


@pytest.fixture(scope="module")
def live_metrics(cora2):
    """/metrics of a fanout-server that has answered sampling and feature requests."""
    server = subprocess.Popen([str(BIN / "fanout-server"), "--dataset", str(cora2), "--partition", "0", "--port", "0",
                               "--admin-port", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = ""
        deadline = time.time() + 60
        while time.time() < deadline:
            line = server.stdout.readline()
            if "ready" in line or not line:
                break
        m = re.search(r"rpc (\S+) admin (\S+)", line)
        assert m, f"fanout-server did not say it was ready: {line!r}"
        rpc, admin = m.group(1), m.group(2)
        for seed in range(20):
            subprocess.run([str(BIN / "fanout-ctl"), "sample", rpc, "--seeds", "0,1,2,3", "--fanout", "5",
                            "--seed", str(seed)], check=True, capture_output=True, timeout=30)
        with urllib.request.urlopen(f"http://{admin}/metrics", timeout=10) as r:
            yield r.read().decode()
    finally:
        server.terminate()
        server.wait(timeout=30)


def series(text):
    """{metric name: set of label names} of a /metrics text."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})?\s", line)
        assert m, f"unparsable /metrics line {line!r}"
        labels = set(re.findall(r"(\w+)=\"", m.group(2) or ""))
        out.setdefault(m.group(1), set()).update(labels)
    return out


def test_live_metrics_pass_promtool(live_metrics):
    out = subprocess.run([promtool(), "check", "metrics"], input=live_metrics, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.search(r"^fanout_sampled_edges_total [1-9]", live_metrics, re.M), "the load did not show"


def queried_metrics(expr):
    """(metric name, labels it is grouped or filtered by) in a PromQL expression."""
    for m in re.finditer(r"\b(fanout_\w+)(\{[^}]*\})?", expr):
        yield m.group(1), set(re.findall(r"(\w+)\s*=~?", m.group(2) or ""))


def expressions():
    exprs = []
    rules = yaml.safe_load((PROMETHEUS / "fanout-rules.yml").read_text())
    records = set()
    for group in rules["groups"]:
        for rule in group["rules"]:
            exprs.append(("fanout-rules.yml " + rule.get("record", rule.get("alert")), rule["expr"]))
            if "record" in rule:
                records.add(rule["record"])
    dash = json.loads(DASHBOARD.read_text())
    for panel in dash["panels"]:
        for t in panel.get("targets", []):
            exprs.append((f"dashboard panel {panel['title']!r}", t["expr"]))
    for var in dash["templating"]["list"]:
        if var.get("type") == "query":
            exprs.append((f"dashboard variable {var['name']}", var["definition"]))
    return exprs, records


def test_rules_and_dashboard_query_only_what_the_server_exports(live_metrics):
    have = series(live_metrics)
    exprs, records = expressions()
    assert len(exprs) >= 12
    for where, expr in exprs:
        for name, filtered in queried_metrics(expr):
            assert name in have, f"{where}: {name} is not exported by fanout-server"
            missing = filtered - have[name] - {"instance", "job"}
            assert not missing, f"{where}: {name} has no label(s) {missing}"
        for by in re.findall(r"by \(([^)]*)\)", expr):
            labels = {l.strip() for l in by.split(",")} - {"instance", "job", "le"}
            names = [n for n, _ in queried_metrics(expr)]
            for label in labels:
                assert any(label in have.get(n, set()) for n in names), f"{where}: no series to group by {label}"
        for rec in re.findall(r"\bfanout:[\w:]+", expr):
            assert rec in records, f"{where}: recording rule {rec} is not defined"


def test_dashboard_is_self_contained():
    dash = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids)), "panel ids repeat"
    for p in dash["panels"]:
        assert p["datasource"]["uid"] == "${datasource}", f"panel {p['title']!r} is tied to one data source"
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24, f"panel {p['title']!r} is wider than the grid"
