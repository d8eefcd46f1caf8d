// Replicas of a live partition (docs/DESIGN.md "Live updates", "Replicas"):
// one primary takes the writes; each follower replica (fanout-server
// --live-follow PRIMARY) fetches the primary's durable update-log records in
// order and appends them to its own log, so every replica holds the same
// records at the same versions and reads at a version agree everywhere.
//
// - ReplicaFeed (the primary): the records since its base, bounded in bytes;
//   a follower's fetch of the records after version `after` acknowledges that
//   it holds everything through `after` durably. A write is acknowledged once
//   durable on the primary and on every in-sync follower; a follower that has
//   not acknowledged within the wait falls out of sync (said, counted) and is
//   not waited on until it has caught up again.
// - FollowerLink (a follower): catches up before its server serves, then
//   follows on a thread of its own (long polls), reconnecting with a backoff
//   while the primary is away.
#ifndef FANOUT_SERVER_LIVE_REPLICATION_H_
#define FANOUT_SERVER_LIVE_REPLICATION_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/status.h"

namespace fanout::server {

class PrometheusText;

// One record of the feed's byte form (UpdateFeed.records).
struct FeedRecord {
  uint64_t version = 0;
  std::string_view batch;
};
// Parses UpdateFeed.records: versions consecutive from `first` (where given,
// != 0), each batch within the bytes. InvalidArgument naming what is wrong.
Status ParseFeedRecords(std::string_view bytes, uint64_t first, std::vector<FeedRecord>* out);

class ReplicaFeed {
 public:
  static constexpr size_t kMaxFollowers = 64;
  static constexpr size_t kMaxFollowerName = 256;

  // `max_bytes`: the records kept (the oldest go first past it); `wait_ms`:
  // how long a write waits for an in-sync follower's acknowledgement.
  void Configure(int64_t max_bytes, int wait_ms);
  // Records at or below `version` are in the primary's base file (at open).
  void SetOldest(uint64_t version);
  // A record, in version order (the log's order lock, or the replay).
  void Add(uint64_t version, std::string_view batch);
  // Every version through `version` is durable (after the log's Append).
  void Publish(uint64_t version);
  // Follower `name` holds every record through `after`: records after it,
  // at most max_bytes of them (at least one where there is one), encoded in
  // *records; *committed, *oldest as UpdateFeed's. Never waits.
  // NotFound where `after` is below the oldest record kept (the
  // follower starts from a copy of the base file), InvalidArgument where it
  // is above the newest (the follower holds records the primary does not).
  Status Fetch(const std::string& name, uint64_t after, int64_t max_bytes, std::string* records,
               uint64_t* committed, uint64_t* oldest);
  // Waits up to wait_ms for a version above `after` to be published (or Stop).
  void WaitNewer(uint64_t after, int wait_ms);
  // Returns once every in-sync follower has acknowledged `version`, or the
  // wait passed (those that had not are out of sync from then on).
  void WaitFollowers(uint64_t version);
  // Wakes every wait; later waits return at once.
  void Stop();
  nlohmann::json StatsJson() const;
  void Prometheus(PrometheusText* out) const;

 private:
  struct Record {
    uint64_t version;
    std::string batch;
  };
  struct Follower {
    uint64_t acked = 0;
    bool in_sync = false;
    int64_t fell_behind = 0;  // times it fell out of sync
    std::chrono::steady_clock::time_point seen;
  };
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Record> records_;  // versions oldest_ + 1 .. consecutive
  int64_t bytes_ = 0;
  int64_t max_bytes_ = int64_t{256} << 20;
  int wait_ms_ = 1000;
  uint64_t oldest_ = 0, published_ = 0;
  bool stopping_ = false;
  std::map<std::string, Follower> followers_;
  int64_t waits_ = 0, wait_timeouts_ = 0;
};

class FollowerLink {
 public:
  struct Options {
    std::string primary;  // HOST:PORT
    std::string token;    // presented to the primary (write permission); empty: none
    std::string name;     // this replica, as the primary lists it
    // TLS to the primary (PEM files; empty ca: plain TCP): the CA that signed
    // the primary's certificate, and this replica's own for mutual TLS.
    std::string tls_ca, tls_cert, tls_key;
    double catch_up_s = 60;
    int wait_ms = 500;
    int64_t max_bytes = int64_t{16} << 20;
  };
  // `committed`: this replica's newest version; `apply`: appends records (in
  // order, consecutive after it) durably, or fails (nothing more is applied:
  // the follower stops following, said).
  FollowerLink(Options options, std::function<uint64_t()> committed,
               std::function<Status(const std::vector<FeedRecord>&)> apply);
  ~FollowerLink();
  // Fetches and applies until this replica holds what the primary had
  // committed when it last answered; gives up after catch_up_s (Unavailable
  // naming the primary and why). Progress on stderr.
  Status CatchUp();
  // Follows on a thread of its own from now on.
  void Start();
  const Options& options() const { return options_; }
  nlohmann::json StatsJson() const;
  void Prometheus(PrometheusText* out) const;

 private:
  // One fetch and its apply.
  Status Round(int wait_ms);
  void Run();
  const Options options_;
  const std::function<uint64_t()> committed_;
  const std::function<Status(const std::vector<FeedRecord>&)> apply_;
  struct Conn;
  std::unique_ptr<Conn> conn_;  // the follower thread's (CatchUp's before it)
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  uint64_t primary_committed_ = 0;  // GUARDED_BY(mu_): as the primary last said
  std::string last_error_;          // GUARDED_BY(mu_)
  bool failed_ = false;             // GUARDED_BY(mu_): stopped following (divergence)
  int64_t fetches_ = 0, records_ = 0, reconnects_ = 0;  // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace fanout::server

#endif  // FANOUT_SERVER_LIVE_REPLICATION_H_
