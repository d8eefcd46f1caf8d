#!/usr/bin/env python3
"""Writes a small heterogeneous temporal graph as CSV tables with a schema: the worked example of
docs/DATA.md ("Bring your own graph").

  users.csv           user_id (a string), age, activity (two scalar feature columns), segment (a label),
                      split (train / val / test)
  items.csv.gz        item_id (an integer), embedding (a list column: "0.1 0.2 ..."), gzip-compressed
  purchases.csv       user, item, ts (seconds): user -> item "bought" edges with times
  views.csv           user, item, ts: "viewed" edges; a few name users no table has (dropped, counted)
  graph.json          the schema

Deterministic (a fixed seed): `python3 datasets/make_shop_tables.py [OUTPUT_DIR] [--parquet]` (default:
datasets/data/shop). With --parquet the same tables are Parquet files (pyarrow): users.parquet, items.parquet (the
embedding a list<float> column), purchases.parquet and views.parquet (ts an int64 column), and graph.json names them.
"""
import csv
import gzip
import json
import os
import random
import sys


def write_csv(path, header, rows, opener=open):
    with opener(path, "wt", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def write_parquet(path, header, rows):
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = {h: [r[k] for r in rows] for k, h in enumerate(header)}
    if "embedding" in cols:  # a list column of numbers, not text
        cols["embedding"] = pa.array([[float(x) for x in e.split()] for e in cols["embedding"]],
                                     pa.list_(pa.float32()))
    pq.write_table(pa.table(cols), path, row_group_size=1000)


def main():
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__.strip())
        return
    unknown = [a for a in sys.argv[1:] if a.startswith("-") and a != "--parquet"]
    if unknown:
        sys.exit("make_shop_tables.py: unknown option %s (--parquet, --help)" % unknown[0])
    args = [a for a in sys.argv[1:] if a != "--parquet"]
    parquet = "--parquet" in sys.argv[1:]
    out = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "shop")
    os.makedirs(out, exist_ok=True)
    rng = random.Random(7)
    users, items, dim = 300, 120, 8
    user_ids = ["u%04d" % (i * 7 + 3) for i in range(users)]
    tables = {}  # name: (header, rows)
    rows = []
    for i, u in enumerate(user_ids):
        r = rng.random()
        split = "train" if r < 0.7 else "val" if r < 0.85 else "test"
        rows.append([u, rng.randint(18, 80), round(rng.random(), 4), i % 3, split])
    tables["users"] = (["user_id", "age", "activity", "segment", "split"], rows)
    item_ids = [1000 + 3 * i for i in range(items)]
    tables["items"] = (["item_id", "embedding"],
                       [[it, " ".join("%.4f" % rng.uniform(-1, 1) for _ in range(dim))] for it in item_ids])
    for name, count, dangling in (("purchases", 2500, 0), ("views", 6000, 25)):
        rows = []
        for k in range(count):
            u = rng.choice(user_ids) if k >= dangling else "ghost%d" % k
            rows.append([u, rng.choice(item_ids), 1_600_000_000 + rng.randint(0, 86_400 * 365)])
        tables[name] = (["user", "item", "ts"], rows)
    files = {}
    for name, (header, rows) in tables.items():
        if parquet:
            files[name] = name + ".parquet"
            write_parquet(os.path.join(out, files[name]), header, rows)
        elif name == "items":
            files[name] = "items.csv.gz"
            write_csv(os.path.join(out, files[name]), header, rows, gzip.open)
        else:
            files[name] = name + ".csv"
            write_csv(os.path.join(out, files[name]), header, rows)
    schema = {
        "name": "shop",
        "dangling_edges": "drop",
        "nodes": [
            {"type": "user", "files": files["users"], "id": "user_id", "id_type": "string",
             "features": ["age", "activity"], "label": "segment", "split": "split"},
            {"type": "item", "files": files["items"], "id": "item_id", "features": "embedding"},
        ],
        "edges": [
            {"type": "bought", "files": files["purchases"], "source": "user", "source_type": "user",
             "destination": "item", "destination_type": "item", "time": "ts", "reverse": "bought_by"},
            {"type": "viewed", "files": files["views"], "source": "user", "source_type": "user",
             "destination": "item", "destination_type": "item", "time": "ts", "reverse": "viewed_by"},
        ],
    }
    with open(os.path.join(out, "graph.json"), "w") as f:
        json.dump(schema, f, indent=2)
        f.write("\n")
    print("wrote %s: %d users, %d items, purchases and views with times (%s), graph.json"
          % (out, users, items, "Parquet" if parquet else "CSV"))


if __name__ == "__main__":
    main()
