#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora (fuzz/corpus/<target>/): well-formed
inputs for each target, so that fuzzing starts from the real formats.
Run from the repository root: python3 fuzz/make_seeds.py"""
import json
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# --- fuzz_rpc_request: framed Thrift binary-protocol calls -----------------
def tstring(b):
    b = b if isinstance(b, bytes) else b.encode()
    return struct.pack(">i", len(b)) + b


def field(ftype, fid, value):
    return struct.pack(">bh", ftype, fid) + value


STOP = b"\x00"
STRING, STRUCT, I64, I32, BOOL = 11, 12, 10, 8, 2


def call(name, args, seq=1):
    msg = struct.pack(">I", 0x80010001) + tstring(name) + struct.pack(">i", seq) + args + STOP
    return struct.pack(">I", len(msg)) + msg


def ids(*v):
    return struct.pack("<%dq" % len(v), *v)


sample = (field(STRING, 1, tstring(ids(0, 5, 2707))) + field(I64, 2, struct.pack(">q", 5)) +
          field(BOOL, 3, b"\x00") + field(BOOL, 4, b"\x00") + field(I64, 5, struct.pack(">q", 7)) +
          field(I32, 6, struct.pack(">i", 0)) + field(BOOL, 7, b"\x01") + STOP)
put("fuzz_rpc_request", "ping", call("ping", field(STRING, 1, tstring("hello"))))
put("fuzz_rpc_request", "partition_info", call("partition_info", b""))
put("fuzz_rpc_request", "sample", call("sample_neighbors", field(STRUCT, 1, sample)))
for m in ("lookup_features", "lookup_labels", "lookup_degrees", "lookup_splits", "lookup_original_ids",
          "lookup_original_names"):
    put("fuzz_rpc_request", m, call(m, field(STRING, 1, tstring(ids(1, 2, 3, 2000)))))
# LABOR (field 12) and a walk step (field 13: one u64 key per node) on the same request.
labor = sample[:-1] + field(BOOL, 12, b"\x01") + STOP
walk = sample[:-1] + field(STRING, 13, tstring(struct.pack("<3Q", 1, 2, 3))) + STOP
put("fuzz_rpc_request", "sample_labor", call("sample_neighbors", field(STRUCT, 1, labor)))
put("fuzz_rpc_request", "sample_walk", call("sample_neighbors", field(STRUCT, 1, walk)))
# A metapath walk step (type fanouts, field 11, with walk keys) and a heterogeneous temporal hop
# (times, field 9, with type fanouts): refused by name on Cora, which has no types.
typed_walk = walk[:-1] + field(STRING, 11, tstring(ids(1, 0))) + STOP
typed_temporal = (sample[:-1] + field(STRING, 9, tstring(ids(10, 20, 30))) +
                  field(STRING, 11, tstring(ids(2, 1))) + STOP)
put("fuzz_rpc_request", "sample_metapath_walk", call("sample_neighbors", field(STRUCT, 1, typed_walk)))
put("fuzz_rpc_request", "sample_hetero_temporal",
    call("sample_neighbors", field(STRUCT, 1, typed_temporal)))
# A PPR push round: (query, node, residual) entries, alpha 0.15 as a 32-bit fraction, eps 1e-4 in 2^-62.
ppr = (field(STRING, 1, tstring(struct.pack("<3i", 0, 0, 1))) + field(STRING, 2, tstring(ids(0, 5, 2707))) +
       field(STRING, 3, tstring(struct.pack("<3Q", 1 << 62, 1 << 60, 1 << 61))) +
       field(I64, 4, struct.pack(">q", 644245094)) + field(I64, 5, struct.pack(">q", 461168601842739)) + STOP)
put("fuzz_rpc_request", "ppr_push", call("ppr_push", field(STRUCT, 1, ppr)))
put("fuzz_rpc_request", "authenticate", call("authenticate", field(STRING, 1, tstring("token"))))
put("fuzz_rpc_request", "two_calls", call("ping", field(STRING, 1, tstring("a"))) +
    call("lookup_labels", field(STRING, 1, tstring(ids(9))), 2))

# --- fuzz_client_reply, kind 4: a ppr_push reply (byte 1: entries sent) -----
# The result struct as the client reads it: field 0 (success) holding the PprPushResponse.
ppr_reply = (field(I64, 1, struct.pack(">q", 2)) + field(STRING, 2, tstring(bytes([1, 0]))) +
             field(STRING, 3, tstring(ids(3, 5))) + field(STRING, 4, tstring(struct.pack("<2i", 0, 1))) +
             field(STRING, 5, tstring(ids(7, 9))) + field(STRING, 6, tstring(struct.pack("<2Q", 1 << 40, 1 << 41))) +
             STOP)
put("fuzz_client_reply", "ppr-ok", bytes([4, 3, 0]) + field(STRUCT, 0, ppr_reply) + STOP)
put("fuzz_client_reply", "ppr-no-progress",
    bytes([4, 3, 0]) + field(STRUCT, 0, field(I64, 1, struct.pack(">q", 0)) + STOP) + STOP)

# --- fuzz_chunks: kind byte, node-count byte, chunk (payload + CRC) ---------
# (the CRC is not checked by the decoders themselves; kind 7 checks it)
adj = struct.pack("<qq", 2, 3) + struct.pack("<qq", 1, 2) + ids(1, 2, 3) + ids(10, 11, 12)
put("fuzz_chunks", "adj", bytes([0, 2]) + adj)
put("fuzz_chunks", "feat_f32", bytes([1, 2]) + struct.pack("<6f", 1, 2, 3, 4, 5, 6))
put("fuzz_chunks", "feat_f16", bytes([2, 2]) + b"\x00\x3c" * 6)
put("fuzz_chunks", "feat_i8", bytes([3, 2]) + bytes([1, 2, 3, 4, 5, 6]))
put("fuzz_chunks", "label", bytes([4, 3]) + ids(0, -1, 6))
put("fuzz_chunks", "split", bytes([5, 3]) + bytes([0, 1, 3]))
put("fuzz_chunks", "name", bytes([6, 2]) + struct.pack("<I", 3) + b"abc" + struct.pack("<I", 1) + b"x")
put("fuzz_chunks", "crc", bytes([7, 0]) + b"payload" + b"\x00\x00\x00\x00")

# --- fuzz_cluster_file ------------------------------------------------------
put("fuzz_cluster_file", "two", json.dumps({"partitions": [
    {"partition": 0, "replicas": ["127.0.0.1:9100", "10.0.0.2:9100"]},
    {"partition": 1, "replicas": ["[::1]:9101"]}], "data_plane": "auto"}))
put("fuzz_cluster_file", "tls", json.dumps({"partitions": [{"partition": 0, "replicas": ["h:1"]}],
                                            "tls": {"ca": "ca.pem", "cert": "c.pem", "key": "c.key"},
                                            "auth_token_file": "token"}))

# --- fuzz_data_plane_request: data length (u64), flags byte, AM header -------
def req_header(method=1, flags=0, rid=7, version=1, at_version=-1):
    h = struct.pack("<IHBBQqQiI", 0x314E4146, version, method, flags, rid, -1, 0, 0, 0)
    return h + struct.pack("<q", at_version) if version >= 2 else h  # v2: at_version


place = struct.pack("<QQQIHHQ", 1, 4096, 512, 4, 0, 0, 0) + b"rkey"
put("fuzz_data_plane_request", "features", struct.pack("<Q", 16) + b"\x00" + req_header())
put("fuzz_data_plane_request", "placed", struct.pack("<Q", 16) + b"\x00" + req_header(1, 8) + place)
put("fuzz_data_plane_request", "sample_labor", struct.pack("<Q", 16) + b"\x00" + req_header(3, 0x20))
put("fuzz_data_plane_request", "walk_step", struct.pack("<Q", 32) + b"\x00" + req_header(3, 0x40))
put("fuzz_data_plane_request", "ticket", struct.pack("<Q", 8) + b"\x01" + req_header(3, 0x10) + b"t" * 32)
put("fuzz_data_plane_request", "features_v2", struct.pack("<Q", 16) + b"\x00" + req_header(1, 0, 7, 2, 5))
put("fuzz_data_plane_request", "ticket_v2", struct.pack("<Q", 8) + b"\x01" + req_header(3, 0x10, 7, 2) + b"t" * 32)

# --- text formats (files separated by NUL bytes, see fuzz_text_format.cc) ---
put("fuzz_linqs", "small", "a\t1\t0\t1\tX\nb\t0\t1\t0\tY\nc\t1\t1\t0\tX\n\0a\tb\nb\tc\n")
put("fuzz_planetoid", "small", "\0".join([
    "0 1\n1 0\n2 1\n", "0 1\n1 2\n", "# 3 nodes, 4 binary features\n0 1 3\n1\n2 0 2\n", "0\n", "1\n", "2\n"]))
put("fuzz_ogb", "small", "\0".join([
    "3\n", "0,1\n1,2\n", "0.5,1.0\n0.0,2.0\n1.5,0.25\n", "0\n1\n1\n", "0\n", "1\n", "2\n"]))
put("fuzz_snap", "small", "# Directed graph\n# FromNodeId\tToNodeId\n0\t1\n1\t2\n5\t0\n")


# --- fuzz_feature_file: a flag byte (bit 0: fix the table's checksum), then
# a feature file (storage/feature_file.h) --------------------------------------
def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def feature_file(rows, dim, dtype=0, elem=4):
    row_bytes = dim * elem
    if row_bytes <= 4096:
        block, per = 4096, 4096 // row_bytes if row_bytes else 1
    else:
        block, per = (row_bytes + 4095) // 4096 * 4096, 1
    nblocks = (rows + per - 1) // per if row_bytes else 0
    blocks, crcs = b"", []
    for bi in range(nblocks):
        data = bytearray(block)
        for r in range(per):
            row = bi * per + r
            if row >= rows:
                break
            data[r * row_bytes:(r + 1) * row_bytes] = bytes((row * 7 + j) & 0xFF for j in range(row_bytes))
        crcs.append(crc32c(bytes(data)))
        blocks += bytes(data)
    table = b"".join(struct.pack("<I", c) for c in crcs)
    table += b"\0" * (max(4096, (len(table) + 4095) // 4096 * 4096) - len(table))
    ident = b"seed-dataset"
    h = bytearray(4096)
    h[0:4] = b"FNFF"
    struct.pack_into("<II", h, 4, 1, len(ident))
    h[12:12 + len(ident)] = ident
    struct.pack_into("<iqqqI", h, 268, 0, 0, rows, dim, dtype)
    struct.pack_into("<qqqqI", h, 304, row_bytes, block, per, nblocks, crc32c(b"".join(struct.pack("<I", c) for c in crcs)))
    struct.pack_into("<I", h, 340, crc32c(bytes(h[:340])))
    return bytes(h) + blocks + table


put("fuzz_feature_file", "small", b"\x01" + feature_file(40, 8))
put("fuzz_feature_file", "wide", b"\x01" + feature_file(3, 1100))
put("fuzz_feature_file", "half", b"\x00" + feature_file(10, 16, 1, 2))
put("fuzz_feature_file", "empty", b"\x01" + feature_file(0, 4))


# --- fuzz_base_file: a flag byte (bit 0: fix the checksums; bit 1: edge times;
# bit 2: two edge types; bit 3: edge weights), then a live partition's base file (live/base_file.h)
def base_file(part, node_begin, rows, edges, version, times=False, types=False, weights=False,
              narrow=False, features=(), labels=(), writers=()):
    flags = (1 if narrow else 0) | (2 if times else 0) | (4 if types else 0) | (8 if weights else 0)
    h = b"FNLBASE1" + struct.pack("<IIQqqqqI", 1, part, version, node_begin, rows, len(edges), 3 * len(edges),
                                  flags)
    h += struct.pack("<I", crc32c(h))

    def section(b):
        return struct.pack("<Q", len(b)) + b + struct.pack("<I", crc32c(b))

    indptr, row = [0], 0
    for r in range(rows):
        row += sum(1 for e in edges if e[0] == r)
        indptr.append(row)
    ordered = sorted(edges, key=lambda e: (e[0], e[3] if types else 0, e[2] if times else 0))
    out = h + section(struct.pack("<%dq" % len(indptr), *indptr))
    fmt = "i" if narrow else "q"
    out += section(struct.pack("<%d%s" % (len(ordered), fmt), *[e[1] for e in ordered]))
    out += section(struct.pack("<%dq" % len(ordered), *[100 + i for i in range(len(ordered))]))
    out += section(struct.pack("<%dq" % len(ordered), *[e[2] for e in ordered]) if times else b"")
    out += section(struct.pack("<%di" % len(ordered), *[e[3] for e in ordered]) if types else b"")
    out += section(struct.pack("<%df" % len(ordered), *[0.5] * len(ordered)) if weights else b"")
    ov = struct.pack("<QQQQ", len(features), 4 if features else 0, len(labels), 0)
    ov += b"".join(struct.pack("<qQ", n, s) for n, s in features) + b"\x07" * (4 * len(features))
    ov += b"".join(struct.pack("<qQq", n, s, v) for n, s, v in labels)
    out += section(ov)
    out += section(struct.pack("<qQ", 0, len(writers)) + b"".join(struct.pack("<QQQ", *w) for w in writers))
    return out + b"FNLBEND1"


E = [(0, 5, 3, 0), (0, 9, 1, 1), (1, 2, 7, 1), (3, 40, 2, 0), (3, 41, 2, 1), (3, 7, 9, 0)]
put("fuzz_base_file", "plain", b"\x01" + base_file(0, 0, 8, E, 5, features=[(2, 4)], labels=[(1, 3, 6)],
                                                   writers=[(77, 2, 3), (78, 1, 4)]))
put("fuzz_base_file", "temporal", b"\x0b" + base_file(1, 8, 6, E, 9, times=True, weights=True))
put("fuzz_base_file", "typed", b"\x05" + base_file(0, 0, 5, E, 2, types=True, narrow=True))
put("fuzz_base_file", "typed_temporal", b"\x07" + base_file(1, 30, 4, E, 4, times=True, types=True))
