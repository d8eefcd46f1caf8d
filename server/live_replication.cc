#include "server/live_replication.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>

#include "rpc/rpc_client.h"
#include "server/prometheus_text.h"

namespace fanout::server {

namespace {

using Clock = std::chrono::steady_clock;

void PutRecord(uint64_t version, std::string_view batch, std::string* out) {
  char h[12];
  const uint32_t n = static_cast<uint32_t>(batch.size());
  std::memcpy(h, &version, 8);
  std::memcpy(h + 8, &n, 4);
  out->append(h, 12);
  out->append(batch.data(), batch.size());
}

// How far `older` is behind `newer` (0 where it is not).
uint64_t Behind(uint64_t newer, uint64_t older) { return newer > older ? newer - older : 0; }

// A follower's name is printed and used as a metrics label: a short run of
// [A-Za-z0-9._:-] only.
Status CheckFollowerName(const std::string& name) {
  if (name.empty() || name.size() > ReplicaFeed::kMaxFollowerName)
    return Status::InvalidArgument("a follower names itself in 1 to " +
                                   std::to_string(ReplicaFeed::kMaxFollowerName) + " characters");
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == ':' ||
          c == '-'))
      return Status::InvalidArgument("a follower's name may hold letters, digits and . _ : - only");
  return Status::OK();
}

}  // namespace

Status ParseFeedRecords(std::string_view bytes, uint64_t first, std::vector<FeedRecord>* out) {
  out->clear();
  size_t at = 0;
  while (at < bytes.size()) {
    if (bytes.size() - at < 12)
      return Status::InvalidArgument("update feed: a record header cut short at byte " +
                                     std::to_string(at));
    FeedRecord r;
    uint32_t n = 0;
    std::memcpy(&r.version, bytes.data() + at, 8);
    std::memcpy(&n, bytes.data() + at + 8, 4);
    at += 12;
    if (n > bytes.size() - at)
      return Status::InvalidArgument("update feed: record " + std::to_string(r.version) + " of " +
                                     std::to_string(n) + " bytes runs past the reply");
    const uint64_t expect = out->empty() ? first : out->back().version + 1;
    if (expect != 0 && r.version != expect)
      return Status::InvalidArgument("update feed: record " + std::to_string(r.version) +
                                     " where " + std::to_string(expect) + " was due");
    r.batch = bytes.substr(at, n);
    at += n;
    out->push_back(r);
  }
  return Status::OK();
}

void ReplicaFeed::Configure(int64_t max_bytes, int wait_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  max_bytes_ = max_bytes;
  wait_ms_ = wait_ms;
}

void ReplicaFeed::SetOldest(uint64_t version) {
  std::lock_guard<std::mutex> lock(mu_);
  oldest_ = version;
  published_ = std::max(published_, version);
}

void ReplicaFeed::Add(uint64_t version, std::string_view batch) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!records_.empty() && version != records_.back().version + 1) {
    // Not consecutive (cannot happen in log order): start over from here.
    records_.clear();
    bytes_ = 0;
  }
  if (records_.empty()) oldest_ = version - 1;
  records_.push_back({version, std::string(batch)});
  bytes_ += static_cast<int64_t>(batch.size()) + 12;
  while (bytes_ > max_bytes_ && records_.size() > 1) {
    bytes_ -= static_cast<int64_t>(records_.front().batch.size()) + 12;
    oldest_ = records_.front().version;
    records_.pop_front();
  }
}

void ReplicaFeed::Publish(uint64_t version) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (version <= published_) return;
    published_ = version;
  }
  cv_.notify_all();
}

Status ReplicaFeed::Fetch(const std::string& name, uint64_t after, int64_t max_bytes,
                          std::string* records, uint64_t* committed, uint64_t* oldest) {
  FANOUT_RETURN_IF_ERROR(CheckFollowerName(name));
  records->clear();
  std::unique_lock<std::mutex> lock(mu_);
  *committed = published_;
  *oldest = oldest_;
  if (after > published_)
    return Status::InvalidArgument(
        "follower " + name + " holds version " + std::to_string(after) +
        " and this primary has only " + std::to_string(published_) +
        ": it holds records the primary does not (did the primary lose its log, or is the "
        "follower's folder another partition's?)");
  if (after < oldest_)
    return Status::NotFound(
        "follower " + name + " holds version " + std::to_string(after) +
        " and this primary keeps records after version " + std::to_string(oldest_) +
        " only (the rest are folded into its base file): start the follower from a copy of the "
        "primary's live folder (part-<k>.base and part-<k>.updates.log)");
  // Its acknowledgement.
  auto it = followers_.find(name);
  if (it == followers_.end()) {
    if (followers_.size() >= kMaxFollowers) {
      // The one heard from least recently, out of sync, makes room.
      auto oldest_seen = followers_.end();
      for (auto f = followers_.begin(); f != followers_.end(); ++f)
        if (!f->second.in_sync &&
            (oldest_seen == followers_.end() || f->second.seen < oldest_seen->second.seen))
          oldest_seen = f;
      if (oldest_seen == followers_.end())
        return Status::ResourceExhausted("this primary has " + std::to_string(kMaxFollowers) +
                                         " followers in sync already");
      followers_.erase(oldest_seen);
    }
    it = followers_.emplace(name, Follower()).first;
  }
  Follower& f = it->second;
  // What it holds now (a follower that lost its folder and came back under
  // its name holds less than it once acknowledged).
  f.acked = after;
  f.seen = Clock::now();
  if (!f.in_sync && f.acked >= published_) {
    f.in_sync = true;
    std::fprintf(stderr, "fanout-server: follower %s is in sync at version %llu\n", name.c_str(),
                 static_cast<unsigned long long>(f.acked));
  }
  cv_.notify_all();
  // The records after `after` that are durable.
  if (after < published_ && !records_.empty()) {
    const uint64_t first = records_.front().version;
    size_t i = static_cast<size_t>(after + 1 - first);
    int64_t taken = 0;
    for (; i < records_.size() && records_[i].version <= published_; ++i) {
      const Record& r = records_[i];
      if (taken > 0 && taken + static_cast<int64_t>(r.batch.size()) + 12 > max_bytes) break;
      PutRecord(r.version, r.batch, records);
      taken += static_cast<int64_t>(r.batch.size()) + 12;
    }
  }
  return Status::OK();
}

void ReplicaFeed::WaitNewer(uint64_t after, int wait_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(std::clamp(wait_ms, 0, 1000)),
               [&] { return stopping_ || published_ > after; });
}

void ReplicaFeed::WaitFollowers(uint64_t version) {
  std::unique_lock<std::mutex> lock(mu_);
  auto all_acked = [&] {
    if (stopping_) return true;
    for (const auto& [name, f] : followers_)
      if (f.in_sync && f.acked < version) return false;
    return true;
  };
  if (all_acked()) return;
  ++waits_;
  if (cv_.wait_for(lock, std::chrono::milliseconds(wait_ms_), all_acked)) return;
  ++wait_timeouts_;
  for (auto& [name, f] : followers_)
    if (f.in_sync && f.acked < version) {
      f.in_sync = false;
      ++f.fell_behind;
      std::fprintf(stderr,
                   "fanout-server: follower %s fell behind (it acknowledged version %llu of %llu "
                   "within %d ms): writes no longer wait for it until it has caught up\n",
                   name.c_str(), static_cast<unsigned long long>(f.acked),
                   static_cast<unsigned long long>(version), wait_ms_);
    }
}

void ReplicaFeed::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

nlohmann::json ReplicaFeed::StatsJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json followers = nlohmann::json::array();
  const auto now = Clock::now();
  for (const auto& [name, f] : followers_)
    followers.push_back({{"name", name},
                         {"acknowledged", f.acked},
                         {"lag", Behind(published_, f.acked)},
                         {"in_sync", f.in_sync},
                         {"fell_behind", f.fell_behind},
                         {"seen_s_ago", std::chrono::duration<double>(now - f.seen).count()}});
  return {{"role", "primary"},
          {"followers", followers},
          {"feed", {{"records", records_.size()}, {"bytes", bytes_}, {"oldest", oldest_}}},
          {"waits", waits_},
          {"wait_timeouts", wait_timeouts_},
          {"wait_ms", wait_ms_}};
}

void ReplicaFeed::Prometheus(PrometheusText* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  out->Family("fanout_live_replica_lag", "gauge",
              "Versions a follower replica has not acknowledged yet (this primary's view).");
  for (const auto& [name, f] : followers_)
    out->Sample("fanout_live_replica_lag", "replica=\"" + name + "\"",
                static_cast<int64_t>(Behind(published_, f.acked)));
  out->Family("fanout_live_replica_in_sync", "gauge",
              "1 while a follower replica is in sync (writes wait for it), else 0.");
  for (const auto& [name, f] : followers_)
    out->Sample("fanout_live_replica_in_sync", "replica=\"" + name + "\"",
                static_cast<int64_t>(f.in_sync ? 1 : 0));
  out->Counter("fanout_live_replica_wait_timeouts_total",
               "Writes whose wait for an in-sync follower's acknowledgement timed out.",
               wait_timeouts_);
}

struct FollowerLink::Conn {
  std::unique_ptr<rpc::RpcClient> client;
};

FollowerLink::FollowerLink(Options options, std::function<uint64_t()> committed,
                           std::function<Status(const std::vector<FeedRecord>&)> apply)
    : options_(std::move(options)),
      committed_(std::move(committed)),
      apply_(std::move(apply)),
      conn_(std::make_unique<Conn>()) {}

FollowerLink::~FollowerLink() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status FollowerLink::Round(int wait_ms) {
  if (!conn_->client) {
    rpc::RpcOptions ro;
    ro.connect_timeout_ms = 2000;
    ro.call_timeout_ms = wait_ms + 10000;
    ro.auth_token = options_.token;
    ro.tls.ca = options_.tls_ca;
    ro.tls.cert = options_.tls_cert;
    ro.tls.key = options_.tls_key;
    ro.data_plane = rpc::DataPlaneMode::kTcp;
    Status st = rpc::RpcClient::Connect(options_.primary, ro, &conn_->client);
    if (!st.ok()) {
      conn_->client.reset();
      return st;
    }
  }
  const uint64_t at = committed_();
  rpc::RpcClient::UpdateFeed feed;
  Status st = conn_->client->FetchUpdates(static_cast<int64_t>(at), wait_ms, options_.name,
                                          options_.max_bytes, &feed);
  if (!st.ok()) {
    if (st.code() == Status::Code::kUnavailable || st.code() == Status::Code::kDeadlineExceeded)
      conn_->client.reset();  // reconnect next time
    return st;
  }
  std::vector<FeedRecord> records;
  FANOUT_RETURN_IF_ERROR(ParseFeedRecords(feed.records, at + 1, &records));
  {
    std::lock_guard<std::mutex> lock(mu_);
    primary_committed_ = static_cast<uint64_t>(std::max<int64_t>(0, feed.committed));
    ++fetches_;
  }
  if (records.empty()) return Status::OK();
  Status applied = apply_(records);
  if (!applied.ok())
    return Status::Corruption("applying the primary's records " +
                              std::to_string(records.front().version) + ".." +
                              std::to_string(records.back().version) + ": " + applied.message());
  std::lock_guard<std::mutex> lock(mu_);
  records_ += static_cast<int64_t>(records.size());
  return Status::OK();
}

Status FollowerLink::CatchUp() {
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(options_.catch_up_s * 1000));
  auto last_said = Clock::now();
  Status last;
  int backoff_ms = 50;
  // What the primary had committed when it first answered: the catch-up
  // ends there (a primary that keeps taking writes is then followed live).
  uint64_t target = 0;
  bool have_target = false;
  while (true) {
    last = Round(0);
    if (last.ok()) {
      if (!have_target) {
        std::lock_guard<std::mutex> lock(mu_);
        target = primary_committed_;
        have_target = true;
      }
      const uint64_t at = committed_();
      if (at >= target) {
        std::fprintf(stderr, "fanout-server: follower of %s: caught up at version %llu\n",
                     options_.primary.c_str(), static_cast<unsigned long long>(at));
        return Status::OK();
      }
      if (Clock::now() - last_said > std::chrono::seconds(2)) {
        std::fprintf(stderr,
                     "fanout-server: follower of %s: catching up, at version %llu of %llu\n",
                     options_.primary.c_str(), static_cast<unsigned long long>(at),
                     static_cast<unsigned long long>(target));
        last_said = Clock::now();
      }
      backoff_ms = 50;
      continue;
    }
    if (last.code() != Status::Code::kUnavailable && last.code() != Status::Code::kDeadlineExceeded)
      break;  // waiting does not mend these (a refusal, damage, records not kept)
    if (Clock::now() + std::chrono::milliseconds(backoff_ms) > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    backoff_ms = std::min(backoff_ms * 2, 1000);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_error_ = last.message();
  }
  return Status::FromCode(
      static_cast<int>(last.code() == Status::Code::kOk ? Status::Code::kUnavailable : last.code()),
      "a follower serves once it has caught up with its primary " + options_.primary + ": " +
          last.message() + " (--live-catch-up-s 0 serves what this replica holds without waiting)");
}

void FollowerLink::Start() {
  thread_ = std::thread([this] { Run(); });
}

void FollowerLink::Run() {
  int backoff_ms = 50;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_ || failed_) return;
    }
    Status st = Round(options_.wait_ms);
    std::unique_lock<std::mutex> lock(mu_);
    if (st.ok()) {
      backoff_ms = 50;
      continue;
    }
    if (last_error_ != st.message())
      std::fprintf(stderr, "fanout-server: follower of %s: %s\n", options_.primary.c_str(),
                   st.message().c_str());
    last_error_ = st.message();
    if (st.code() == Status::Code::kCorruption || st.code() == Status::Code::kInvalidArgument ||
        st.code() == Status::Code::kNotFound || st.code() == Status::Code::kNotSupported) {
      // This replica's records and the primary's differ (following on would
      // apply records over the wrong ones), or the primary no longer keeps
      // the records it needs, or is no primary: it serves what it holds.
      failed_ = true;
      std::fprintf(stderr,
                   "fanout-server: follower of %s: stopped following (%s); this replica serves "
                   "the versions it holds\n",
                   options_.primary.c_str(), st.message().c_str());
      return;
    }
    ++reconnects_;
    cv_.wait_for(lock, std::chrono::milliseconds(backoff_ms), [&] { return stopping_; });
    backoff_ms = std::min(backoff_ms * 2, 2000);
  }
}

nlohmann::json FollowerLink::StatsJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t at = committed_();
  return {{"role", "follower"},
          {"primary", options_.primary},
          {"name", options_.name},
          {"applied", at},
          {"primary_committed", primary_committed_},
          {"lag", Behind(primary_committed_, at)},
          {"following", !failed_},
          {"fetches", fetches_},
          {"records", records_},
          {"retries", reconnects_},
          {"last_error", last_error_}};
}

void FollowerLink::Prometheus(PrometheusText* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t at = committed_();
  out->Gauge("fanout_live_follower_lag",
             "Versions this follower replica has not applied of what its primary last said it "
             "committed.",
             static_cast<int64_t>(Behind(primary_committed_, at)));
  out->Gauge("fanout_live_follower_following",
             "1 while this follower replica follows its primary (0: stopped, see /stats).",
             failed_ ? 0 : 1);
}

}  // namespace fanout::server
