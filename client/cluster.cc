#include "client/cluster.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "datasets/partition_store.h"

namespace fanout::client {

Status ParseClusterJson(const std::string& text, const std::string& origin, ClusterSpec* out) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(origin + ": not valid JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("partitions") || !j["partitions"].is_array())
    return Status::InvalidArgument(origin + ": expected {\"partitions\": [{\"partition\": 0, \"replicas\": [\"host:port\"]}, ...]}");
  ClusterSpec spec;
  for (const auto& e : j["partitions"]) {
    if (!e.is_object() || !e.contains("partition") || !e["partition"].is_number_integer() || !e.contains("replicas") ||
        !e["replicas"].is_array() || e["replicas"].empty())
      return Status::InvalidArgument(origin + ": each partition entry needs \"partition\" (an integer) and a non-empty "
                                     "\"replicas\" list, got " + e.dump());
    int p = e["partition"].get<int>();
    if (p < 0 || p > 100000) return Status::InvalidArgument(origin + ": partition " + std::to_string(p) + " is out of range");
    if (static_cast<int>(spec.replicas.size()) <= p) spec.replicas.resize(p + 1);
    if (!spec.replicas[p].empty())
      return Status::InvalidArgument(origin + ": partition " + std::to_string(p) + " is listed twice");
    for (const auto& r : e["replicas"]) {
      if (!r.is_string()) return Status::InvalidArgument(origin + ": replica " + r.dump() + " is not a \"host:port\" string");
      std::string host;
      int port;
      FANOUT_RETURN_IF_ERROR(rpc::ParseAddress(r.get<std::string>(), &host, &port).WithContext(origin));
      spec.replicas[p].push_back(r.get<std::string>());
    }
  }
  if (spec.replicas.empty()) return Status::InvalidArgument(origin + ": no partitions");
  for (size_t p = 0; p < spec.replicas.size(); ++p)
    if (spec.replicas[p].empty())
      return Status::InvalidArgument(origin + ": partition " + std::to_string(p) + " is missing (partitions 0.." +
                                     std::to_string(spec.replicas.size() - 1) + " must all be listed)");
  *out = std::move(spec);
  return Status::OK();
}

Status ReadClusterFile(const std::string& path, ClusterSpec* out) {
  std::ifstream f(path);
  if (!f) return Status::NotFound(path + ": cannot open the cluster file");
  std::stringstream ss;
  ss << f.rdbuf();
  return ParseClusterJson(ss.str(), path, out);
}

Status Cluster::Connect(const ClusterSpec& spec, const rpc::RpcOptions& options, std::shared_ptr<Cluster>* out) {
  auto c = std::shared_ptr<Cluster>(new Cluster());
  c->options_ = options;
  const int k = static_cast<int>(spec.replicas.size());
  for (int p = 0; p < k; ++p) {
    Status last;
    bool found = false;
    for (const std::string& addr : spec.replicas[p]) {
      std::unique_ptr<rpc::RpcClient> client;
      rpc::RemotePartitionInfo info;
      last = rpc::RpcClient::Connect(addr, options, &client);
      if (last.ok()) last = client->Info(&info);
      if (!last.ok()) continue;
      if (info.partition != p)
        return Status::InvalidArgument("server " + addr + " serves partition " + std::to_string(info.partition) +
                                       " but the cluster file lists it as partition " + std::to_string(p));
      if (info.num_parts != k)
        return Status::InvalidArgument("server " + addr + " belongs to a dataset of " + std::to_string(info.num_parts) +
                                       " partitions but the cluster file lists " + std::to_string(k));
      c->addresses_.push_back(addr);
      c->info_.push_back(info);
      found = true;
      break;
    }
    if (!found)
      return Status::FromCode(static_cast<int>(last.code()),
                              "no replica of partition " + std::to_string(p) + " answers: " + last.message());
  }
  const rpc::RemotePartitionInfo& first = c->info_[0];
  c->offsets_.push_back(0);
  for (int p = 0; p < k; ++p) {
    const rpc::RemotePartitionInfo& i = c->info_[p];
    if (i.dataset_id != first.dataset_id)
      return Status::InvalidArgument("servers " + c->addresses_[0] + " and " + c->addresses_[p] +
                                     " belong to different datasets ('" + first.dataset_name + "' " + first.dataset_id +
                                     " vs '" + i.dataset_name + "' " + i.dataset_id + ")");
    if (i.node_begin != c->offsets_.back())
      return Status::InvalidArgument("partition ranges do not tile the id space: partition " + std::to_string(p) +
                                     " at " + c->addresses_[p] + " starts at " + std::to_string(i.node_begin) +
                                     ", expected " + std::to_string(c->offsets_.back()));
    c->offsets_.push_back(i.node_end);
  }
  if (c->offsets_.back() != first.num_nodes_total)
    return Status::InvalidArgument("partition ranges end at " + std::to_string(c->offsets_.back()) + " but the dataset has " +
                                   std::to_string(first.num_nodes_total) + " nodes");
  *out = std::move(c);
  return Status::OK();
}

std::string Cluster::description() const {
  std::string s = "cluster of " + std::to_string(num_parts()) + " partition(s) of '" + info_[0].dataset_name + "':";
  for (const auto& a : addresses_) s += " " + a;
  return s;
}

// One thread's connections to every partition.
class ClusterSession : public Session {
 public:
  explicit ClusterSession(const Cluster* c) : c_(c) {}

  Status Open() {
    for (int p = 0; p < c_->num_parts(); ++p) {
      std::unique_ptr<rpc::RpcClient> client;
      FANOUT_RETURN_IF_ERROR(rpc::RpcClient::Connect(c_->addresses_[p], c_->options_, &client));
      clients_.push_back(std::move(client));
    }
    by_part_.resize(c_->num_parts());
    pos_.resize(c_->num_parts());
    replies_.resize(c_->num_parts());
    return Status::OK();
  }

  // Sends one request to every partition with routed ids, then receives every
  // reply. On a failure, connections with a reply still owed are dropped
  // (reconnected on next use), so no later call can read a stale reply.
  template <typename SendFn, typename ReceiveFn>
  Status Exchange(SendFn&& send, ReceiveFn&& receive) {
    const int k = c_->num_parts();
    std::vector<bool> owed(k, false);
    Status st;
    for (int p = 0; p < k && st.ok(); ++p) {
      if (by_part_[p].empty()) continue;
      st = send(p);
      owed[p] = true;
    }
    for (int p = 0; p < k && st.ok(); ++p) {
      if (!owed[p]) continue;
      st = receive(p);
      owed[p] = false;
    }
    if (!st.ok())
      for (int p = 0; p < k; ++p)
        if (owed[p]) clients_[p]->Abandon();
    stats_.requests += k;
    return st;
  }

  // Groups ids by owning partition (positions kept) and range-checks them.
  Status Route(ArrayView<const int64_t> ids) {
    const auto& off = c_->offsets_;
    for (int p = 0; p < c_->num_parts(); ++p) {
      by_part_[p].clear();
      pos_[p].clear();
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      int64_t v = ids[i];
      if (v < 0 || v >= off.back())
        return Status::InvalidArgument("node " + std::to_string(v) + " is outside [0, " + std::to_string(off.back()) + ")");
      int p = static_cast<int>(std::upper_bound(off.begin(), off.end(), v) - off.begin()) - 1;
      by_part_[p].push_back(v);
      pos_[p].push_back(static_cast<int64_t>(i));
    }
    return Status::OK();
  }

  Status Sample(ArrayView<const int64_t> seeds, uint64_t request_seed, const sampler::MultiHopOptions& options,
                sampler::SampledSubgraph* out) override {
    FANOUT_RETURN_IF_ERROR(sampler::CheckMultiHopOptions(options, true));
    for (size_t i = 0; i < seeds.size(); ++i)
      if (seeds[i] < 0 || seeds[i] >= c_->num_nodes())
        return Status::InvalidArgument("seed " + std::to_string(seeds[i]) + " (position " + std::to_string(i) +
                                       ") is outside [0, " + std::to_string(c_->num_nodes()) + ")");
    builder_.Begin(seeds, out);
    const bool eids = options.sampling.with_edge_ids;
    for (size_t h = 0; h < options.fanouts.size(); ++h) {
      ArrayView<const int64_t> frontier = builder_.Frontier(*out);
      FANOUT_RETURN_IF_ERROR(Route(frontier));
      rpc::SampleCall call;
      call.fanout = options.fanouts[h];
      call.replace = options.sampling.replace;
      call.weighted = options.sampling.weighted;
      call.seed = request_seed;
      call.hop = static_cast<int32_t>(h);
      call.with_edge_ids = eids;
      // One request per partition, all in flight at once.
      auto t0 = std::chrono::steady_clock::now();
      FANOUT_RETURN_IF_ERROR(Exchange([&](int p) { return clients_[p]->SendSample(by_part_[p], call); },
                                      [&](int p) { return clients_[p]->ReceiveSample(by_part_[p].size(), eids, &replies_[p]); }));
      stats_.network_wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      // Merge into frontier order: counts first, then each partition's runs.
      const size_t m = frontier.size();
      hop_.offsets.resize(m + 1);
      hop_.offsets[0] = 0;
      for (int p = 0; p < c_->num_parts(); ++p) {
        auto counts = replies_[p].Counts();
        for (size_t j = 0; j < pos_[p].size(); ++j) hop_.offsets[pos_[p][j] + 1] = counts[j];
      }
      for (size_t i = 0; i < m; ++i) hop_.offsets[i + 1] += hop_.offsets[i];
      hop_.neighbors.resize(hop_.offsets[m]);
      hop_.edge_ids.resize(eids ? hop_.offsets[m] : 0);
      for (int p = 0; p < c_->num_parts(); ++p) {
        auto counts = replies_[p].Counts();
        const int64_t* nbr = replies_[p].Neighbors().data();
        const int64_t* eid = replies_[p].EdgeIds().data();
        int64_t at = 0;
        for (size_t j = 0; j < pos_[p].size(); ++j) {
          int64_t dst = hop_.offsets[pos_[p][j]], k = counts[j];
          std::memcpy(hop_.neighbors.data() + dst, nbr + at, k * 8);
          if (eids) std::memcpy(hop_.edge_ids.data() + dst, eid + at, k * 8);
          at += k;
        }
      }
      builder_.AddHop(hop_, eids, out);
    }
    return Status::OK();
  }

  Status Features(ArrayView<const int64_t> ids, float* out) override {
    FANOUT_RETURN_IF_ERROR(Route(ids));
    const int64_t d = c_->feature_dim();
    auto t0 = std::chrono::steady_clock::now();
    FANOUT_RETURN_IF_ERROR(Exchange([&](int p) { return clients_[p]->SendFeatures(by_part_[p]); },
                                    [&](int p) { return clients_[p]->ReceiveFeatures(&replies_[p].neighbors); }));
    stats_.network_wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (int p = 0; p < c_->num_parts(); ++p) {
      if (by_part_[p].empty()) continue;
      std::string& rows = replies_[p].neighbors;
      stats_.feature_bytes += static_cast<int64_t>(rows.size());
      const rpc::RemotePartitionInfo& info = c_->info_[p];
      datasets::FeatureDType t;
      FANOUT_RETURN_IF_ERROR(datasets::ParseFeatureDType(info.feature_dtype, &t));
      const size_t row = static_cast<size_t>(d) * datasets::FeatureDTypeSize(t);
      if (rows.size() != by_part_[p].size() * row)
        return Status::Corruption("server " + c_->addresses_[p] + ": feature reply of " + std::to_string(rows.size()) +
                                  " bytes for " + std::to_string(by_part_[p].size()) + " rows of " + std::to_string(row));
      // Each row goes straight to its place in the output.
      for (size_t j = 0; j < pos_[p].size(); ++j) {
        float* dst = out + pos_[p][j] * d;
        const char* src = rows.data() + j * row;
        switch (t) {
          case datasets::FeatureDType::kFloat32:
            std::memcpy(dst, src, row);
            break;
          case datasets::FeatureDType::kFloat16:
            for (int64_t q = 0; q < d; ++q) {
              uint16_t h;
              std::memcpy(&h, src + 2 * q, 2);
              dst[q] = datasets::HalfToFloat(h);
            }
            break;
          case datasets::FeatureDType::kInt8:
            for (int64_t q = 0; q < d; ++q) dst[q] = static_cast<float>(static_cast<int8_t>(src[q]) * info.feature_scale);
            break;
        }
      }
    }
    return Status::OK();
  }

  Status Labels(ArrayView<const int64_t> ids, int64_t* out) override {
    FANOUT_RETURN_IF_ERROR(Route(ids));
    FANOUT_RETURN_IF_ERROR(Exchange([&](int p) { return clients_[p]->SendLabels(by_part_[p]); },
                                    [&](int p) { return clients_[p]->ReceiveLabels(&replies_[p].neighbors); }));
    for (int p = 0; p < c_->num_parts(); ++p) {
      if (by_part_[p].empty()) continue;
      std::string& labels = replies_[p].neighbors;
      if (labels.size() != by_part_[p].size() * 8)
        return Status::Corruption("server " + c_->addresses_[p] + ": malformed label reply");
      const int64_t* l = reinterpret_cast<const int64_t*>(labels.data());
      for (size_t j = 0; j < pos_[p].size(); ++j) out[pos_[p][j]] = l[j];
    }
    return Status::OK();
  }

  Status OriginalIds(ArrayView<const int64_t> ids, int64_t* out) override {
    FANOUT_RETURN_IF_ERROR(Route(ids));
    for (int p = 0; p < c_->num_parts(); ++p) {
      if (by_part_[p].empty()) continue;
      std::string orig;
      FANOUT_RETURN_IF_ERROR(clients_[p]->OriginalIds(by_part_[p], &orig));
      const int64_t* o = reinterpret_cast<const int64_t*>(orig.data());
      for (size_t j = 0; j < pos_[p].size(); ++j) out[pos_[p][j]] = o[j];
    }
    return Status::OK();
  }

  Status Degrees(ArrayView<const int64_t> ids, int64_t* out) override {
    FANOUT_RETURN_IF_ERROR(Route(ids));
    std::string deg;
    for (int p = 0; p < c_->num_parts(); ++p) {
      if (by_part_[p].empty()) continue;
      FANOUT_RETURN_IF_ERROR(clients_[p]->Degrees(by_part_[p], &deg));
      const int64_t* d = reinterpret_cast<const int64_t*>(deg.data());
      for (size_t j = 0; j < pos_[p].size(); ++j) out[pos_[p][j]] = d[j];
    }
    return Status::OK();
  }

  Status SplitNodes(int split, std::vector<int64_t>* out) override {
    out->clear();
    std::vector<int64_t> ids;
    std::string splits;
    for (int p = 0; p < c_->num_parts(); ++p) {
      const int64_t step = std::max<int64_t>(1, std::min<int64_t>(c_->info_[p].max_ids_per_request, 1 << 20));
      for (int64_t a = c_->offsets_[p]; a < c_->offsets_[p + 1]; a += step) {
        int64_t b = std::min(c_->offsets_[p + 1], a + step);
        ids.resize(b - a);
        for (int64_t v = a; v < b; ++v) ids[v - a] = v;
        FANOUT_RETURN_IF_ERROR(clients_[p]->Splits(ids, &splits));
        for (int64_t v = a; v < b; ++v)
          if (static_cast<uint8_t>(splits[v - a]) == split) out->push_back(v);
      }
    }
    return Status::OK();
  }

 private:
  const Cluster* c_;
  std::vector<std::unique_ptr<rpc::RpcClient>> clients_;
  std::vector<std::vector<int64_t>> by_part_, pos_;
  std::vector<rpc::SampleReply> replies_;
  sampler::OneHopResult hop_;
  sampler::SubgraphBuilder builder_;
};

Status Cluster::NewSession(std::unique_ptr<Session>* out) {
  auto s = std::make_unique<ClusterSession>(this);
  FANOUT_RETURN_IF_ERROR(s->Open());
  *out = std::move(s);
  return Status::OK();
}

}  // namespace fanout::client
