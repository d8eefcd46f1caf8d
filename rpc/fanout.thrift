// Fanout's sampling-server RPC interface.
//
// Ids, counts, neighbor lists and feature rows travel as `binary` fields
// holding packed little-endian arrays (one memcpy in, one out), never as
// list<i64>. Every error is one FanoutError carrying a fanout::Status code and
// a message naming the offending value.

namespace cpp fanout.rpc.gen

exception FanoutError {
  1: i32 code,       // fanout::Status::Code
  2: string message,
}

struct PartitionInfo {
  1: i32 partition,
  2: i32 num_parts,
  3: i64 node_begin,          // owned global ids [node_begin, node_end)
  4: i64 node_end,
  5: i64 num_nodes_total,
  6: i64 num_edges,           // edges stored by this partition
  7: i64 num_edges_total,
  8: i64 feature_dim,
  9: string feature_dtype,    // float32, float16, int8
  10: double feature_scale,   // int8: value = q * scale
  11: i64 num_classes,
  12: i32 format_version,
  13: string dataset_id,      // the same for every partition of one dataset
  14: string dataset_name,
  15: string direction,       // "in" or "out"
  16: binary partition_offsets,  // packed i64, num_parts + 1
  17: bool has_labels,
  18: i64 max_ids_per_request,
  19: i64 max_fanout,
  // The UCX data plane's listener port on this server's host; unset when the
  // server offers none (--data-plane off, or a build without UCX).
  20: optional i32 data_port,
  // Where the server requires authentication (an auth token or TLS): what a
  // data-plane endpoint presents in its first message to be served. Given
  // only to authenticated clients.
  21: optional binary data_plane_ticket,
  // The dataset stores a timestamp per edge (temporal sampling); unset in
  // servers before it, which cannot sample temporally.
  22: optional bool has_edge_times,
  // Heterogeneous datasets (sampler/hetero.h); unset for homogeneous ones
  // and in servers before them.
  23: optional list<string> node_types,
  24: optional list<string> edge_types,        // "src,rel,dst" each
  25: optional binary node_type_bounds,        // packed i64, num_parts * node types + 1
  26: optional binary node_type_feature_dims,  // packed i64, one per node type
  // The same-host export (rpc/local_export.h): the Unix socket that hands out
  // this partition's sealed memory, and the export's id (a client on this host
  // maps it and checks the ids match). Unset where the server exports nothing.
  27: optional string local_socket,
  28: optional i64 local_export_id,
  // ... its size in bytes (a client compares it before it maps anything),
  29: optional i64 local_export_bytes,
  // ... and the uid the server runs as: a client on this host sends its
  // token only to a socket that uid listens on (SO_PEERCRED).
  30: optional i64 server_uid,
  // The server's Fanout version (common/version.h: release+gcommit); a
  // client logs once where it differs from its own.
  31: optional string server_version,
  // int8 rows: one scale per feature column (packed little-endian float64,
  // feature_dim of them); a server before them has feature_scale only.
  32: optional binary feature_scales,
  // Where the server holds its feature rows: "memory", or "disk" (its
  // same-host export then hands over the feature file beside the memory).
  33: optional string features_tier,
  // Live partitions (fanout-server --live-dir): they take apply_updates, and
  // this is the newest committed version (update batches 1..live_version
  // are readable). Absent: a static partition.
  34: optional i64 live_version,
  // The dataset stores a weight per edge (weighted sampling and walks);
  // unset where it has none, and in servers before it.
  35: optional bool has_edge_weights,
  // A live partition's follower replica (fanout-server --live-follow): the
  // primary it applies its update log from, in the primary's order; writes
  // go there (a follower refuses apply_updates). Absent: a primary, or static.
  36: optional string live_follows,
}

// What a same-host client did itself on a server's exported partition since
// its last report (counted on the server's admin endpoint as path "local").
struct LocalReport {
  1: i32 partition,
  2: i64 requests,       // lookups and hops the client served from the mapping
  3: i64 sampled_nodes,
  4: i64 sampled_edges,
  5: i64 feature_rows,
  6: i64 bytes,          // feature, label and sample bytes read
  7: i64 feature_bytes,  // ... of which feature rows
}

struct SampleRequest {
  1: binary nodes,            // packed i64 global ids owned by this partition
  2: i64 fanout,              // -1 = all neighbors
  3: bool replace,
  4: bool weighted,
  5: i64 seed,                // request seed (the pure-function rule)
  6: i32 hop,
  7: bool with_edge_ids,
  // When set (packed i64, ascending): after sampling, reply only the
  // neighbors in it (the client's induced-subgraph pass sends its node set).
  // Servers before this field ignore it and reply every neighbor; the client
  // filters again either way.
  8: optional binary keep,
  // Temporal sampling (sampler/temporal.h): packed i64, one time per node; a
  // node draws only among its edges not later than its time. Needs a
  // dataset partitioned with edge timestamps (PartitionInfo.has_edge_times).
  9: optional binary times,
  10: optional string temporal_strategy,  // "uniform" (default) or "last"
  // Heterogeneous sampling (sampler/hetero.h): packed i64, this hop's fanout
  // per edge type (0 = not sampled); `fanout` is then their largest. The
  // reply lists each node's edges by type, with `edge_types`.
  11: optional binary type_fanouts,
  // LABOR-0 (sampler/labor.h) instead of independent per-node draws; the
  // reply then carries `edge_weights`. Not with keep, times or type_fanouts.
  12: optional bool labor,
  // A random-walk step (sampler/walk.h): packed u64, one key per node; each
  // node moves to the one neighbor its key picks (count 0 at a dead end);
  // `fanout` is ignored. The reply sets `walk_step`. Not with the above.
  13: optional binary walk_keys,
  // Live partitions: sample at this committed version (absent: the newest;
  // 0: the base, before any update); a version this replica has not reached
  // is Unavailable.
  14: optional i64 version,
}

struct SampleResponse {
  1: binary counts,           // packed i32, one per requested node
  2: binary neighbors,        // packed i64 global ids, concatenated in node order
  3: binary edge_ids,         // packed i64, same positions; empty unless requested
  4: optional binary edge_types,  // packed i32, same positions; heterogeneous requests only
  5: optional binary edge_weights,  // packed f32, same positions; LABOR requests only
  6: optional bool walk_step,       // set when the request was a walk step (walk_keys)
  7: optional i64 version,          // live partitions: the version sampled at
}

// apply_updates' answer: the batch is durable and readable at `version`.
struct UpdateReply {
  1: i64 version,
  2: i64 operations,
  3: optional bool was_retry,  // a retry of a batch this partition had applied: not applied again
}

// fetch_updates' answer: the primary's durable update-log records after the
// asked version, in order, for a follower replica to apply.
struct UpdateFeed {
  // Records, each: u64 version, u32 bytes, then the batch (live/updates.h's
  // byte form, as apply_updates took it), little-endian, versions consecutive.
  1: binary records,
  2: i64 committed,  // the primary's newest committed version
  // The oldest version a follower may ask after: records at or below it are
  // folded into the primary's base file (a follower further behind starts
  // from a copy of that file).
  3: i64 oldest,
}

// compact's answer: the delta folded into a new base at `version`.
struct CompactReply {
  1: i64 version,       // the version the new base holds
  2: i64 edges,         // its edges
  3: i64 rows_merged,   // rows that differed from the base before
  4: i64 bytes,         // its arrays
  5: double seconds,
  // Nothing newer than the base to fold: no compaction ran, and `version` is
  // the base's (servers before this field said so as InvalidArgument).
  6: optional bool up_to_date,
}

// One round of forward-push personalized PageRank (client/ppr.h,
// sampler/ppr_push.h) on the nodes this partition owns: entry i is
// (queries[i], nodes[i], residuals[i]); mass is fixed point, 1.0 = 2^62.
struct PprPushRequest {
  1: binary queries,     // packed i32, the seed (query) of each entry, in [0, 2^22)
  2: binary nodes,       // packed i64 global ids owned by this partition
  3: binary residuals,   // packed u64, each entry's residual
  4: i64 alpha_fixed,    // alpha as a 32-bit fraction, in [1, 2^32)
  5: i64 eps_fixed,      // eps in units of 2^-62, >= 1
  // Live partitions: push over the rows at this committed version (absent:
  // the newest), as SampleRequest.version.
  6: optional i64 version,
}

struct PprPushResponse {
  // Entries processed, the request's first `done` (fewer than all where the
  // reply reached the server's limit: the client sends the rest again).
  1: i64 done,
  2: binary pushed,      // packed u8 per processed entry: 1 = it pushed
  3: binary degrees,     // packed i64 per processed entry: its node's row length
  // The pushed mass, summed per (query, node): packed i32, i64 and u64 of one length.
  4: binary out_queries,
  5: binary out_nodes,
  6: binary out_mass,
  7: optional i64 version,  // live partitions: the version pushed at
}

// Sent by a client to the replica it just moved a session to, after the one
// it used failed (or, with `same_replica`, to the same replica asked again on a new
// connection): servers count these by origin (/stats "failovers"), so an
// operator sees retries and failovers per server (fanout-ctl stats).
struct FailoverNote {
  1: string from_address,     // the replica that failed, as the client's cluster file names it
  2: string reason,           // why (the client's error message)
  3: bool same_replica,       // a retry: the same replica again, not another one
  4: i32 partition,
}

service Fanout {
  // Partition description; clients check ranges and dataset ids with it.
  PartitionInfo partition_info() throws (1: FanoutError err),
  // One-hop neighbor sampling of a batch of nodes.
  SampleResponse sample_neighbors(1: SampleRequest request) throws (1: FanoutError err),
  // Feature rows (packed, row-major, in the partition's dtype) of the nodes.
  // Live partitions: `version` as SampleRequest.version (-1: the newest).
  binary lookup_features(1: binary nodes, 2: i64 version = -1) throws (1: FanoutError err),
  // Labels (packed i64, -1 = unknown) of the nodes.
  binary lookup_labels(1: binary nodes, 2: i64 version = -1) throws (1: FanoutError err),
  // Stored-direction degrees (packed i64) of the nodes, for cache hotness.
  binary lookup_degrees(1: binary nodes) throws (1: FanoutError err),
  // Train/val/test membership (packed u8 Split values) of the nodes.
  binary lookup_splits(1: binary nodes) throws (1: FanoutError err),
  // Original dataset ids (packed i64) of the nodes.
  binary lookup_original_ids(1: binary nodes) throws (1: FanoutError err),
  // The names of nodes whose dataset ids were strings (fanout-partition --format tables with
  // "id_type": "string"; LINQS's alphanumeric ids), one per node ("" for a node of an integer-id
  // type); NotFound where the dataset keeps none.
  list<string> lookup_original_names(1: binary nodes) throws (1: FanoutError err),
  // Liveness: returns the text it was sent.
  string ping(1: string text) throws (1: FanoutError err),
  // Presents the shared token of a server run with --auth-token-file; until
  // then every other call on the connection is refused (Unauthenticated).
  void authenticate(1: string token) throws (1: FanoutError err),
  // A client's failover to (or retry on) this server; see FailoverNote.
  void note_failover(1: FailoverNote note) throws (1: FanoutError err),
  // Edge existence (strict negative sampling): packed u8, 1 where the stored
  // row of rows[i] (a node this partition owns) holds neighbors[i]; both
  // packed i64 of one length. Servers before this method answer
  // TApplicationException UNKNOWN_METHOD.
  // `edge_type` >= 0 (heterogeneous datasets): only edges of that type count.
  binary has_edges(1: binary rows, 2: binary neighbors, 3: i32 edge_type = -1) throws (1: FanoutError err),
  // A same-host client's report of its local work; see LocalReport.
  void report_local(1: LocalReport report) throws (1: FanoutError err),
  // Live partitions: applies one update batch (live/updates.h's byte form;
  // every operation must belong to this partition), durable before the
  // answer. Needs write permission (a tenant with write=yes; without a
  // tenants file, an authenticated connection).
  UpdateReply apply_updates(1: binary batch) throws (1: FanoutError err),
  // One round of forward-push PPR on this partition's nodes; see
  // PprPushRequest. Servers before this method answer TApplicationException
  // UNKNOWN_METHOD.
  PprPushResponse ppr_push(1: PprPushRequest request) throws (1: FanoutError err),
  // Live partitions: folds the delta up to the newest committed version into
  // a new base now (what the server does by itself past --live-compact-*).
  // Needs write permission, as apply_updates. Servers before this method
  // answer TApplicationException UNKNOWN_METHOD.
  CompactReply compact() throws (1: FanoutError err),
  // Live partitions, replication: the durable update-log records after
  // version `after` (at most max_bytes of them, at least one where there is
  // one), waiting up to wait_ms (at most 1000) for one where there is none
  // yet. The caller, a follower replica named `follower`, holds every record
  // through `after` durably: the primary counts it as acknowledged (writes
  // wait for their followers' acknowledgements: docs/DESIGN.md). Needs write
  // permission, as apply_updates. Servers before this method answer
  // TApplicationException UNKNOWN_METHOD.
  UpdateFeed fetch_updates(1: i64 after, 2: i32 wait_ms, 3: string follower, 4: i64 max_bytes) throws (1: FanoutError err),
}
