"""Tenants against live servers (docs/TENANTS.md): charging by token and by TLS client certificate, on Thrift
and on the UCX data plane; quotas; SIGHUP reloads (a bad file keeps the old table); per-tenant metrics through
promtool; fanout-ctl tenants; and the online query equal to the loader's batch for the same seeds and seed.

The scheduler's fair order and its no-starvation guarantee are unit tests (tests/server/scheduler_test.cc):
deterministic, with synthetic costs."""
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request

import pytest
import torch

TOKEN_A = "token-of-tenant-alpha-0001"
TOKEN_B = "token-of-tenant-bravo-0002"
TOKEN_Q = "token-of-the-quota-tenant1"
ADMIN = "the-admin-credential-0003"


def stats(admin):
    req = urllib.request.Request("http://%s/stats" % admin, headers={"Authorization": "Bearer " + ADMIN})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


_admin_files = {}


def admin_args(tmp):
    """--admin-token-file with ADMIN, written once per folder."""
    path = os.path.join(str(tmp), "admin.token")
    if path not in _admin_files:
        with open(path, "w") as f:
            f.write(ADMIN + "\n")
        _admin_files[path] = True
    return ["--admin-token-file", path]


def tenants_of(admin):
    return {t["tenant"]: t for t in stats(admin)["tenants"]["tenants"]}


def summed(lc, name, field):
    total = 0
    for admin in lc.admin_addresses:
        t = tenants_of(admin).get(name)
        total += t[field] if t else 0
    return total


def write_tenants(path, text):
    path.write_text(text)
    return str(path)


TENANTS = """# two training jobs and a quota'd one
tenant alpha token=%s weight=2 local=yes
tenant bravo token=%s weight=1 class=online
tenant quota token=%s max_requests_per_s=3
tenant default weight=1
""" % (TOKEN_A, TOKEN_B, TOKEN_Q)


@pytest.fixture(scope="module")
def served(cora2, fanout, tmp_path_factory):
    d = tmp_path_factory.mktemp("tenants")
    conf = write_tenants(d / "tenants.conf", TENANTS)
    with fanout.LocalCluster(cora2, server_args=["--tenants", conf] + admin_args(d)) as lc:
        yield lc, conf


def run_loader(fanout, cluster, batches=4):
    n = 0
    for _ in fanout.NodeLoader(cluster, "train", num_neighbors=[5, 3], batch_size=32, shuffle=False):
        n += 1
        if n == batches:
            break
    return n


def test_requests_are_charged_to_the_tenant_their_token_names(served, fanout):
    lc, _ = served
    before = {name: summed(lc, name, "requests") for name in ("alpha", "bravo", "default")}
    # alpha over Thrift, bravo over the UCX data plane, no token: the default tenant.
    run_loader(fanout, lc.cluster(auth_token=TOKEN_A, data_plane="tcp", local_sampling="off"))
    after_a = {name: summed(lc, name, "requests") for name in before}
    assert after_a["alpha"] > before["alpha"]
    assert after_a["bravo"] == before["bravo"] and after_a["default"] == before["default"]
    run_loader(fanout, lc.cluster(auth_token=TOKEN_B, data_plane="ucx", local_sampling="off"))
    after_b = {name: summed(lc, name, "requests") for name in before}
    assert after_b["bravo"] > after_a["bravo"]
    assert after_b["alpha"] == after_a["alpha"] and after_b["default"] == after_a["default"]
    run_loader(fanout, lc.cluster(data_plane="tcp", local_sampling="off"))
    after_d = {name: summed(lc, name, "requests") for name in before}
    assert after_d["default"] > after_b["default"]
    assert after_d["alpha"] == after_b["alpha"] and after_d["bravo"] == after_b["bravo"]
    for admin in lc.admin_addresses:
        t = tenants_of(admin)
        assert t["alpha"]["weight"] == 2 and t["bravo"]["class"] == "online"
        assert t["alpha"]["sampled_edges"] > 0 and t["alpha"]["bytes"] > 0
        assert 0 < t["alpha"]["share"] < 1 and t["alpha"]["queue_wait_p99_s"] >= 0


def local_work(lc, name):
    out = {"requests": 0, "sampled_edges": 0}
    for admin in lc.admin_addresses:
        t = tenants_of(admin).get(name)
        for k in out:
            out[k] += t["local"][k] if t else 0
    return out


def test_co_located_work_is_shown_per_tenant(served, fanout):
    lc, _ = served
    before = local_work(lc, "alpha")
    c = lc.cluster(auth_token=TOKEN_A)  # auto: the exports are read here
    if not any(p["path"] in ("local", "local+ucx", "local+thrift") for p in c.paths()):
        pytest.skip("no export could be read here")
    run_loader(fanout, c)
    deadline = time.monotonic() + 10  # reports go out in the background
    while time.monotonic() < deadline:
        local = local_work(lc, "alpha")
        if local["requests"] > before["requests"]:
            break
        time.sleep(0.1)
    assert local["requests"] > before["requests"] and local["sampled_edges"] > before["sampled_edges"]


def test_an_unknown_token_is_refused(served, fanout):
    lc, _ = served
    with pytest.raises(fanout.Unauthenticated):
        lc.cluster(auth_token="no-such-tenant-token-123", data_plane="tcp").features(torch.arange(3))


def test_over_quota_is_refused_naming_the_tenant_and_the_quota(served, fanout):
    lc, _ = served
    c = lc.cluster(auth_token=TOKEN_Q, data_plane="tcp", local_sampling="off")
    with pytest.raises(fanout.ResourceExhausted) as e:
        for _ in range(50):
            c.labels(torch.arange(3))
    assert "quota" in str(e.value) and "max_requests_per_s" in str(e.value), str(e.value)
    assert "could pass in" in str(e.value), str(e.value)
    assert summed(lc, "quota", "refused_quota") >= 1
    # A client retrying in a tight loop is paced: each refusal's reply is held
    # until the request could pass (at most 0.1 s), so a second of hammering
    # costs the server tens of calls, not thousands (a slower machine makes
    # fewer calls still).
    refused = 0
    until = time.monotonic() + 1.0
    while time.monotonic() < until:
        try:
            c.labels(torch.arange(3))
        except fanout.ResourceExhausted:
            refused += 1
    assert 1 <= refused <= 40, refused
    # Others are not held back by it: while a thread hammers the quota tenant, another tenant's loader
    # runs, and the server refuses the hammering tenant only a few times per request it serves the other
    # (paced, not thousands a second), counted on the server.
    import threading
    stop = threading.Event()

    def hammer():
        while not stop.is_set():
            try:
                c.labels(torch.arange(3))
            except fanout.ResourceExhausted:
                pass
    t = threading.Thread(target=hammer)
    refused_before, alpha_before = summed(lc, "quota", "refused_quota"), summed(lc, "alpha", "requests")
    t.start()
    try:
        assert run_loader(fanout, lc.cluster(auth_token=TOKEN_A, data_plane="tcp", local_sampling="off"),
                          batches=5) == 5
    finally:
        stop.set()
        t.join()
    refusals = summed(lc, "quota", "refused_quota") - refused_before
    served = summed(lc, "alpha", "requests") - alpha_before
    assert served > 0 and refusals <= 5 * served + 10, (refusals, served)


def test_metrics_carry_the_tenant_label_and_pass_promtool(served, fanout):
    lc, _ = served
    run_loader(fanout, lc.cluster(auth_token=TOKEN_A, data_plane="tcp", local_sampling="off"))
    with urllib.request.urlopen("http://%s/metrics" % lc.admin_addresses[0], timeout=10) as r:
        text = r.read().decode()
    assert 'fanout_tenant_requests_total{tenant="alpha"}' in text
    assert 'fanout_tenant_queue_wait_seconds{tenant="alpha",quantile="0.99"}' in text
    assert 'fanout_tenant_weight{tenant="alpha"} 2' in text
    assert 'fanout_tenant_refused_total{tenant="quota"}' in text
    tool = shutil.which("promtool")
    if not tool:
        pytest.fail("promtool is missing: apt-get install prometheus (./run deps installs it)")
    out = subprocess.run([tool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_fanout_ctl_tenants_prints_the_table(served, fanout):
    lc, _ = served
    run_loader(fanout, lc.cluster(auth_token=TOKEN_A, data_plane="tcp", local_sampling="off"))
    ctl = fanout._bins.find_binary("fanout-ctl")
    plain = subprocess.run([ctl, "tenants", lc.admin_addresses[0]], capture_output=True, text=True, timeout=30)
    assert plain.returncode != 0 and "admin credential" in plain.stderr, plain.stdout + plain.stderr
    admin_file = [a for a in lc.server_args if a.endswith("admin.token")][0]
    out = subprocess.run([ctl, "--auth-token-file", admin_file, "tenants", lc.admin_addresses[0]],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert any(l.split()[:1] == ["alpha"] for l in lines), out.stdout
    assert "weight" in out.stdout and "p99" in out.stdout, out.stdout
    bad = subprocess.run([ctl, "tenants", "127.0.0.1:1"], capture_output=True, text=True, timeout=30)
    assert bad.returncode != 0 and "127.0.0.1:1" in bad.stderr


def server_log(lc):
    return "".join(open(p).read() for p in lc.log_paths if p)


def wait_for(predicate, what, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def test_sighup_reloads_and_a_bad_file_keeps_the_old_table(cora2, fanout, tmp_path):
    conf = tmp_path / "tenants.conf"
    write_tenants(conf, "tenant alpha token=%s weight=2\n" % TOKEN_A)
    with fanout.LocalCluster(cora2, server_args=["--tenants", str(conf)] + admin_args(tmp_path)) as lc:
        with pytest.raises(fanout.Unauthenticated):
            lc.cluster(auth_token=TOKEN_B, data_plane="tcp").features(torch.arange(2))
        # A new tenant, added while serving.
        write_tenants(conf, "tenant alpha token=%s weight=2\ntenant bravo token=%s weight=3\n"
                      % (TOKEN_A, TOKEN_B))
        for proc in lc._procs:
            proc.send_signal(signal.SIGHUP)
        wait_for(lambda: server_log(lc).count("tenants reloaded") == 2, "the reload")
        c = lc.cluster(auth_token=TOKEN_B, data_plane="tcp", local_sampling="off")
        assert c.features(torch.arange(2)).shape[0] == 2
        assert tenants_of(lc.admin_addresses[0])["bravo"]["weight"] == 3
        # A bad file: the error names its line, the table stays as it was.
        write_tenants(conf, "tenant alpha token=%s\ntenant bravo weight=-1 token=%s\n" % (TOKEN_A, TOKEN_B))
        for proc in lc._procs:
            proc.send_signal(signal.SIGHUP)
        wait_for(lambda: server_log(lc).count("the tenants as they were stay") == 2, "the refused reload")
        log = server_log(lc)
        assert "line 2" in log and "weight" in log, log
        assert tenants_of(lc.admin_addresses[0])["bravo"]["weight"] == 3
        assert c.features(torch.arange(2)).shape[0] == 2
        for proc in lc._procs:
            assert proc.poll() is None


def test_a_bad_tenants_file_stops_the_server_at_start(cora2, fanout, tmp_path):
    conf = tmp_path / "tenants.conf"
    write_tenants(conf, "tenant alpha token=short\n")
    server = fanout._bins.find_binary("fanout-server")
    out = subprocess.run([server, "--dataset", str(cora2), "--partition", "0", "--port", "0", "--admin-port", "-1",
                          "--tenants", str(conf)], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert str(conf) in out.stderr and "line 1" in out.stderr and "16" in out.stderr, out.stderr


def make_certs(d):
    """A CA, a server certificate for 127.0.0.1 and two client certificates (CN=trainer, CN=other)."""
    def run(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)
    (d / "ext.cnf").write_text("subjectAltName = IP:127.0.0.1\n")
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"),
        "-days", "2", "-subj", "/CN=fanout-test-ca")
    for name, cn in (("server", "127.0.0.1"), ("trainer", "trainer"), ("other", "other")):
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(d / (name + ".key")), "-out",
            str(d / (name + ".csr")), "-subj", "/CN=" + cn)
        run("x509", "-req", "-in", str(d / (name + ".csr")), "-CA", str(d / "ca.pem"), "-CAkey", str(d / "ca.key"),
            "-CAcreateserial", "-out", str(d / (name + ".pem")), "-days", "2", "-extfile", str(d / "ext.cnf"))


def test_requests_are_charged_by_tls_client_certificate_subject(cora2, fanout, tmp_path):
    if not shutil.which("openssl"):
        pytest.fail("openssl is missing (./run deps installs it)")
    make_certs(tmp_path)
    conf = write_tenants(tmp_path / "tenants.conf",
                         'tenant trainers tls_subject="CN=trainer" weight=2\ntenant default weight=1\n')
    args = ["--tenants", conf, "--tls-cert", str(tmp_path / "server.pem"), "--tls-key", str(tmp_path / "server.key"),
            "--tls-ca", str(tmp_path / "ca.pem")] + admin_args(tmp_path)
    with fanout.LocalCluster(cora2, data_plane="tcp", server_args=args) as lc:
        def cluster_of(who):
            path = tmp_path / ("cluster-%s.json" % who)
            path.write_text(json.dumps({
                "partitions": [{"partition": p, "replicas": [a]} for p, a in enumerate(lc.addresses)],
                "data_plane": "tcp", "local_sampling": "off",
                "tls": {"ca": "ca.pem", "cert": who + ".pem", "key": who + ".key"}}))
            return fanout.Cluster.from_file(str(path))
        run_loader(fanout, cluster_of("trainer"))
        assert summed(lc, "trainers", "requests") > 0
        default_before = summed(lc, "default", "requests")
        trainers_before = summed(lc, "trainers", "requests")
        run_loader(fanout, cluster_of("other"))  # a certificate the file does not name: default
        assert summed(lc, "default", "requests") > default_before
        assert summed(lc, "trainers", "requests") == trainers_before


def test_the_online_query_equals_the_loaders_batch(served, fanout):
    lc, _ = served
    c = lc.cluster(auth_token=TOKEN_B)
    seeds = torch.tensor([5, 1700, 42, 2500, 9])
    q = c.sample_subgraph(seeds, [10, 10], seed=7, labels=True, pyg=False)
    ref = fanout.Batch(c._c.sample_batch(dict(num_neighbors=[10, 10], batch_size=5, features=True, labels=True,
                                              shuffle=False), fanout._ids_buffer(seeds), None, None, 7))
    assert torch.equal(q.n_id, ref.n_id) and torch.equal(q.edge_index, ref.edge_index)
    assert torch.equal(q.x, ref.x) and torch.equal(q.y, ref.y)
    assert torch.equal(q.n_id[:5], seeds)
    # ... and to the batch a NodeLoader builds for the same seeds (the loader's request seed of that batch).
    loader = fanout.NodeLoader(c, seeds, num_neighbors=[10, 10], batch_size=5, shuffle=False, labels=True)
    (b,) = list(loader)
    same = c.sample_subgraph(seeds, [10, 10], seed=fanout._core.batch_request_seed(0, 0, 0), labels=True,
                             pyg=False)
    assert torch.equal(same.n_id, b.n_id) and torch.equal(same.edge_index, b.edge_index)
    assert torch.equal(same.x, b.x)


def test_the_online_query_as_pyg_data_and_its_errors(served, fanout):
    pytest.importorskip("torch_geometric")
    lc, _ = served
    c = lc.cluster(auth_token=TOKEN_B)
    data = c.sample_subgraph([3], [5, 5], deadline_ms=10000)
    assert data.batch_size == 1 and data.x.shape[1] == 1433 and int(data.n_id[0]) == 3
    assert data.edge_index.shape[0] == 2 and int(data.edge_index.max()) < data.num_nodes
    with pytest.raises(fanout.InvalidArgument, match="seeds"):
        c.sample_subgraph([], [5])
    with pytest.raises(fanout.InvalidArgument, match="outside"):
        c.sample_subgraph([10 ** 9], [5])
    with pytest.raises(fanout.InvalidArgument, match="num_neighbors"):
        c.sample_subgraph([1], 5)
    with pytest.raises(fanout.InvalidArgument, match="deadline"):
        c.sample_subgraph([1], [5], deadline_ms=0)


def test_the_online_query_meets_its_deadline_when_a_server_stops(cora2, fanout):
    with fanout.LocalCluster(cora2, data_plane="tcp") as lc:
        c = lc.cluster(call_timeout_ms=3000, local_sampling="off", data_plane="tcp")
        c.sample_subgraph([1, 2], [5, 5], pyg=False)  # connected
        for proc in lc._procs:
            os.kill(proc.pid, signal.SIGSTOP)
        try:
            start = time.monotonic()
            with pytest.raises(fanout.DeadlineExceeded, match="deadline of 200 ms"):
                c.sample_subgraph([1, 2], [5, 5], deadline_ms=200, pyg=False)
            assert time.monotonic() - start < 2.5  # the deadline, not the 3 s call timeout
        finally:
            for proc in lc._procs:
                os.kill(proc.pid, signal.SIGCONT)
        # The worker came back after its call timeout; queries work again.
        deadline = time.monotonic() + 10
        while True:
            try:
                assert c.sample_subgraph([1, 2], [5, 5], pyg=False).n_id.numel() >= 2
                break
            except fanout.Error:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


def sighup_and_wait(lc, count):
    for proc in lc._procs:
        proc.send_signal(signal.SIGHUP)
    wait_for(lambda: server_log(lc).count("tenants reloaded") == count, "the reload")


def test_a_reload_revokes_a_removed_and_a_rotated_tenant_on_every_path(cora2, fanout, tmp_path):
    """Open connections of a tenant removed from the file, and of one whose token changed, are refused after
    one SIGHUP: on Thrift (re-resolved at their next request) and on the UCX data plane (their tickets name no
    one); the rotated tenant's new token works at once, with a new ticket."""
    conf = tmp_path / "tenants.conf"
    write_tenants(conf, "tenant alpha token=%s local=yes\ntenant bravo token=%s local=yes\n" % (TOKEN_A, TOKEN_B))
    with fanout.LocalCluster(cora2, server_args=["--tenants", str(conf)] + admin_args(tmp_path)) as lc:
        open_ = {(name, plane): lc.cluster(auth_token=token, data_plane=plane, local_sampling="off")
                 for name, token in (("alpha", TOKEN_A), ("bravo", TOKEN_B)) for plane in ("tcp", "ucx")}
        for c in open_.values():
            assert c.features(torch.arange(4)).shape[0] == 4
        rotated = "token-of-tenant-bravo-0099"
        write_tenants(conf, "tenant bravo token=%s local=yes\n" % rotated)
        sighup_and_wait(lc, 2)
        for (name, plane), c in open_.items():
            with pytest.raises(fanout.Unauthenticated):
                c.features(torch.arange(4))
        refused_before = summed(lc, "alpha", "requests")
        with pytest.raises(fanout.Unauthenticated):
            lc.cluster(auth_token=TOKEN_A, data_plane="tcp").features(torch.arange(2))
        assert summed(lc, "alpha", "requests") == refused_before  # nothing served quota-free
        fresh = lc.cluster(auth_token=rotated, data_plane="ucx", local_sampling="off")
        assert fresh.features(torch.arange(4)).shape[0] == 4


def test_default_refuse_added_by_a_reload_closes_open_default_connections(cora2, fanout, tmp_path):
    conf = tmp_path / "tenants.conf"
    write_tenants(conf, "tenant alpha token=%s\ntenant default weight=1\n" % TOKEN_A)
    with fanout.LocalCluster(cora2, server_args=["--tenants", str(conf)] + admin_args(tmp_path)) as lc:
        anonymous = lc.cluster(data_plane="tcp", local_sampling="off")
        assert anonymous.labels(torch.arange(3)).shape[0] == 3
        write_tenants(conf, "tenant alpha token=%s\ntenant default refuse\n" % TOKEN_A)
        sighup_and_wait(lc, 2)
        with pytest.raises(fanout.Unauthenticated):
            anonymous.labels(torch.arange(3))
        assert lc.cluster(auth_token=TOKEN_A, data_plane="tcp").labels(torch.arange(3)).shape[0] == 3


def test_the_export_is_handed_only_to_a_tenant_the_file_allows(cora2, fanout, tmp_path):
    """Co-located clients of a local=yes tenant map the export; a tenant without it, and a client with no
    credential at all past `default refuse`, read over the RPC paths (and are charged there)."""
    conf = tmp_path / "tenants.conf"
    write_tenants(conf, "tenant alpha token=%s local=yes\ntenant bravo token=%s\ntenant default refuse\n"
                  % (TOKEN_A, TOKEN_B))
    with fanout.LocalCluster(cora2, server_args=["--tenants", str(conf)] + admin_args(tmp_path)) as lc:
        alpha = lc.cluster(auth_token=TOKEN_A)
        if not any(p["path"].startswith("local") for p in alpha.paths()):
            pytest.skip("no export could be read here")
        bravo = lc.cluster(auth_token=TOKEN_B)
        assert not any(p["path"].startswith("local") for p in bravo.paths()), bravo.paths()
        assert bravo.features(torch.arange(4)).shape[0] == 4
        refused = sum(stats(a)["local"]["refused_token"] for a in lc.admin_addresses)
        assert refused >= 2, refused  # bravo's hellos, one per partition
        with pytest.raises(fanout.Unauthenticated):
            lc.cluster().features(torch.arange(2))


def test_the_admin_pages_need_the_admin_credential(served, fanout):
    lc, _ = served
    for path in ("/stats", "/history", "/"):
        for headers in ({}, {"Authorization": "Bearer " + TOKEN_A}, {"Authorization": "Bearer wrong"}):
            req = urllib.request.Request("http://%s%s" % (lc.admin_addresses[0], path), headers=headers)
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(req, timeout=10)
            assert e.value.code == 401, (path, headers)
        assert stats(lc.admin_addresses[0])["security"]["admin_token"] is True
    with pytest.raises(fanout.Unauthenticated, match="admin credential"):
        fanout.stats(lc.admin_addresses[0])
    assert "tenants" in fanout.stats(lc.admin_addresses[0], token=ADMIN)
    with urllib.request.urlopen("http://%s/metrics" % lc.admin_addresses[0], timeout=10) as r:
        assert r.status == 200  # /metrics and /healthz stay open


def test_a_tls_subject_tenant_without_tls_ca_is_an_error_naming_its_line(cora2, fanout, tmp_path):
    conf = write_tenants(tmp_path / "tenants.conf",
                         'tenant alpha token=%s\ntenant ranker tls_subject="CN=ranker"\n' % TOKEN_A)
    server = fanout._bins.find_binary("fanout-server")
    out = subprocess.run([server, "--dataset", str(cora2), "--partition", "0", "--port", "0", "--admin-port", "-1",
                          "--tenants", conf], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "line 2" in out.stderr and "ranker" in out.stderr and "--tls-ca" in out.stderr, out.stderr
