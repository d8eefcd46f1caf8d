#!/usr/bin/env python3
"""Writes a small heterogeneous temporal graph as CSV tables with a schema: the worked example of
docs/DATA.md ("Bring your own graph").

  users.csv           user_id (a string), age, activity (two scalar feature columns), segment (a label),
                      split (train / val / test)
  items.csv.gz        item_id (an integer), embedding (a list column: "0.1 0.2 ..."), gzip-compressed
  purchases.csv       user, item, ts (seconds): user -> item "bought" edges with times
  views.csv           user, item, ts: "viewed" edges; a few name users no table has (dropped, counted)
  graph.json          the schema

Deterministic (a fixed seed): `python3 datasets/make_shop_tables.py [OUTPUT_DIR]` (default: datasets/data/shop).
"""
import csv
import gzip
import json
import os
import random
import sys


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "shop")
    os.makedirs(out, exist_ok=True)
    rng = random.Random(7)
    users, items, dim = 300, 120, 8
    user_ids = ["u%04d" % (i * 7 + 3) for i in range(users)]
    with open(os.path.join(out, "users.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["user_id", "age", "activity", "segment", "split"])
        for i, u in enumerate(user_ids):
            r = rng.random()
            split = "train" if r < 0.7 else "val" if r < 0.85 else "test"
            w.writerow([u, rng.randint(18, 80), round(rng.random(), 4), i % 3, split])
    item_ids = [1000 + 3 * i for i in range(items)]
    with gzip.open(os.path.join(out, "items.csv.gz"), "wt", newline="") as f:
        w = csv.writer(f)
        w.writerow(["item_id", "embedding"])
        for it in item_ids:
            w.writerow([it, " ".join("%.4f" % rng.uniform(-1, 1) for _ in range(dim))])
    for name, count, dangling in (("purchases", 2500, 0), ("views", 6000, 25)):
        with open(os.path.join(out, name + ".csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["user", "item", "ts"])
            for k in range(count):
                u = rng.choice(user_ids) if k >= dangling else "ghost%d" % k
                w.writerow([u, rng.choice(item_ids), 1_600_000_000 + rng.randint(0, 86_400 * 365)])
    schema = {
        "name": "shop",
        "dangling_edges": "drop",
        "nodes": [
            {"type": "user", "files": "users.csv", "id": "user_id", "id_type": "string",
             "features": ["age", "activity"], "label": "segment", "split": "split"},
            {"type": "item", "files": "items.csv.gz", "id": "item_id", "features": "embedding"},
        ],
        "edges": [
            {"type": "bought", "files": "purchases.csv", "source": "user", "source_type": "user",
             "destination": "item", "destination_type": "item", "time": "ts", "reverse": "bought_by"},
            {"type": "viewed", "files": "views.csv", "source": "user", "source_type": "user",
             "destination": "item", "destination_type": "item", "time": "ts", "reverse": "viewed_by"},
        ],
    }
    with open(os.path.join(out, "graph.json"), "w") as f:
        json.dump(schema, f, indent=2)
        f.write("\n")
    print("wrote %s: %d users, %d items, purchases and views with times, graph.json" % (out, users, items))


if __name__ == "__main__":
    main()
