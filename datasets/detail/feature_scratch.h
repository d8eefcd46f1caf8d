// Feature rows of a streamed input waiting on disk: written once, in node
// order, as float32, and read back row by row (in increasing order within a
// partition, so through a window read ahead). The file is removed with the
// object. Used by the OGB and tables streams (bounded_partition.h).
#ifndef FANOUT_DATASETS_DETAIL_FEATURE_SCRATCH_H_
#define FANOUT_DATASETS_DETAIL_FEATURE_SCRATCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace fanout::datasets::detail {

class FeatureScratch {
 public:
  FeatureScratch() = default;
  FeatureScratch(const FeatureScratch&) = delete;
  FeatureScratch& operator=(const FeatureScratch&) = delete;
  ~FeatureScratch();

  // Creates `path` (which must not exist) for rows of `dim` floats.
  Status Create(const std::string& path, int64_t dim);
  // Appends the next node's row (dim floats).
  Status Append(const float* row);
  // Writes what is buffered; then Row may be called.
  Status Finish();
  // Node v's row into out (dim floats); on a read error zeros, and error()
  // says why (the callers cannot return one).
  void Row(int64_t v, float* out) const;
  const Status& error() const { return read_error_; }
  int64_t dim() const { return dim_; }
  bool active() const { return fd_ >= 0; }

 private:
  Status Flush();
  std::string path_;
  int fd_ = -1;
  int64_t dim_ = 0, rows_ = 0;
  std::vector<float> buf_;
  mutable std::vector<float> window_;
  mutable int64_t w0_ = 0, wn_ = 0;
  mutable Status read_error_;
};

}  // namespace fanout::datasets::detail

#endif  // FANOUT_DATASETS_DETAIL_FEATURE_SCRATCH_H_
