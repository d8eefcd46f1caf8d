"""Every `--flag` README.md and docs/*.md name exists: in the --help of a Fanout binary (fanout-ctl's
subcommands included), of ./run, of a Python example or bench script, or, for the few flags of other
tools the pages show (cmake, ctest, valgrind, kubectl, sbatch, venv), in the list below naming that tool.
A flag named right after a Fanout binary in the same line must be in that binary's own --help. And
docs/CLI.md lists every fanout-ctl command and every ./run bench name."""
import glob
import os
import re
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("FANOUT_SOURCE_DIR", os.path.join(HERE, "..", ".."))
BIN = os.environ.get("FANOUT_BIN_DIR", os.path.join(ROOT, "build", "bin"))

# Flags of tools that are not Fanout's, as the pages use them.
OTHER_TOOLS = {
    "--build": "cmake", "--output-on-failure": "ctest", "--repeat": "ctest", "--cache-sim": "valgrind",
    "--from-file": "kubectl", "--nodes": "sbatch", "--system-site-packages": "python3 -m venv",
    "--flag": "(docs/README.md's own words)", "--gtest": "GoogleTest's --gtest_filter",
    "--parquet": "datasets/make_shop_tables.py", "--mount": "unshare",
}
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
BINARY = re.compile(r"(?<![\w/-])(fanout-(?:server|partition|ctl|sample|spark-task|bench-[a-z]+(?:-[a-z]+)*)|train-graphsage)"
                    r"(?![\w-])")


def pages():
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


def run_help(cmd):
    out = subprocess.run(cmd + ["--help"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    return out.stdout + out.stderr


@pytest.fixture(scope="module")
def helps():
    h = {}
    names = [n for n in os.listdir(BIN) if BINARY.fullmatch(n)]
    assert "fanout-server" in names and "fanout-ctl" in names, os.listdir(BIN)
    for n in names:
        h[n] = run_help([os.path.join(BIN, n)])
    subs = re.findall(r"^\s+([a-z][a-z-]*)\s", h["fanout-ctl"].split("SUBCOMMANDS:")[-1], re.M)
    assert "tenants" in subs and "stats" in subs, h["fanout-ctl"]
    for sub in subs:
        h["fanout-ctl"] += run_help([os.path.join(BIN, "fanout-ctl"), sub])
    h["fanout-ctl subcommands"] = subs
    if "fanout-spark-task" in h:  # its steps' flags are in their own --help
        for sub in re.findall(r"^\s+([a-z]+)\s", re.split(r"(?i)subcommands:", h["fanout-spark-task"])[-1],
                              re.M):
            h["fanout-spark-task"] += run_help([os.path.join(BIN, "fanout-spark-task"), sub])
    scripts = sorted(glob.glob(os.path.join(ROOT, "examples", "python", "*.py"))) + \
        [os.path.join(ROOT, "bench", "python_bench.py"), os.path.join(ROOT, "bench", "ingest_bench.py"),
         os.path.join(ROOT, "bench", "peers_bench.py"),
         os.path.join(ROOT, "python", "fanout", "spark.py")]
    # Their argparse flags, read from the source (running --help would need PyG for some of them).
    h["scripts"] = " ".join(" ".join(re.findall(r"add_argument\(\s*\"(--[a-z0-9-]+)\"", open(s).read()))
                            for s in scripts)
    h["./run"] = open(os.path.join(ROOT, "run")).read()
    return h


def test_every_flag_the_docs_name_exists(helps):
    known = set()
    for k, v in helps.items():
        if isinstance(v, str):
            known |= set(FLAG.findall(v))
    missing = []
    for page in pages():
        for n, line in enumerate(open(page), 1):
            for flag in FLAG.findall(line):
                if flag not in known and flag not in OTHER_TOOLS:
                    missing.append("%s:%d: %s" % (os.path.relpath(page, ROOT), n, flag))
    assert not missing, "flags no --help lists:\n" + "\n".join(missing)


def test_a_flag_named_after_a_fanout_binary_is_in_its_own_help(helps):
    wrong = []
    for page in pages():
        for n, line in enumerate(open(page), 1):
            # Each `binary --flag ...` run on one line: the flags up to the next binary or pipe.
            for span in re.split(r"[|;`]|&&", line):
                m = BINARY.search(span)
                if not m or m.group(1) not in helps:
                    continue
                for flag in FLAG.findall(span[m.end():]):
                    if flag not in helps[m.group(1)]:
                        wrong.append("%s:%d: %s %s" % (os.path.relpath(page, ROOT), n, m.group(1), flag))
    assert not wrong, "flags their binary's --help does not list:\n" + "\n".join(wrong)


def test_cli_md_lists_every_fanout_ctl_command_and_bench_name(helps):
    cli = open(os.path.join(ROOT, "docs", "CLI.md")).read()
    listed = re.search(r"`fanout-ctl ([a-z|-]+)`", cli)
    assert listed, "docs/CLI.md names no `fanout-ctl a|b|...` list"
    assert sorted(listed.group(1).split("|")) == sorted(helps["fanout-ctl subcommands"]), listed.group(1)
    run = helps["./run"]
    names = re.search(r"BENCH_ORDER=\(([^)]*)\)", run).group(1).split() + ["scale", "peers"]
    bench = re.search(r"`\./run bench \[([a-z|]+)\]`", cli)
    assert bench, "docs/CLI.md names no `./run bench [a|b|...]` list"
    assert sorted(set(bench.group(1).split("|"))) == sorted(set(names)), (bench.group(1), names)
