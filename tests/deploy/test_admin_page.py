"""The admin page (/) in a real browser: headless Chromium against a live
server under sampling load. The page draws the server's /history (one point a
second) as charts without any external asset; the values it renders are the
server's own.
"""

import html
import re
import shutil
import subprocess
import threading
import time
import json
import urllib.error
import urllib.request

import pytest

from conftest import BIN

TOKEN = "admin-page-test-token-0123456789"


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.fail("Chromium is missing: apt-get install chromium (./run deps installs it)")


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


@pytest.fixture(scope="module")
def loaded_server(cora2, tmp_path_factory):
    """A server (with an auth token) answering sampling requests in the background."""
    token = tmp_path_factory.mktemp("admin") / "token"
    token.write_text(TOKEN + "\n")
    server = subprocess.Popen([str(BIN / "fanout-server"), "--dataset", str(cora2), "--partition", "0", "--port", "0",
                               "--admin-port", "0", "--auth-token-file", str(token)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    stop = threading.Event()
    try:
        line = server.stdout.readline()
        m = re.search(r"rpc (\S+) admin (\S+)", line)
        assert m, f"fanout-server did not say it was ready: {line!r}"
        rpc, admin = m.group(1), m.group(2)

        def load():
            seed = 0
            while not stop.is_set():
                subprocess.run([str(BIN / "fanout-ctl"), "--auth-token-file", str(token), "sample", rpc, "--seeds",
                                "0,1,2,3,4,5,6,7", "--fanout", "5", "--seed", str(seed)], capture_output=True,
                               timeout=30)
                seed += 1

        t = threading.Thread(target=load, daemon=True)
        t.start()
        # Until the history shows the load for a few seconds.
        deadline = time.time() + 60
        while time.time() < deadline:
            h = json.loads(get(f"http://{admin}/history?seconds=60&token={TOKEN}"))
            if sum(1 for p in h["points"] if p["sampled_edges_per_s"] > 0) >= 3:
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"no load in the history: {h}")
        yield admin
    finally:
        stop.set()
        server.terminate()
        server.wait(timeout=30)


def render(url, tmp_path):
    out = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=6000", "--dump-dom", url],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def attr(dom, element_id, name):
    m = re.search(rf'<[^>]*\bid="{re.escape(element_id)}"[^>]*>', dom)
    assert m, f"no element {element_id} in the rendered page"
    a = re.search(rf'\b{re.escape(name)}="([^"]*)"', m.group(0))
    assert a, f"{element_id} has no {name}: {m.group(0)}"
    return html.unescape(a.group(1))


def test_history_and_page_need_the_token(loaded_server):
    for path in ("/history", "/"):
        with pytest.raises(urllib.error.HTTPError) as e:
            get(f"http://{loaded_server}{path}")
        assert e.value.code == 401
    with pytest.raises(urllib.error.HTTPError) as e:
        get(f"http://{loaded_server}/history?seconds=-5&token={TOKEN}")
    assert e.value.code == 400


def test_the_page_has_no_external_assets(loaded_server):
    page = get(f"http://{loaded_server}/?token={TOKEN}")
    assert not re.search(r"<script[^>]+src=", page), "a script from elsewhere"
    assert not re.search(r"<link[^>]+stylesheet", page), "a stylesheet from elsewhere"
    assert not re.search(r"(src|href)=\"(https?:)?//", page), "an absolute URL"
    assert "@import" not in page and "url(" not in page


def test_headless_chromium_draws_the_servers_history(loaded_server, tmp_path):
    dom = render(f"http://{loaded_server}/?token={TOKEN}", tmp_path)
    assert 'data-history-error' not in dom, dom[:2000]
    after = json.loads(get(f"http://{loaded_server}/history?seconds=600&token={TOKEN}"))["points"]
    shown = int(re.search(r'data-history-points="(\d+)"', dom).group(1))
    assert shown >= 3, f"the page drew {shown} points"
    assert shown <= len(after) + 3  # the page's fetch came a few seconds before ours
    # Every chart drew every point of the history it fetched.
    for chart in ("edges", "bytes", "lat", "rss"):
        assert int(attr(dom, f"c-{chart}", "data-points")) == shown, chart
    # The values it shows are the server's: the last point the page had is
    # one of the points the server still has.
    def seen(key, value):
        return any(p[key] is not None and abs(p[key] - value) <= 1e-9 * max(1.0, abs(value)) for p in after)

    edges = float(attr(dom, "now-edges-0", "data-value"))
    assert seen("sampled_edges_per_s", edges), (edges, [p["sampled_edges_per_s"] for p in after][-10:])
    assert max(p["sampled_edges_per_s"] for p in after) > 0
    rss = float(attr(dom, "now-rss-0", "data-value"))
    assert rss > 10e6 and seen("rss_bytes", rss)
    p99 = attr(dom, "now-lat-1", "data-value")
    assert p99 == "" or seen("p99_ms", float(p99))
    # The table view rendered from /stats too.
    assert re.search(r"partition 0/2 \[0, \d+\) - serving", dom), "the header did not render"
