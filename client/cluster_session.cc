// ClusterSession: one thread's view of the cluster. Each partition has one
// Link (its replica in use, Thrift client, data-plane peer, info, failover and
// fallback state); the session routes ids to partitions, sends, fails over,
// falls back and re-probes per link, and merges the replies.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "client/cluster.h"
#include "common/id_range.h"
#include "datasets/partition_store.h"
#include "rpc/codec.h"
#include "sampler/negative.h"
#include "sampler/temporal.h"
#include "sampler/walk.h"

namespace fanout::client {

// One thread's connections to every partition: a Thrift client each, and a
// data-plane peer on one UCX channel where the data plane is in use.
class ClusterSession : public Session {
 public:
  // Scatter lists up to this long go to ucp_am_recv_data_nbx as an iov.
  static constexpr size_t kMaxDirectSegments = 16;

  // A session keeps its cluster (health checks, replicas, mappings) alive.
  // `mode`: kAuto = the cluster's own choice; kTcp = Thrift only (no data
  // plane, no export read here); kUcx = the UCX data plane, required (no
  // export read here).
  ClusterSession(std::shared_ptr<const Cluster> c, rpc::DataPlaneMode mode)
      : c_(std::move(c)),
        use_local_(mode == rpc::DataPlaneMode::kAuto),
        ctx_(mode == rpc::DataPlaneMode::kTcp ? nullptr : c_->data_ctx_),
        must_ucx_(mode == rpc::DataPlaneMode::kUcx || c_->mode_ == rpc::DataPlaneMode::kUcx) {}
  ~ClusterSession() override { HandOffLocalWork(true); }

  Status Open() {
    const int k = c_->num_parts();
    links_.resize(k);
    for (int p = 0; p < k; ++p) links_[p].info = c_->info_[p];
    // Sessions start on different replicas (round robin), so a loader's
    // workers spread over them; each replica is checked like Connect()'s.
    const uint64_t seq = c_->sessions_++;
    for (int p = 0; p < k; ++p) {
      const auto& reps = c_->replicas_[p];
      const int found =
          static_cast<int>(std::find(reps.begin(), reps.end(), c_->addresses_[p]) - reps.begin());
      // Its own replica in turn, or the next healthy one after it.
      links_[p].home = static_cast<int>((found + seq) % reps.size());
      links_[p].replica = c_->ReplicaOrder(p, links_[p].home).front();
      // Read and sampled here from its mapped export, which outlives the
      // server: nothing needs the server, so nothing waits on it (connected
      // on first need only, EnsureClient).
      if (Local(p) != nullptr && LocalSampling()) continue;
      Status st = c_->ConnectReplica(p, links_[p].replica, &links_[p].client, &links_[p].info);
      if (!st.ok()) {
        // Gone (or not what it should be): another one, where there is one.
        std::vector<std::string> tried;
        FANOUT_RETURN_IF_ERROR(Failover(p, st, &tried));
      }
    }
    by_part_.resize(k);
    served_.assign(k, 0);
    local_hops_.resize(k);
    local_counts_.resize(k);
    work_.resize(k);
    last_handoff_ = std::chrono::steady_clock::now();
    times_by_part_.resize(k);
    walk_keys_by_part_.resize(k);
    pos_.resize(k);
    replies_.resize(k);
    dp_replies_.resize(k);
    views_.resize(k);
    if (ctx_) {
      const bool must = must_ucx_;
      Status st = rpc::DataPlaneChannel::Create(ctx_, c_->options_, &channel_);
      if (!st.ok()) {
        if (must) return st;
        for (int p = 0; p < k; ++p) c_->NoteFallback(Address(p), st.message());
        return Status::OK();
      }
      for (int p = 0; p < k; ++p) {
        if (Local(p) != nullptr && LocalSampling()) continue;  // everything of it is read here
        if (links_[p].info.data_port <= 0) {
          c_->NoteFallback(Address(p), "the server offers no data plane");
          continue;
        }
        st = ConnectDataPlane(p);
        if (!st.ok()) {
          if (must) return st;
          c_->NoteFallback(Address(p), st.message());
          ++stats_.fallbacks;
        }
      }
    }
    return Status::OK();
  }

  // Sends one request to every partition with routed ids (over the data plane
  // where it is in use), then receives every reply. A data plane that fails
  // with Unavailable falls back to Thrift for that server: the same request
  // is sent again there (a pure function: same answer). On a failure,
  // connections with a reply still owed are dropped (reconnected on next
  // use), so no later call can read a stale reply. via_dp_[p] says which
  // path partition p's reply took. `base` null: Thrift only (a request the
  // data plane's wire does not carry).
  template <typename SinkFn, typename SendFn, typename ReceiveFn>
  Status Exchange(const rpc::DataRequest* base, SinkFn&& sink, SendFn&& send, ReceiveFn&& receive) {
    const int k = c_->num_parts();
    if (c_->health_checks_) GoHome();
    if (channel_) Reprobe();
    std::vector<char> owed(k, 0);  // 1 thrift, 2 data plane
    // Whatever ends this call (an error, or an exception from a sink or an
    // allocation), replies still owed are given up: no later call can read
    // a stale reply, and no peer stays busy.
    struct Abandoner {
      ClusterSession* s;
      std::vector<char>* owed;
      ~Abandoner() {
        for (size_t p = 0; p < owed->size(); ++p) {
          if ((*owed)[p] == 1) s->links_[p].client->Abandon();
          if ((*owed)[p] == 2) s->channel_->Abandon(s->links_[p].peer);
        }
      }
    } abandoner{this, &owed};
    via_dp_.assign(k, 0);
    Status st;
    for (int p = 0; p < k && st.ok(); ++p) {
      if (by_part_[p].empty() || served_[p]) continue;
      if (links_[p].peer >= 0 && base != nullptr) {
        rpc::DataRequest r = PartRequest(*base, p);
        st = channel_->Post(links_[p].peer, r, sink(p));
        if (st.ok()) {
          owed[p] = 2;
          continue;
        }
        if (st.code() != Status::Code::kUnavailable) break;
        Fallback(p, st);
        st = Status::OK();
      }
      st = EnsureClient(p);
      if (!st.ok()) break;
      st = WithFailover(p, send(p), [&] { return send(p); });
      owed[p] = 1;
    }
    for (int p = 0; p < k && st.ok(); ++p) {
      if (owed[p] == 2) {
        // Where health checks run, a replica found down is given up at once
        // rather than waited on for the whole deadline.
        const int64_t given_up = channel_->stats().given_up,
                      aborted = channel_->stats().aborted_by_reset;
        const int r = links_[p].replica;
        const std::function<bool()> down_now =
            c_->health_checks_ ? std::function<bool()>([this, p, r] { return !c_->Healthy(p, r); })
                               : std::function<bool()>();
        st = channel_->Wait(links_[p].peer, down_now);
        if (!st.ok() && channel_->stats().aborted_by_reset > aborted) {
          // Lost to a reset for another server's timeout, not a failure of
          // this one: the same request again on its data plane (the endpoint
          // reopens), once.
          rpc::DataRequest again = PartRequest(*base, p);
          st = channel_->Post(links_[p].peer, again, sink(p));
          if (st.ok()) st = channel_->Wait(links_[p].peer, down_now);
        }
        owed[p] = 0;
        if (st.ok()) {
          via_dp_[p] = 1;
          continue;
        }
        if (st.code() != Status::Code::kUnavailable && st.code() != Status::Code::kDeadlineExceeded)
          break;
        const bool down = channel_->stats().given_up > given_up;
        if (c_->replicas_[p].size() > 1 && (down || st.code() == Status::Code::kDeadlineExceeded)) {
          // Another replica answers the same request (a pure function: the
          // same answer) over Thrift now, and over its data plane from then
          // on; the one that timed out or failed its health check is not
          // asked again (counted as a deadline, so not retried first).
          if (down) ++stats_.health_abandons;
          st = WithFailover(p, Status::DeadlineExceeded(st.message()), [&] { return send(p); });
        } else {
          // A timeout resets the channel (its shared-memory FIFO may be
          // wedged by another server that died): resend over Thrift, which
          // has its own deadline for a server that really hangs.
          Fallback(p, st);
          st = WithFailover(p, send(p), [&] { return send(p); });
        }
        if (!st.ok()) break;
        owed[p] = 1;
      }
      if (owed[p] == 1) {
        owed[p] = 0;
        st = WithFailover(p, WatchedReceive(p, receive), [&] {
          Status sent = send(p);
          return sent.ok() ? WatchedReceive(p, receive) : sent;
        });
        if (st.ok()) stats_.thrift_bytes += ThriftBytes(p);
      }
    }
    for (int p = 0; p < k; ++p)
      stats_.requests += !by_part_[p].empty() && !served_[p];  // sent, not served here
    return st;
  }

  // receive(p) on partition p's Thrift connection; where health checks run
  // and p has another replica, a health verdict against its replica ends the
  // wait at once (the socket is shut down) and the call fails as a deadline,
  // so that WithFailover moves it on rather than asking that replica again.
  template <typename ReceiveFn>
  Status WatchedReceive(int p, ReceiveFn&& receive) {
    const int r = links_[p].replica;
    const int fd = c_->health_checks_ && c_->replicas_[p].size() > 1 && links_[p].client
                       ? links_[p].client->DupSocket()
                       : -1;
    if (fd < 0) return receive(p);
    c_->WatchCall(p, r, fd);
    Status st = receive(p);
    c_->UnwatchCall(p, r, fd);
    if (!st.ok() && !c_->Healthy(p, r)) {
      ++stats_.health_abandons;
      return Status::DeadlineExceeded("server " + c_->replicas_[p][r] +
                                      " failed its health check while a call waited on it (" +
                                      st.message() + ")");
    }
    return st;
  }

  // `st` is what partition p's replica answered; where that is Unavailable
  // or DeadlineExceeded, moves p to another replica and runs `again` there
  // (the same request, unchanged: sampling is a pure function of it, so the
  // same answer), at most RpcOptions::max_failovers times. When no replica
  // answers, the error names every address tried and why.
  template <typename AgainFn>
  Status WithFailover(int p, Status st, AgainFn&& again) {
    std::vector<std::string> tried;
    for (int attempt = 0; Retryable(st) && attempt < c_->options_.max_failovers; ++attempt) {
      Status moved = Failover(p, st, &tried);
      if (!moved.ok()) return moved;
      ++stats_.retries;
      st = again();
    }
    return st;
  }

  // A session that failed over returns to its own replica once that passes
  // its health checks again (tried at most once per check interval), so the
  // load spreads again after a restart.
  void GoHome() {
    const auto now = std::chrono::steady_clock::now();
    for (int p = 0; p < c_->num_parts(); ++p) {
      if (!links_[p].client || links_[p].replica == links_[p].home ||
          !c_->Healthy(p, links_[p].home) || now < links_[p].next_home_try)
        continue;
      links_[p].next_home_try = now + std::chrono::milliseconds(c_->options_.health_check_ms);
      std::unique_ptr<rpc::RpcClient> client;
      rpc::RemotePartitionInfo info;
      if (!c_->ConnectReplica(p, links_[p].home, &client, &info).ok()) continue;
      if (channel_ && links_[p].peer >= 0) channel_->Abandon(links_[p].peer);
      links_[p].peer = -1;
      links_[p].replica = links_[p].home;
      links_[p].client = std::move(client);
      links_[p].info = info;
      if (channel_ && info.data_port > 0) {
        Status dp = ConnectDataPlane(p);
        if (!dp.ok()) c_->NoteFallback(Address(p), dp.message());
      }
    }
  }

  // Partition p's Thrift client, connected now where it was not (a
  // co-located partition's link connects only when a call needs its server).
  Status EnsureClient(int p) {
    if (links_[p].client) return Status::OK();
    Status last;
    for (int r : c_->ReplicaOrder(p, links_[p].home)) {
      rpc::RemotePartitionInfo info;
      last = c_->ConnectReplica(p, r, &links_[p].client, &info);
      if (!last.ok()) continue;
      links_[p].replica = r;
      links_[p].info = info;
      return Status::OK();
    }
    return Status::FromCode(
        static_cast<int>(last.code()),
        "partition " + std::to_string(p) + ": no replica answers: " + last.message());
  }

  // The address of partition p's replica in use.
  const std::string& Address(int p) const { return c_->replicas_[p][links_[p].replica]; }

  // Opens the data plane to partition p's replica in use.
  Status ConnectDataPlane(int p) {
    links_[p].peer = -1;
    const std::string& addr = c_->replicas_[p][links_[p].replica];
    std::string host;
    int port = 0;
    FANOUT_RETURN_IF_ERROR(rpc::ParseAddress(addr, &host, &port));
    int peer = -1;
    FANOUT_RETURN_IF_ERROR(
        channel_->Connect(host, links_[p].info.data_port, addr, &peer, links_[p].info.data_ticket));
    links_[p].peer = peer;
    return Status::OK();
  }

  static bool Retryable(const Status& st) {
    return st.code() == Status::Code::kUnavailable || st.code() == Status::Code::kDeadlineExceeded;
  }

  static std::string Join(const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : "; ") + s;
    return out;
  }

  // Moves partition p to its next replica that answers (and to its data
  // plane, where this session uses one) after `why` from the current one;
  // each address tried and why goes into *tried. Waits backoff, 2x backoff,
  // ... between rounds over all replicas. `why` itself with one replica;
  // `why`'s code, naming every address tried, when none answers.
  Status Failover(int p, const Status& why, std::vector<std::string>* tried) {
    const auto& reps = c_->replicas_[p];
    const int n = static_cast<int>(reps.size());
    // A server closes connections that idle too long or that make room for
    // new ones (ConnectionGuard): on the first Unavailable the same replica
    // is asked again, on a new connection, before any other.
    const bool same_first = why.code() == Status::Code::kUnavailable && tried->empty();
    if (n < 2 && !same_first) return why;  // nowhere else to go
    tried->push_back(reps[links_[p].replica] + ": " + why.message());
    c_->NoteFailure(p, links_[p].replica, why.message());
    // A request that timed out calls its replica down for every session
    // (the health probes call it up again once it answers).
    if (n >= 2 && why.code() == Status::Code::kDeadlineExceeded)
      c_->MarkDown(p, links_[p].replica, "a request timed out: " + why.message());
    if (channel_ && links_[p].peer >= 0) channel_->Abandon(links_[p].peer);
    links_[p].peer = -1;
    // The others from the next one on, those that pass their health checks
    // first; the same one again after a round (after backoff).
    std::vector<int> order;
    if (same_first) order.push_back(links_[p].replica);
    if (n >= 2) {
      for (int r : c_->ReplicaOrder(p, (links_[p].replica + 1) % n))
        if (r != links_[p].replica) order.push_back(r);
      order.push_back(links_[p].replica);
    }
    int backoff = std::max(1, c_->options_.failover_backoff_ms);
    for (size_t step = 0; step < order.size(); ++step) {
      const int next = order[step];
      if (step + 1 == order.size() &&
          n >= 2) {  // a whole round failed: wait before going round again
        std::this_thread::sleep_for(std::chrono::milliseconds(backoff));
        backoff = std::min(backoff * 2, 5000);
      }
      std::unique_ptr<rpc::RpcClient> client;
      rpc::RemotePartitionInfo info;
      Status st = c_->ConnectReplica(p, next, &client, &info);
      if (!st.ok()) {
        tried->push_back(reps[next] + ": " + st.message());
        continue;
      }
      // The replica it moves to hears of it (counted there for operators:
      // fanout-ctl stats). Best effort: a server too old to know the call,
      // or one failing now, changes nothing here.
      Status noted = client->NoteFailover(p, reps[links_[p].replica], why.message(),
                                          next == links_[p].replica);
      if (!noted.ok() && !Retryable(noted)) noted = Status::OK();
      if (!noted.ok()) {
        tried->push_back(reps[next] + ": " + noted.message());
        continue;
      }
      if (next != links_[p].replica) {
        ++stats_.failovers;
        ++c_->replica_state(p, next).failovers_to;
        std::fprintf(stderr, "fanout: partition %d: %s failed (%s); now using replica %s\n", p,
                     reps[links_[p].replica].c_str(), why.message().c_str(), reps[next].c_str());
      }
      links_[p].replica = next;
      links_[p].client = std::move(client);
      links_[p].info = info;
      // The new replica's data plane, where this session uses one (else Thrift).
      if (channel_ && info.data_port > 0) {
        Status dp = ConnectDataPlane(p);
        if (!dp.ok()) c_->NoteFallback(Address(p), dp.message());
      }
      return Status::OK();
    }
    if (n < 2) return why;
    return Status::FromCode(
        static_cast<int>(why.code()),
        "partition " + std::to_string(p) + ": no replica answers: " + Join(*tried));
  }

  void Fallback(int p, const Status& why) {
    c_->NoteFallback(Address(p), why.message());
    links_[p].peer = -1;
    ++stats_.fallbacks;
    links_[p].reprobe_at = std::chrono::steady_clock::now() + ReprobeInterval();
  }

  std::chrono::milliseconds ReprobeInterval() const {
    return std::chrono::milliseconds(c_->options_.health_check_ms > 0 ? c_->options_.health_check_ms
                                                                      : 1000);
  }

  // A server whose data plane failed is asked again once per interval
  // (health_check_ms; only while its health checks pass, where they run) and
  // is back on the data plane once it answers: one slow moment does not keep
  // it on Thrift for the rest of the session.
  void Reprobe() {
    const auto now = std::chrono::steady_clock::now();
    for (int p = 0; p < c_->num_parts(); ++p) {
      if (links_[p].peer >= 0 || links_[p].reprobe_at == std::chrono::steady_clock::time_point{} ||
          now < links_[p].reprobe_at)
        continue;
      if (links_[p].info.data_port <= 0 ||
          (c_->health_checks_ && !c_->Healthy(p, links_[p].replica))) {
        links_[p].reprobe_at = now + ReprobeInterval();
        continue;
      }
      Status st = ConnectDataPlane(p);
      links_[p].reprobe_at =
          st.ok() ? std::chrono::steady_clock::time_point{} : now + ReprobeInterval();
      if (st.ok()) {
        ++stats_.reprobes;
        std::fprintf(stderr,
                     "fanout: data plane to server %s answers again; its requests go over it\n",
                     Address(p).c_str());
      }
    }
  }

  // Reply bytes of partition p's last Thrift exchange.
  int64_t ThriftBytes(int p) const {
    const rpc::SampleReply& r = replies_[p];
    return static_cast<int64_t>(r.counts.size() + r.neighbors.size() + r.edge_ids.size());
  }

  // Groups ids by owning partition (positions kept) and range-checks them.
  Status Route(ArrayView<const int64_t> ids) {
    HandOffLocalWork(false);
    const auto& off = c_->offsets_;
    for (int p = 0; p < c_->num_parts(); ++p) {
      by_part_[p].clear();
      pos_[p].clear();
      served_[p] = 0;
      replies_[p].counts.clear();
      replies_[p].neighbors.clear();
      replies_[p].edge_ids.clear();
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      int64_t v = ids[i];
      if (v < 0 || v >= off.back()) return IdOutOfRange(v, i, 0, off.back(), kNoPosition);
      int p = static_cast<int>(std::upper_bound(off.begin(), off.end(), v) - off.begin()) - 1;
      by_part_[p].push_back(v);
      pos_[p].push_back(static_cast<int64_t>(i));
    }
    return Status::OK();
  }

  // `base` for partition p: its ids (and a walk step's keys).
  rpc::DataRequest PartRequest(const rpc::DataRequest& base, int p) const {
    rpc::DataRequest r = base;
    r.ids = by_part_[p];
    if (!base.call.walk_keys.empty()) r.call.walk_keys = walk_keys_by_part_[p];
    return r;
  }

  // A sink that grows partition p's data-plane buffer to the reply's size.
  rpc::ReplySink GrowSink(int p) { return rpc::ReplySink::Grow(&dp_replies_[p]); }

  // Views of partition p's one-hop reply, whichever path it came by.
  struct HopView {
    const int32_t* counts = nullptr;
    const int64_t* neighbors = nullptr;
    const int64_t* edge_ids = nullptr;
    const float* edge_weights = nullptr;  // LABOR hops
  };

  Status ViewDataPlaneSample(int p, bool eids, bool weights, HopView* v) {
    const PodVector<char>& b = dp_replies_[p];
    stats_.ucx_bytes += static_cast<int64_t>(b.size());
    rpc::SampleReplyView r;
    Status st = rpc::DecodeSampleReply(b.data(), b.size(), by_part_[p].size(), eids, &r, weights);
    if (!st.ok()) return Status::Corruption("server " + Address(p) + ": " + st.message());
    v->counts = r.counts;
    v->neighbors = r.neighbors;
    v->edge_ids = r.edge_ids;
    v->edge_weights = r.edge_weights;
    return Status::OK();
  }

  Status Sample(ArrayView<const int64_t> seeds, uint64_t request_seed,
                const sampler::MultiHopOptions& options, sampler::SampledSubgraph* out) override {
    FANOUT_RETURN_IF_ERROR(sampler::CheckMultiHopOptions(options, true));
    IdRangeCheck seed;
    seed.what = "seed";
    FANOUT_RETURN_IF_ERROR(CheckIdsInRange(seeds, 0, c_->num_nodes(), seed));
    builder_.UseDenseIdRange(
        c_->num_nodes());  // the relabel's dedupe, direct-mapped where the id space is small
    builder_.Begin(seeds, out);
    const bool eids = options.sampling.with_edge_ids;
    if (!options.edge_type_fanouts.empty()) {  // heterogeneous: per-edge-type fanouts, over Thrift
      if (c_->hetero_.empty())
        return Status::InvalidArgument("per-edge-type fanouts need a heterogeneous dataset; '" +
                                       c_->info_[0].dataset_name + "' has no edge types");
      std::vector<int64_t> per_hop;
      FANOUT_RETURN_IF_ERROR(
          sampler::HeteroHopFanouts(c_->hetero_, options.edge_type_fanouts, &per_hop));
      if (options.induced)
        return Status::InvalidArgument(
            "subgraph (induced) sampling of heterogeneous graphs is not supported");
      std::vector<int64_t> type_fanouts(options.edge_type_fanouts.size());
      for (size_t h = 0; h < per_hop.size(); ++h) {
        for (size_t e = 0; e < type_fanouts.size(); ++e)
          type_fanouts[e] = options.edge_type_fanouts[e][h];
        FANOUT_RETURN_IF_ERROR(FetchHop(builder_.Frontier(*out), per_hop[h],
                                        static_cast<int32_t>(h), request_seed, options.sampling, {},
                                        {}, "uniform", type_fanouts));
        builder_.AddHop(hop_, eids, out);
      }
      return Status::OK();
    }
    for (size_t h = 0; h < options.fanouts.size(); ++h) {
      FANOUT_RETURN_IF_ERROR(FetchHop(builder_.Frontier(*out), options.fanouts[h],
                                      static_cast<int32_t>(h), request_seed, options.sampling));
      builder_.AddHop(hop_, eids, out);
    }
    if (options.induced) {  // every stored edge of every node among the nodes
      sampler::SamplingOptions every = options.sampling;
      every.weighted = every.replace = every.labor = false;
      // The servers keep only neighbors among the nodes (older ones send
      // every neighbor: SetInducedEdges filters either way).
      keep_.assign(out->n_id.begin(), out->n_id.end());
      std::sort(keep_.begin(), keep_.end());
      keep_.erase(std::unique(keep_.begin(), keep_.end()), keep_.end());
      FANOUT_RETURN_IF_ERROR(FetchHop(builder_.Nodes(*out), -1,
                                      static_cast<int32_t>(options.fanouts.size()), request_seed,
                                      every, keep_));
      builder_.SetInducedEdges(hop_, eids, out);
    }
    return Status::OK();
  }

  Status SampleTemporal(ArrayView<const int64_t> seeds, ArrayView<const int64_t> seed_times,
                        uint64_t request_seed, const sampler::MultiHopOptions& options,
                        sampler::SampledSubgraph* out) override {
    FANOUT_RETURN_IF_ERROR(sampler::CheckTemporalOptions(options));
    for (int p = 0; p < c_->num_parts(); ++p)
      if (!links_[p].info.has_edge_times)
        return Status::InvalidArgument(
            "server " + Address(p) + " (partition " + std::to_string(p) +
            ") serves no edge timestamps: temporal sampling needs a dataset partitioned "
            "with --edge-times, and servers that know it");
    IdRangeCheck seed;
    seed.what = "seed";
    FANOUT_RETURN_IF_ERROR(CheckIdsInRange(seeds, 0, c_->num_nodes(), seed));
    FANOUT_RETURN_IF_ERROR(temporal_.Begin(seeds, seed_times, c_->num_nodes(), out));
    const bool eids = options.sampling.with_edge_ids;
    for (size_t h = 0; h < options.fanouts.size(); ++h) {
      FANOUT_RETURN_IF_ERROR(FetchHop(temporal_.Frontier(*out), options.fanouts[h],
                                      static_cast<int32_t>(h), request_seed, options.sampling, {},
                                      temporal_.FrontierTimes(),
                                      sampler::TemporalStrategyName(options.temporal_strategy)));
      temporal_.AddHop(hop_, eids, out);
    }
    return Status::OK();
  }

  // One hop for `frontier` from the servers owning it, merged into hop_ in
  // frontier order.
  Status FetchHop(ArrayView<const int64_t> frontier, int64_t fanout, int32_t hop,
                  uint64_t request_seed, const sampler::SamplingOptions& sampling,
                  ArrayView<const int64_t> keep = {}, ArrayView<const int64_t> times = {},
                  const char* strategy = "uniform", ArrayView<const int64_t> type_fanouts = {},
                  ArrayView<const uint64_t> walk_keys = {}) {
    const bool eids = sampling.with_edge_ids;
    const bool typed = !type_fanouts.empty();
    const bool walk = !walk_keys.empty();
    const bool weights = sampling.labor && !walk;
    // The most neighbors a node's reply may hold (-1: no bound: every
    // neighbor, or LABOR, whose picks are not capped by the fanout).
    int64_t cap = weights || fanout < 0 ? -1 : fanout;
    if (typed) {
      cap = 0;
      for (int64_t f : type_fanouts) cap = (f < 0 || cap < 0) ? -1 : cap + f;
    }
    FANOUT_RETURN_IF_ERROR(Route(frontier));
    if (walk) {  // each partition's walks' keys, in its order
      for (int p = 0; p < c_->num_parts(); ++p) {
        walk_keys_by_part_[p].resize(pos_[p].size());
        for (size_t j = 0; j < pos_[p].size(); ++j)
          walk_keys_by_part_[p][j] = walk_keys[pos_[p][j]];
      }
    }
    if (!times.empty()) {  // each partition's nodes' times, in its order
      for (int p = 0; p < c_->num_parts(); ++p) {
        times_by_part_[p].resize(pos_[p].size());
        for (size_t j = 0; j < pos_[p].size(); ++j) times_by_part_[p][j] = times[pos_[p][j]];
      }
    }
    rpc::DataRequest req;
    req.method = rpc::DataMethod::kSample;
    rpc::SampleCall& call = req.call;
    call.fanout = fanout;
    call.replace = sampling.replace;
    call.weighted = sampling.weighted;
    call.seed = request_seed;
    call.hop = hop;
    call.with_edge_ids = eids;
    call.keep = keep;
    call.temporal_strategy = strategy;
    call.times = times;
    call.type_fanouts = type_fanouts;
    call.labor = weights;
    call.walk_keys = walk_keys;
    // Co-located partitions are sampled here, on their mapped CSR (the
    // keep filter is the builder's: SetInducedEdges keeps only edges among
    // the nodes, whichever path the hop came by).
    if (LocalSampling())
      for (int p = 0; p < c_->num_parts(); ++p)
        if (Here(p))
          FANOUT_RETURN_IF_ERROR(
              SampleHere(p, fanout, hop, request_seed, sampling,
                         times.empty() ? ArrayView<const int64_t>() : times_by_part_[p], strategy,
                         type_fanouts,
                         walk ? ArrayView<const uint64_t>(walk_keys_by_part_[p])
                              : ArrayView<const uint64_t>()));
    // One request per other partition, all in flight at once.
    auto t0 = std::chrono::steady_clock::now();
    auto part_call = [&](int p) {
      rpc::SampleCall mine = call;
      if (!times.empty()) mine.times = times_by_part_[p];
      if (walk) mine.walk_keys = walk_keys_by_part_[p];
      return mine;
    };
    auto send = [&](int p) { return links_[p].client->SendSample(by_part_[p], part_call(p)); };
    // A data-plane request carries no keep list, times or type fanouts: those go by Thrift.
    FANOUT_RETURN_IF_ERROR(Exchange(
        keep.empty() && times.empty() && !typed ? &req : nullptr,
        [&](int p) { return GrowSink(p); }, send,
        [&](int p) {
          return links_[p].client->ReceiveSample(by_part_[p].size(), part_call(p), &replies_[p]);
        }));
    stats_.network_wait_s +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (int p = 0; p < c_->num_parts(); ++p) {
      if (by_part_[p].empty() || served_[p]) continue;  // served: views_[p] set by SampleHere
      if (via_dp_[p]) {
        FANOUT_RETURN_IF_ERROR(ViewDataPlaneSample(p, eids, weights, &views_[p]));
      } else {
        views_[p] = {replies_[p].Counts().data(), replies_[p].Neighbors().data(),
                     replies_[p].EdgeIds().data(), replies_[p].EdgeWeights().data()};
      }
      // What a server sent, whichever path: no count past the request, no
      // neighbor outside the dataset (a rogue or broken server's reply is
      // refused here, before the merge writes anything).
      int64_t total = 0;
      Status st = rpc::CheckSampleCounts(views_[p].counts, by_part_[p].size(), cap, &total);
      if (st.ok()) st = rpc::CheckNeighborIds(views_[p].neighbors, total, c_->num_nodes());
      if (!st.ok()) return Status::Corruption("server " + Address(p) + ": " + st.message());
    }
    // Merge into frontier order: counts first, then each partition's runs.
    const size_t m = frontier.size();
    hop_.offsets.resize(m + 1);
    hop_.offsets[0] = 0;
    for (int p = 0; p < c_->num_parts(); ++p) {
      const int32_t* counts = views_[p].counts;
      for (size_t j = 0; j < pos_[p].size(); ++j) hop_.offsets[pos_[p][j] + 1] = counts[j];
    }
    for (size_t i = 0; i < m; ++i) hop_.offsets[i + 1] += hop_.offsets[i];
    hop_.neighbors.resize(hop_.offsets[m]);
    hop_.edge_ids.resize(eids ? hop_.offsets[m] : 0);
    hop_.edge_types.resize(typed ? hop_.offsets[m] : 0);
    hop_.edge_weights.resize(weights ? hop_.offsets[m] : 0);
    for (int p = 0; p < c_->num_parts(); ++p) {
      const int32_t* counts = views_[p].counts;
      const int64_t* nbr = views_[p].neighbors;
      const int64_t* eid = views_[p].edge_ids;
      const float* ew = views_[p].edge_weights;
      const int32_t* et = !typed       ? nullptr
                          : served_[p] ? local_hops_[p].edge_types.data()
                                       : replies_[p].EdgeTypes().data();
      if (typed && !by_part_[p].empty() && !served_[p] &&
          replies_[p].EdgeTypes().size() != replies_[p].Neighbors().size())
        return Status::Corruption(
            "server " + Address(p) +
            " sent no edge types for a heterogeneous sample (a server before heterogeneous "
            "sampling?)");
      int64_t at = 0;
      for (size_t j = 0; j < pos_[p].size(); ++j) {
        int64_t dst = hop_.offsets[pos_[p][j]], k = counts[j];
        std::memcpy(hop_.neighbors.data() + dst, nbr + at, k * 8);
        if (eids) std::memcpy(hop_.edge_ids.data() + dst, eid + at, k * 8);
        if (typed) std::memcpy(hop_.edge_types.data() + dst, et + at, k * 4);
        if (weights) std::memcpy(hop_.edge_weights.data() + dst, ew + at, k * 4);
        at += k;
      }
    }
    return Status::OK();
  }

  Status Features(ArrayView<const int64_t> ids, float* out) override {
    FANOUT_RETURN_IF_ERROR(Route(ids));
    const int64_t d = c_->feature_dim();
    if (d == 0) return Status::OK();  // a dataset without feature values: nothing to fetch
    const int k = c_->num_parts();
    std::vector<FeatureDType> types(k);
    for (int p = 0; p < k; ++p)
      FANOUT_RETURN_IF_ERROR(ParseFeatureDType(links_[p].info.feature_dtype, &types[p]));
    // Co-located partitions: each row gathered from the mapped export
    // straight to its place in `out` (one copy, done here).
    for (int p = 0; p < k; ++p) {
      if (!Here(p)) continue;
      const LocalPartition& lp = *Local(p);
      const uint8_t* src = lp.view().features.data();
      const size_t row = lp.row_bytes();
      const int64_t base = lp.view().node_begin;
      const auto& part_ids = by_part_[p];
      const auto& pos = pos_[p];
      const double scale = links_[p].info.feature_scale;
      for (size_t j = 0; j < part_ids.size(); ++j) {
        if (j + 8 < part_ids.size()) __builtin_prefetch(src + (part_ids[j + 8] - base) * row);
        DecodeFeatureRow(types[p], scale,
                         reinterpret_cast<const char*>(src + (part_ids[j] - base) * row), d,
                         out + pos[j] * d);
      }
      const int64_t bytes = static_cast<int64_t>(part_ids.size() * row);
      stats_.feature_bytes += bytes;
      NoteLocal(p, bytes, static_cast<int64_t>(part_ids.size()), bytes, 0, 0);
    }
    std::vector<char> direct(k, 0);  // the data-plane sink was `out` itself
    rpc::DataRequest req;
    req.method = rpc::DataMethod::kFeatures;
    auto t0 = std::chrono::steady_clock::now();
    FANOUT_RETURN_IF_ERROR(Exchange(
        &req,
        [&](int p) {
          if (types[p] != FeatureDType::kFloat32) return GrowSink(p);
          // float32 rows go straight to their rows of the output: one segment
          // per run of consecutive positions.
          direct[p] = 1;
          std::vector<rpc::ReplySink::Segment> segments;
          const size_t row = static_cast<size_t>(d) * 4;
          const auto& pos = pos_[p];
          for (size_t j = 0; j < pos.size();) {
            size_t e = j + 1;
            while (e < pos.size() && pos[e] == pos[e - 1] + 1) ++e;
            segments.push_back({out + pos[j] * d, (e - j) * row});
            j = e;
          }
          if (segments.size() > kMaxDirectSegments) {
            // UCX 1.13 receives long scatter lists slowly (measured in
            // docs/BENCHMARKS.md): take the rows into a buffer and copy.
            direct[p] = 0;
            return GrowSink(p);
          }
          return rpc::ReplySink::Scatter(std::move(segments));
        },
        [&](int p) { return links_[p].client->SendFeatures(by_part_[p]); },
        [&](int p) { return links_[p].client->ReceiveFeatures(&replies_[p].neighbors); }));
    stats_.network_wait_s +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (int p = 0; p < k; ++p) {
      if (by_part_[p].empty() || served_[p]) continue;
      const FeatureDType t = types[p];
      const size_t row = static_cast<size_t>(d) * FeatureDTypeSize(t);
      if (direct[p] && via_dp_[p]) {  // rows landed in `out` already
        stats_.feature_bytes += static_cast<int64_t>(by_part_[p].size() * row);
        stats_.ucx_bytes += static_cast<int64_t>(by_part_[p].size() * row);
        continue;
      }
      // Rows in a buffer: Thrift's reply, or the data plane's for a dtype to convert.
      const bool dp = via_dp_[p];
      const char* rows = dp ? dp_replies_[p].data() : replies_[p].neighbors.data();
      const size_t size = dp ? dp_replies_[p].size() : replies_[p].neighbors.size();
      if (dp) stats_.ucx_bytes += static_cast<int64_t>(size);
      stats_.feature_bytes += static_cast<int64_t>(size);
      const rpc::RemotePartitionInfo& info = links_[p].info;
      if (size != by_part_[p].size() * row)
        return Status::Corruption(
            "server " + Address(p) + ": feature reply of " + std::to_string(size) + " bytes for " +
            std::to_string(by_part_[p].size()) + " rows of " + std::to_string(row));
      // Each row goes straight to its place in the output.
      for (size_t j = 0; j < pos_[p].size(); ++j)
        DecodeFeatureRow(t, info.feature_scale, rows + j * row, d, out + pos_[p][j] * d);
    }
    return Status::OK();
  }

  Status FeaturesToDevice(ArrayView<const int64_t> ids, float* d_out, int device) override {
    (void)device;  // UCX finds the device from the pointer (ucp_mem_query / memory type)
    if (!channel_ || !ctx_ || !ctx_->info().cuda)
      return Status::NotSupported(
          "the data plane cannot receive into CUDA memory here (" +
          std::string(!ctx_ ? "no UCX data plane" : "this UCX was built without CUDA") + ")");
    FANOUT_RETURN_IF_ERROR(Route(ids));
    const int k = c_->num_parts();
    const int64_t d = c_->feature_dim();
    const size_t row = static_cast<size_t>(d) * 4;
    std::vector<rpc::ReplySink> sinks(k);
    for (int p = 0; p < k; ++p) {
      if (by_part_[p].empty()) continue;
      if (links_[p].peer < 0)
        return Status::NotSupported("server " + Address(p) + " is not on the data plane");
      FeatureDType t;
      FANOUT_RETURN_IF_ERROR(ParseFeatureDType(links_[p].info.feature_dtype, &t));
      if (t != FeatureDType::kFloat32)
        return Status::NotSupported("server " + Address(p) + " stores " +
                                    links_[p].info.feature_dtype + " rows (converted on the host)");
      std::vector<rpc::ReplySink::Segment> segments;
      const auto& pos = pos_[p];
      for (size_t j = 0; j < pos.size();) {
        size_t e = j + 1;
        while (e < pos.size() && pos[e] == pos[e - 1] + 1) ++e;
        segments.push_back({reinterpret_cast<char*>(d_out + pos[j] * d), (e - j) * row});
        j = e;
      }
      if (segments.size() > kMaxDirectSegments)
        return Status::NotSupported("ids of server " + Address(p) + " form " +
                                    std::to_string(segments.size()) + " runs (sort them)");
      sinks[p] = rpc::ReplySink::Scatter(std::move(segments), rpc::MemoryKind::kCuda);
    }
    rpc::DataRequest req;
    req.method = rpc::DataMethod::kFeatures;
    auto t0 = std::chrono::steady_clock::now();
    std::vector<char> owed(k, 0);
    Status st;
    for (int p = 0; p < k && st.ok(); ++p) {
      if (by_part_[p].empty()) continue;
      rpc::DataRequest r = req;
      r.ids = by_part_[p];
      st = channel_->Post(links_[p].peer, r, sinks[p]);
      if (st.ok()) owed[p] = 1;
    }
    for (int p = 0; p < k && st.ok(); ++p) {
      if (!owed[p]) continue;
      st = channel_->Wait(links_[p].peer);
      owed[p] = 0;
      if (st.ok()) {
        const int64_t bytes = static_cast<int64_t>(by_part_[p].size() * row);
        stats_.feature_bytes += bytes;
        stats_.ucx_bytes += bytes;
      }
    }
    if (!st.ok()) {
      for (int p = 0; p < k; ++p)
        if (owed[p]) channel_->Abandon(links_[p].peer);
      // A failed endpoint is closed: the next Exchange() finds it so and
      // falls back to Thrift; the caller may stage these rows meanwhile.
    }
    stats_.requests += k;
    stats_.network_wait_s +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return st;
  }

  Status Labels(ArrayView<const int64_t> ids, int64_t* out) override {
    FANOUT_RETURN_IF_ERROR(Route(ids));
    if (!links_[0].info.has_labels) {  // every label unknown, as the dataset in process says
      std::fill(out, out + ids.size(), int64_t{-1});
      return Status::OK();
    }
    for (int p = 0; p < c_->num_parts(); ++p)
      if (Here(p)) {
        const ArrayView<const int64_t> labels = Local(p)->view().labels;
        LookupHere(p, out, [&](int64_t r) { return labels[r]; });
      }
    rpc::DataRequest req;
    req.method = rpc::DataMethod::kLabels;
    for (auto& b : dp_replies_) b.clear();
    FANOUT_RETURN_IF_ERROR(Exchange(
        &req, [&](int p) { return GrowSink(p); },
        [&](int p) { return links_[p].client->SendLabels(by_part_[p]); },
        [&](int p) { return links_[p].client->ReceiveLabels(&replies_[p].neighbors); }));
    for (int p = 0; p < c_->num_parts(); ++p) {
      if (by_part_[p].empty() || served_[p]) continue;
      const char* data = via_dp_[p] ? dp_replies_[p].data() : replies_[p].neighbors.data();
      const size_t size = via_dp_[p] ? dp_replies_[p].size() : replies_[p].neighbors.size();
      if (size != by_part_[p].size() * 8)
        return Status::Corruption("server " + Address(p) + ": malformed label reply");
      if (via_dp_[p]) stats_.ucx_bytes += static_cast<int64_t>(size);
      const int64_t* l = reinterpret_cast<const int64_t*>(data);
      for (size_t j = 0; j < pos_[p].size(); ++j) out[pos_[p][j]] = l[j];
    }
    return Status::OK();
  }

  Status OriginalIds(ArrayView<const int64_t> ids, int64_t* out) override {
    FANOUT_RETURN_IF_ERROR(Route(ids));
    for (int p = 0; p < c_->num_parts(); ++p) {
      if (by_part_[p].empty()) continue;
      if (Here(p)) {
        const ArrayView<const int64_t> orig = Local(p)->view().original_ids;
        LookupHere(p, out, [&](int64_t r) { return orig[r]; });
        continue;
      }
      std::string orig;
      FANOUT_RETURN_IF_ERROR(links_[p].client->OriginalIds(by_part_[p], &orig));
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
      if (Here(p)) {
        const sampler::CsrGraph& g = Local(p)->graph();
        LookupHere(p, out, [&](int64_t r) { return g.degree(r); });
        continue;
      }
      FANOUT_RETURN_IF_ERROR(links_[p].client->Degrees(by_part_[p], &deg));
      const int64_t* d = reinterpret_cast<const int64_t*>(deg.data());
      for (size_t j = 0; j < pos_[p].size(); ++j) out[pos_[p][j]] = d[j];
    }
    return Status::OK();
  }

  void UseThreadPool(ThreadPool* pool) override { pool_ = pool; }

  Status WalkStep(ArrayView<const int64_t> nodes, ArrayView<const uint64_t> keys, bool weighted,
                  int64_t* next) override {
    if (keys.size() != nodes.size())
      return Status::InvalidArgument("walk step: " + std::to_string(nodes.size()) + " nodes but " +
                                     std::to_string(keys.size()) + " walk keys");
    if (nodes.empty()) return Status::OK();
    sampler::SamplingOptions so;
    so.weighted = weighted;
    so.with_edge_ids = false;
    FANOUT_RETURN_IF_ERROR(FetchHop(nodes, 1, 0, 0, so, {}, {}, "uniform", {}, keys));
    for (size_t i = 0; i < nodes.size(); ++i) {
      const int64_t k = hop_.offsets[i + 1] - hop_.offsets[i];
      if (k > 1)
        return Status::Corruption("a walk step came back with " + std::to_string(k) +
                                  " neighbors for one walk (a server before random walks?)");
      next[i] = k == 1 ? hop_.neighbors[hop_.offsets[i]] : -1;
    }
    return Status::OK();
  }
  bool StoresIncoming() const override { return c_->info_[0].direction != "out"; }

  Status HasEdges(ArrayView<const int64_t> src, ArrayView<const int64_t> dst, uint8_t* exists,
                  int edge_type) override {
    if (src.size() != dst.size())
      return Status::InvalidArgument("HasEdges: " + std::to_string(src.size()) + " sources but " +
                                     std::to_string(dst.size()) + " destinations");
    const bool in = c_->info_[0].direction != "out";
    ArrayView<const int64_t> rows = in ? dst : src, nbrs = in ? src : dst;
    IdRangeCheck check;
    check.what = "node";
    FANOUT_RETURN_IF_ERROR(CheckIdsInRange(nbrs, 0, c_->num_nodes(), check));
    FANOUT_RETURN_IF_ERROR(Route(rows));
    const int k = c_->num_parts();
    std::vector<std::vector<int64_t>> part_nbrs(k);
    std::vector<std::string> found(k);
    for (int p = 0; p < k; ++p) {
      part_nbrs[p].resize(pos_[p].size());
      for (size_t j = 0; j < pos_[p].size(); ++j) part_nbrs[p][j] = nbrs[pos_[p][j]];
    }
    if (edge_type >= 0 && edge_type >= c_->hetero_.num_edge_types())
      return Status::InvalidArgument("has_edges: edge type " + std::to_string(edge_type) +
                                     " is outside [0, " +
                                     std::to_string(c_->hetero_.num_edge_types()) + ")");
    for (int p = 0; p < k; ++p)
      if (Here(p)) {
        const LocalPartition& lp = *Local(p);
        const int32_t* types = lp.view().edge_types.empty() ? nullptr : lp.view().edge_types.data();
        LookupHere(p, exists, [&, j = size_t{0}](int64_t r) mutable {
          return static_cast<uint8_t>(
              sampler::RowHasNeighbor(lp.graph(), r, part_nbrs[p][j++], types, edge_type));
        });
      }
    auto t0 = std::chrono::steady_clock::now();
    Status st = Exchange(
        nullptr, [&](int p) { return GrowSink(p); },
        [&](int p) { return links_[p].client->SendHasEdges(by_part_[p], part_nbrs[p], edge_type); },
        [&](int p) { return links_[p].client->ReceiveHasEdges(by_part_[p].size(), &found[p]); });
    if (st.IsNotSupported())
      return Status::NotSupported(st.message() +
                                  ": strict negative sampling needs servers with has_edges; "
                                  "upgrade them or sample non-strict negatives");
    FANOUT_RETURN_IF_ERROR(st);
    for (int p = 0; p < k; ++p) {
      if (by_part_[p].empty() || served_[p]) continue;
      stats_.thrift_bytes += static_cast<int64_t>(found[p].size());
      for (size_t j = 0; j < pos_[p].size(); ++j)
        exists[pos_[p][j]] = static_cast<uint8_t>(found[p][j] != 0);
    }
    stats_.network_wait_s +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return Status::OK();
  }

  Status SplitNodes(int split, std::vector<int64_t>* out) override {
    out->clear();
    std::vector<int64_t> ids;
    std::string splits;
    for (int p = 0; p < c_->num_parts(); ++p) {
      if (const LocalPartition* lp = Local(p)) {
        const auto& v = lp->view();
        for (size_t r = 0; r < v.split.size(); ++r)
          if (v.split[r] == split) out->push_back(v.node_begin + static_cast<int64_t>(r));
        continue;
      }
      const int64_t step =
          std::max<int64_t>(1, std::min<int64_t>(links_[p].info.max_ids_per_request, 1 << 20));
      for (int64_t a = c_->offsets_[p]; a < c_->offsets_[p + 1]; a += step) {
        int64_t b = std::min(c_->offsets_[p + 1], a + step);
        ids.resize(b - a);
        for (int64_t v = a; v < b; ++v) ids[v - a] = v;
        FANOUT_RETURN_IF_ERROR(links_[p].client->Splits(ids, &splits));
        for (int64_t v = a; v < b; ++v)
          if (static_cast<uint8_t>(splits[v - a]) == split) out->push_back(v);
      }
    }
    return Status::OK();
  }

 private:
  // Partition p's part of this call is read from its mapped export here.
  // Partition p's mapped export where this session reads exports, else null.
  const LocalPartition* Local(int p) const { return use_local_ ? c_->local(p) : nullptr; }
  bool LocalSampling() const { return use_local_ && c_->local_sampling(); }

  bool Here(int p) const { return !by_part_[p].empty() && Local(p) != nullptr; }

  // Counts what was done here for partition p (SessionStats and the next
  // report to its server).
  void NoteLocal(int p, int64_t bytes, int64_t feature_rows, int64_t feature_bytes, int64_t nodes,
                 int64_t edges) {
    served_[p] = 1;
    rpc::LocalWork& w = work_[p];
    ++w.requests;
    w.bytes += bytes;
    w.feature_rows += feature_rows;
    w.feature_bytes += feature_bytes;
    w.sampled_nodes += nodes;
    w.sampled_edges += edges;
    stats_.local_bytes += bytes;
    stats_.local_edges += edges;
    stats_.local_rows += feature_rows;
  }

  // Hands what this session did on the exports to the cluster's reporter
  // (cluster.h: a background thread tells the servers), at most four times a
  // second and when the session closes. No call: a stopped server costs a
  // batch nothing.
  void HandOffLocalWork(bool now) {
    const auto t = std::chrono::steady_clock::now();
    if (!now && t - last_handoff_ < std::chrono::milliseconds(250)) return;
    last_handoff_ = t;
    for (size_t p = 0; p < work_.size(); ++p) {
      if (work_[p].empty()) continue;
      c_->AddLocalWork(static_cast<int>(p), work_[p]);
      work_[p] = rpc::LocalWork();
    }
  }

  // Lookup `value_of_row(local row)` of partition p's ids from its export.
  template <typename T, typename Fn>
  void LookupHere(int p, T* out, Fn&& value_of_row) {
    const int64_t base = Local(p)->view().node_begin;
    const auto& ids = by_part_[p];
    for (size_t j = 0; j < ids.size(); ++j) out[pos_[p][j]] = value_of_row(ids[j] - base);
    NoteLocal(p, static_cast<int64_t>(ids.size() * sizeof(T)), 0, 0, 0, 0);
  }

  // One hop of partition p's frontier sampled here, as its server would
  // (server/service.cc runs the same kernels on the same memory).
  Status SampleHere(int p, int64_t fanout, int32_t hop, uint64_t request_seed,
                    const sampler::SamplingOptions& sampling, ArrayView<const int64_t> times,
                    const char* strategy, ArrayView<const int64_t> type_fanouts,
                    ArrayView<const uint64_t> walk_keys) {
    const LocalPartition& lp = *Local(p);
    sampler::SamplingOptions so = sampling;
    so.node_offset = lp.view().node_begin;
    sampler::OneHopResult& r = local_hops_[p];
    const auto& ids = by_part_[p];
    if (!walk_keys.empty()) {
      sampler::SamplingOptions step = so;
      step.labor = false;
      FANOUT_RETURN_IF_ERROR(sampler::SampleWalkStep(lp.graph(), ids, walk_keys, step, &r));
    } else if (!times.empty()) {
      sampler::TemporalStrategy how;
      FANOUT_RETURN_IF_ERROR(sampler::ParseTemporalStrategy(strategy, &how));
      sampler::SampleTemporalHop(lp.graph(), lp.view().edge_times.data(), lp.time_index(),
                                 so.node_offset, ids, times, fanout, hop, request_seed, how,
                                 so.with_edge_ids, &r);
    } else if (!type_fanouts.empty()) {
      FANOUT_RETURN_IF_ERROR(sampler::SampleHeteroHop(lp.graph(), lp.view().edge_types.data(), ids,
                                                      type_fanouts, hop, request_seed, so, &r));
    } else {
      FANOUT_RETURN_IF_ERROR(
          local_sampler_.Sample(lp.graph(), ids, fanout, hop, request_seed, so, pool_, &r));
    }
    std::vector<int32_t>& counts = local_counts_[p];
    counts.resize(ids.size());
    for (size_t j = 0; j < ids.size(); ++j)
      counts[j] = static_cast<int32_t>(r.offsets[j + 1] - r.offsets[j]);
    const int64_t edges = r.offsets[ids.size()];
    const bool weights = !r.edge_weights.empty();
    NoteLocal(p,
              edges * ((so.with_edge_ids ? 16 : 8) + (weights ? 4 : 0)) +
                  static_cast<int64_t>(ids.size()) * 4,
              0, 0, static_cast<int64_t>(ids.size()), edges);
    views_[p] = {counts.data(), r.neighbors.data(), so.with_edge_ids ? r.edge_ids.data() : nullptr,
                 weights ? r.edge_weights.data() : nullptr};
    return Status::OK();
  }

  const std::shared_ptr<const Cluster> c_;
  const bool use_local_;                              // read co-located exports here
  const std::shared_ptr<rpc::DataPlaneContext> ctx_;  // the data plane used (null: Thrift only)
  const bool must_ucx_;                               // the data plane is required
  // Partition p's link: the one owner of everything about reaching it (the
  // replica in use, its connections, its info, failover and fallback state);
  // every message names links_[p]'s replica (Address(p)).
  struct Link {
    int replica = 0;  // index into c_->replicas_[p] of the replica in use
    int home = 0;     // ... of the replica this session started on (its share of the load)
    std::chrono::steady_clock::time_point next_home_try;  // when to try going home again
    std::chrono::steady_clock::time_point reprobe_at;     // when to try its data plane again
    std::unique_ptr<rpc::RpcClient> client;  // Thrift; null when everything is read here
    int peer = -1;                           // data-plane peer, -1 = Thrift
    rpc::RemotePartitionInfo info;           // of the replica in use
  };
  std::vector<Link> links_;
  std::vector<char> served_;  // per partition: this call's part was served here (not sent)
  std::vector<sampler::OneHopResult> local_hops_;   // per partition: its hop sampled here
  std::vector<std::vector<int32_t>> local_counts_;  // ... and its per-node counts
  sampler::HopSampler local_sampler_;
  ThreadPool* pool_ = nullptr;        // UseThreadPool's (large local hops split over it)
  std::vector<rpc::LocalWork> work_;  // per partition: done here since the last hand-off
  std::chrono::steady_clock::time_point last_handoff_;
  std::vector<char> via_dp_;  // per partition: the last Exchange's reply came over the data plane
  std::vector<std::vector<int64_t>> by_part_, pos_;
  std::vector<rpc::SampleReply> replies_;
  std::vector<PodVector<char>> dp_replies_;
  std::vector<HopView> views_;
  sampler::OneHopResult hop_;
  sampler::SubgraphBuilder builder_;
  std::vector<int64_t> keep_;                        // the induced pass's node set, ascending
  std::vector<std::vector<int64_t>> times_by_part_;  // a temporal hop's times, routed as by_part_
  std::vector<std::vector<uint64_t>> walk_keys_by_part_;  // a walk step's keys, routed as by_part_
  sampler::TemporalBuilder temporal_;
  // Last, so that it goes first: UCX may still read the send ids (by_part_)
  // and write into the sinks (dp_replies_, views_) until the channel is gone.
  std::unique_ptr<rpc::DataPlaneChannel> channel_;
};

Status Cluster::NewSession(std::unique_ptr<Session>* out) {
  return NewSession(rpc::DataPlaneMode::kAuto, out);
}

Status Cluster::NewSession(rpc::DataPlaneMode mode, std::unique_ptr<Session>* out) {
  if (mode == rpc::DataPlaneMode::kUcx && !data_ctx_)
    return Status::NotSupported(
        "a UCX data-plane session on a cluster without a UCX data plane (connected with "
        "data_plane \"" +
        std::string(rpc::DataPlaneModeName(mode_)) + "\" or UCX could not start here)");
  auto s = std::make_unique<ClusterSession>(shared_from_this(), mode);
  FANOUT_RETURN_IF_ERROR(s->Open());
  *out = std::move(s);
  return Status::OK();
}

namespace {
// A cluster whose sessions reach the servers another way (Cluster::WithSessionMode).
class SessionModeSource : public Source {
 public:
  SessionModeSource(std::shared_ptr<Cluster> c, rpc::DataPlaneMode mode)
      : c_(std::move(c)), mode_(mode) {}
  Status NewSession(std::unique_ptr<Session>* out) override { return c_->NewSession(mode_, out); }
  int64_t num_nodes() const override { return c_->num_nodes(); }
  int64_t feature_dim() const override { return c_->feature_dim(); }
  int64_t num_classes() const override { return c_->num_classes(); }
  std::string description() const override {
    return c_->description() + " (sessions: " + rpc::DataPlaneModeName(mode_) + ")";
  }
  const sampler::HeteroSchema* hetero() const override { return c_->hetero(); }
  std::vector<ReplicaHealth> Health() const override { return c_->Health(); }

 private:
  const std::shared_ptr<Cluster> c_;
  const rpc::DataPlaneMode mode_;
};
}  // namespace

std::shared_ptr<Source> Cluster::WithSessionMode(rpc::DataPlaneMode mode) {
  if (mode == rpc::DataPlaneMode::kAuto) return shared_from_this();
  return std::make_shared<SessionModeSource>(shared_from_this(), mode);
}

}  // namespace fanout::client
