#include "client/update_writer.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "common/feature_dtype.h"
#include "rpc/codec.h"

namespace fanout::client {

Status UpdateWriter::Connect(const ClusterSpec& spec, const rpc::RpcOptions& options,
                             std::unique_ptr<UpdateWriter>* out, UpdateWriterOptions writer) {
  auto w = std::unique_ptr<UpdateWriter>(new UpdateWriter());
  if (writer.retry_ms < 0)
    return Status::InvalidArgument("retry_ms " + std::to_string(writer.retry_ms) + " is negative");
  w->options_ = writer;
  std::random_device rd;
  while (w->writer_id_ == 0) w->writer_id_ = (uint64_t{rd()} << 32) ^ rd();
  const int k = static_cast<int>(spec.replicas.size());
  if (k == 0) return Status::InvalidArgument("the cluster file lists no partitions");
  for (int p = 0; p < k; ++p) {
    // Writes go to the partition's primary: the one replica that follows no
    // other (the followers apply its log in its order: server/live_replication.h).
    const std::vector<std::string>& listed = spec.replicas[p];
    if (listed.empty())
      return Status::InvalidArgument("partition " + std::to_string(p) + " lists no replica");
    std::unique_ptr<rpc::RpcClient> primary;
    rpc::RemotePartitionInfo primary_info;
    std::string primary_at, unreachable, follows;
    for (const std::string& at : listed) {
      std::unique_ptr<rpc::RpcClient> c;
      rpc::RemotePartitionInfo info;
      Status st = rpc::RpcClient::Connect(at, options, &c);
      if (st.ok()) st = c->Info(&info);
      if (!st.ok()) {
        if (st.code() != Status::Code::kUnavailable && st.code() != Status::Code::kDeadlineExceeded)
          return st;
        unreachable += (unreachable.empty() ? "" : "; ") + st.message();
        continue;
      }
      if (info.partition != p || info.num_parts != k)
        return Status::InvalidArgument("server " + at + " serves partition " +
                                       std::to_string(info.partition) + " of " +
                                       std::to_string(info.num_parts) + ", listed as partition " +
                                       std::to_string(p) + " of " + std::to_string(k));
      if (info.live_version < 0)
        return Status::InvalidArgument("server " + at + " (partition " + std::to_string(p) +
                                       ") serves a static partition: start it with --live-dir");
      if (!info.live_follows.empty()) {
        follows = info.live_follows;
        continue;
      }
      if (primary)
        return Status::InvalidArgument(
            "partition " + std::to_string(p) + " lists two primaries, " + primary_at + " and " +
            at +
            " (each would order writes of its own, and their logs would differ): start the "
            "other replicas with --live-follow " +
            primary_at);
      primary = std::move(c);
      primary_info = info;
      primary_at = at;
    }
    if (!primary)
      return Status::Unavailable(
          "partition " + std::to_string(p) + ": no primary among its replicas to write to" +
          (follows.empty() ? std::string()
                           : " (they follow " + follows + ", which " +
                                 (std::find(listed.begin(), listed.end(), follows) == listed.end()
                                      ? "the cluster file does not list)"
                                      : "did not answer)")) +
          (unreachable.empty() ? std::string() : ": " + unreachable));
    if (p > 0 && primary_info.dataset_id != w->infos_[0].dataset_id)
      return Status::InvalidArgument("server " + primary_at +
                                     " serves another dataset than partition 0's");
    w->clients_.push_back(std::move(primary));
    w->infos_.push_back(primary_info);
  }
  w->offsets_ = w->infos_[0].partition_offsets;
  if (static_cast<int>(w->offsets_.size()) != k + 1)
    return Status::Corruption("partition 0 describes " + std::to_string(w->offsets_.size() - 1) +
                              " partitions, not " + std::to_string(k));
  w->incoming_ = w->infos_[0].direction == "in";
  // What each partition checks a batch against (live::CheckBatch), from what
  // its primary said.
  for (const rpc::RemotePartitionInfo& info : w->infos_) {
    live::LiveShape shape;
    shape.num_parts = k;
    shape.num_nodes_total = info.num_nodes_total;
    shape.base_edges_total = info.num_edges_total;
    FeatureDType dtype;
    if (info.feature_dim > 0 && !ParseFeatureDType(info.feature_dtype, &dtype).ok())
      return Status::Corruption("partition " + std::to_string(info.partition) +
                                " names an unknown feature dtype '" + info.feature_dtype + "'");
    shape.row_bytes = info.feature_dim > 0 ? info.feature_dim * FeatureDTypeSize(dtype) : 0;
    shape.num_edge_types = static_cast<int>(info.edge_types.size());
    shape.temporal = info.has_edge_times;
    shape.weighted = info.has_edge_weights;
    shape.has_labels = info.has_labels;
    w->shapes_.push_back(shape);
  }
  w->sent_.assign(static_cast<size_t>(k), 0);
  *out = std::move(w);
  return Status::OK();
}

int UpdateWriter::PartOf(int64_t node) const {
  return static_cast<int>(std::upper_bound(offsets_.begin(), offsets_.end(), node) -
                          offsets_.begin()) -
         1;
}

Status UpdateWriter::Compact(int p, int64_t* version, int64_t* edges, double* seconds,
                             bool* up_to_date) {
  if (p < 0 || p >= num_parts())
    return Status::InvalidArgument("partition " + std::to_string(p) + " of " +
                                   std::to_string(num_parts()));
  Status st = clients_[p]->Compact(version, edges, seconds, up_to_date);
  if (!st.ok())
    return Status::FromCode(static_cast<int>(st.code()),
                            "partition " + std::to_string(p) + ": " + st.message());
  return st;
}

Status UpdateWriter::Send(int p, const std::string& bytes, int64_t* version) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.retry_ms);
  int backoff_ms = 50;
  for (;;) {
    bool retry = false;
    Status st = clients_[p]->ApplyUpdates(bytes, version, nullptr, &retry);
    if (st.ok()) {
      if (retry) ++answered_as_retry_;
      return st;
    }
    // Only where the answer never came: a refusal is the server's verdict.
    const bool unanswered =
        st.code() == Status::Code::kUnavailable || st.code() == Status::Code::kDeadlineExceeded;
    if (!unanswered || std::chrono::steady_clock::now() >= deadline) return st;
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    backoff_ms = std::min(1000, backoff_ms * 2);
    ++resent_;
  }
}

Status UpdateWriter::Apply(const GraphUpdates& u, bool undirected, std::vector<int64_t>* versions) {
  std::lock_guard<std::mutex> lock(mu_);
  const int k = num_parts();
  const int64_t n = num_nodes();
  std::vector<live::UpdateBatch> parts(static_cast<size_t>(k));
  auto in_range = [&](int64_t v) { return v >= 0 && v < n; };
  // An edge src -> dst as its rows hold it: (row, neighbor) pairs.
  auto route = [&](const live::EdgeUpdate& e, const char* what, size_t i, bool add) -> Status {
    if (!in_range(e.src) || !in_range(e.dst))
      return Status::InvalidArgument(std::string(what) + " " + std::to_string(i) + ": edge " +
                                     std::to_string(e.src) + " -> " + std::to_string(e.dst) +
                                     " names a node outside [0, " + std::to_string(n) + ")");
    live::EdgeUpdate stored = e;
    if (incoming_) std::swap(stored.src, stored.dst);
    auto put = [&](const live::EdgeUpdate& s) {
      auto& b = parts[static_cast<size_t>(PartOf(s.src))];
      (add ? b.add_edges : b.remove_edges).push_back(s);
    };
    put(stored);
    if (undirected && e.src != e.dst) {
      live::EdgeUpdate rev = stored;
      std::swap(rev.src, rev.dst);
      put(rev);
    }
    return Status::OK();
  };
  for (size_t i = 0; i < u.add_edges.size(); ++i)
    FANOUT_RETURN_IF_ERROR(route(u.add_edges[i], "added edge", i, true));
  for (size_t i = 0; i < u.remove_edges.size(); ++i)
    FANOUT_RETURN_IF_ERROR(route(u.remove_edges[i], "removed edge", i, false));
  if (u.labels.size() != u.label_nodes.size())
    return Status::InvalidArgument("labels and their nodes differ in count");
  for (size_t i = 0; i < u.label_nodes.size(); ++i) {
    if (!in_range(u.label_nodes[i]))
      return Status::InvalidArgument("label " + std::to_string(i) + ": node " +
                                     std::to_string(u.label_nodes[i]) + " is outside [0, " +
                                     std::to_string(n) + ")");
    auto& b = parts[static_cast<size_t>(PartOf(u.label_nodes[i]))];
    b.label_rows.push_back(u.label_nodes[i]);
    b.labels.push_back(u.labels[i]);
  }
  if (static_cast<int64_t>(u.feature_bytes.size()) !=
      u.row_bytes * static_cast<int64_t>(u.feature_nodes.size()))
    return Status::InvalidArgument("feature bytes do not match their nodes");
  for (size_t i = 0; i < u.feature_nodes.size(); ++i) {
    if (!in_range(u.feature_nodes[i]))
      return Status::InvalidArgument("feature row " + std::to_string(i) + ": node " +
                                     std::to_string(u.feature_nodes[i]) + " is outside [0, " +
                                     std::to_string(n) + ")");
    auto& b = parts[static_cast<size_t>(PartOf(u.feature_nodes[i]))];
    b.feature_rows.push_back(u.feature_nodes[i]);
    b.row_bytes = u.row_bytes;
    b.feature_bytes.append(u.feature_bytes, i * static_cast<size_t>(u.row_bytes),
                           static_cast<size_t>(u.row_bytes));
  }
  // Every part within a server's limits and what its partition takes (the
  // server's own check: live::CheckBatch), before any is sent: an update a
  // partition would refuse is refused whole rather than half applied.
  for (int p = 0; p < k; ++p) {
    const live::UpdateBatch& b = parts[static_cast<size_t>(p)];
    if (!b.empty()) {
      Status checked =
          live::CheckBatch(shapes_[static_cast<size_t>(p)], offsets_[static_cast<size_t>(p)],
                           offsets_[static_cast<size_t>(p) + 1], b);
      if (!checked.ok())
        return Status::InvalidArgument(
            "partition " + std::to_string(p) +
            " would refuse its part of this update: " + checked.message() + " (nothing was sent)");
    }
    const int64_t bytes = live::EncodedBatchBytes(b);
    if (b.size() > options_.max_batch_operations || bytes > live::kMaxBatchBytes)
      return Status::InvalidArgument(
          "partition " + std::to_string(p) + "'s part of this update holds " +
          std::to_string(b.size()) + " operations (" + std::to_string(bytes) +
          " bytes), over the limit of " + std::to_string(options_.max_batch_operations) +
          " operations and " + std::to_string(live::kMaxBatchBytes) +
          " bytes per batch: split the update (nothing was sent)");
  }
  versions->assign(static_cast<size_t>(k), -1);
  Status first_error;
  for (int p = 0; p < k; ++p) {
    if (parts[p].empty()) continue;
    int64_t version = -1;
    parts[p].writer = writer_id_;
    parts[p].writer_seq = ++sent_[p];
    Status st = Send(p, live::EncodeUpdateBatch(parts[p]), &version);
    if (!st.ok()) {
      if (first_error.ok())
        first_error =
            Status::FromCode(static_cast<int>(st.code()), "partition " + std::to_string(p) +
                                                              " refused its part: " + st.message());
      continue;
    }
    (*versions)[p] = version;
  }
  return first_error;
}

}  // namespace fanout::client
