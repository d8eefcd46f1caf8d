// Rate limit for UCX's own log lines. A hostile or broken peer can make UCX
// log an ERROR or WARN line per message it sends (664 lines for 2,000 junk
// messages were seen), so the log could grow without bound. The limiter lets
// the first line from each call site through, swallows the rest for
// `window`, and then says how many it swallowed. No UCX header here: the
// handler that feeds it lives in ucx_common.cc; this part is tested alone.
//
// Thread safety: Admit() from any thread (one mutex).
#ifndef FANOUT_RPC_UCX_LOG_LIMIT_H_
#define FANOUT_RPC_UCX_LOG_LIMIT_H_

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace fanout::rpc::ucx {

class LogLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMaxSites = 256;  // call sites tracked; more share one entry

  explicit LogLimiter(Clock::duration window = std::chrono::seconds(10)) : window_(window) {}

  // Whether the line from `site` (e.g. "wireup.c:337") at `now` is printed.
  // Where lines from it were swallowed in the window now over, *summary says
  // how many (print it before the line); else it is cleared.
  bool Admit(const std::string& site, Clock::time_point now, std::string* summary) {
    summary->clear();
    std::lock_guard<std::mutex> lock(mu_);
    const std::string& key = sites_.size() < kMaxSites || sites_.count(site) ? site : kOther;
    Site& s = sites_[key];
    if (s.printed && now - s.since < window_) {
      ++s.swallowed;
      ++swallowed_total_;
      return false;
    }
    if (s.swallowed > 0)
      *summary =
          std::to_string(s.swallowed) + " more UCX log line(s) from " + key + " in the last " +
          std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - s.since).count()) +
          " s were not printed";
    s.printed = true;
    s.since = now;
    s.swallowed = 0;
    return true;
  }
  int64_t swallowed_total() const {
    std::lock_guard<std::mutex> lock(mu_);
    return swallowed_total_;
  }

 private:
  struct Site {
    bool printed = false;
    Clock::time_point since;
    int64_t swallowed = 0;
  };
  inline static const std::string kOther = "(other call sites)";
  const Clock::duration window_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Site> sites_;  // GUARDED_BY(mu_)
  int64_t swallowed_total_ = 0;                  // GUARDED_BY(mu_)
};

}  // namespace fanout::rpc::ucx

#endif  // FANOUT_RPC_UCX_LOG_LIMIT_H_
