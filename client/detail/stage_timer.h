// StageTimer: adds a scope's wall and thread-CPU seconds (and one call) to a
// StageTime: one Stage of a session's stats (client/source.h), or another
// total of the per-stage breakdown of a batch.
#ifndef FANOUT_CLIENT_DETAIL_STAGE_TIMER_H_
#define FANOUT_CLIENT_DETAIL_STAGE_TIMER_H_

#include <chrono>

#include "client/source.h"
#include "common/cpu.h"

namespace fanout::client::detail {

class StageTimer {
 public:
  StageTimer(SessionStats* stats, Stage stage)
      : StageTimer(&stats->stages[static_cast<int>(stage)]) {}
  // Any StageTime (a loader's per-batch or hand-off totals).
  explicit StageTimer(StageTime* t)
      : t_(t), wall0_(std::chrono::steady_clock::now()), cpu0_(ThreadCpuSeconds()) {}
  ~StageTimer() { Stop(); }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;
  // Ends the scope early (once; the destructor then adds nothing).
  void Stop() {
    if (t_ == nullptr) return;
    t_->wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0_).count();
    t_->cpu_s += ThreadCpuSeconds() - cpu0_;
    ++t_->calls;
    t_ = nullptr;
  }

 private:
  StageTime* t_;
  std::chrono::steady_clock::time_point wall0_;
  double cpu0_;
};

}  // namespace fanout::client::detail

#endif  // FANOUT_CLIENT_DETAIL_STAGE_TIMER_H_
