#include "datasets/progress.h"

#include <unistd.h>

#include <cstdio>

namespace fanout::datasets {
namespace {
std::string Human(double v) {
  char buf[32];
  if (v >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2f G", v / 1e9);
  else if (v >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2f M", v / 1e6);
  else if (v >= 1e3)
    std::snprintf(buf, sizeof buf, "%.1f k", v / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f ", v);
  return buf;
}
}  // namespace

Progress::Progress(std::string label, std::string unit, int64_t total, bool quiet)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      quiet_(quiet),
      tty_(!quiet && isatty(2)),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

double Progress::Seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::Update(int64_t done) {
  done_ = done;
  if (quiet_) return;
  auto now = std::chrono::steady_clock::now();
  // A terminal gets a redrawn line 4 times a second; a log one line every 30 s.
  if (now - last_draw_ < (tty_ ? std::chrono::milliseconds(250) : std::chrono::milliseconds(30000)))
    return;
  last_draw_ = now;
  double secs = Seconds();
  double rate = done / (secs > 0 ? secs : 1e-9);
  if (total_ > 0) {
    double eta = rate > 0 ? (total_ - done) / rate : 0;
    std::fprintf(stderr, "%s%s: %5.1f%%  %s%s/s  ETA %.0f s%s", tty_ ? "\r" : "", label_.c_str(),
                 100.0 * done / total_, Human(rate).c_str(), unit_.c_str(), eta,
                 tty_ ? "     " : "\n");
  } else {
    std::fprintf(stderr, "%s%s: %s%s  %s%s/s%s", tty_ ? "\r" : "", label_.c_str(),
                 Human(done).c_str(), unit_.c_str(), Human(rate).c_str(), unit_.c_str(),
                 tty_ ? "     " : "\n");
  }
  std::fflush(stderr);
}

void Progress::Done(const std::string& extra) {
  if (quiet_) return;
  double secs = Seconds();
  if (tty_) std::fprintf(stderr, "\r\033[K");
  std::fprintf(stderr, "%s: %s%s in %.2f s (%s%s/s)%s%s\n", label_.c_str(), Human(done_).c_str(),
               unit_.c_str(), secs, Human(done_ / (secs > 0 ? secs : 1e-9)).c_str(), unit_.c_str(),
               extra.empty() ? "" : "; ", extra.c_str());
}

}  // namespace fanout::datasets
