// Progress reporting for long offline steps. On a terminal it redraws one
// stderr line with percent, rate and ETA (at most 4 times a second); when
// stderr is not a terminal (a log) it prints that line every 30 s. Done()
// prints a one-line summary either way.
//
// Thread safety: none.
#ifndef FANOUT_DATASETS_PROGRESS_H_
#define FANOUT_DATASETS_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace fanout::datasets {

class Progress {
 public:
  // `unit` names what is counted ("edges", "bytes"); total <= 0 if unknown.
  // quiet: print nothing at all (tests).
  Progress(std::string label, std::string unit, int64_t total, bool quiet = false);
  void Update(int64_t done);
  // Prints "label: N unit in S s (R unit/s)" plus `extra`.
  void Done(const std::string& extra = "");
  double Seconds() const;

 private:
  std::string label_, unit_;
  int64_t total_;
  bool quiet_, tty_;
  int64_t done_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace fanout::datasets

#endif  // FANOUT_DATASETS_PROGRESS_H_
