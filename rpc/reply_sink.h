// Where a data-plane reply lands: memory of this process, named by the
// client that receives into it (never by a request a server acts on).
#ifndef FANOUT_RPC_REPLY_SINK_H_
#define FANOUT_RPC_REPLY_SINK_H_

#include <cstddef>
#include <utility>
#include <vector>

#include "common/pod_vector.h"

namespace fanout::rpc {

enum class MemoryKind { kHost, kCuda };

// Where a reply lands (this process's own memory; the reply is received into
// it), one of three modes, each made by its named constructor:
// - Fixed(data, bytes): the reply must be exactly `bytes` long (the default
//   sink is Fixed(nullptr, 0): a reply with no payload, e.g. a ping's);
// - Scatter(segments): the reply must fill the segments exactly, in order
//   (one segment is Fixed);
// - Grow(buffer): the buffer is resized to the reply's size (host memory).
// kCuda memory needs DataPlaneInfo::cuda.
class ReplySink {
 public:
  enum class Mode { kFixed, kScatter, kGrow };
  struct Segment {
    void* data;
    size_t bytes;
  };

  ReplySink() = default;
  static ReplySink Fixed(void* data, size_t bytes, MemoryKind memory = MemoryKind::kHost) {
    ReplySink s;
    s.data_ = data;
    s.bytes_ = bytes;
    s.memory_ = memory;
    return s;
  }
  static ReplySink Scatter(std::vector<Segment> segments, MemoryKind memory = MemoryKind::kHost) {
    if (segments.size() == 1) return Fixed(segments[0].data, segments[0].bytes, memory);
    ReplySink s;
    s.mode_ = Mode::kScatter;
    s.bytes_ = 0;
    for (const Segment& g : segments) s.bytes_ += g.bytes;
    s.segments_ = std::move(segments);
    s.memory_ = memory;
    return s;
  }
  static ReplySink Grow(PodVector<char>* buffer) {
    ReplySink s;
    s.mode_ = Mode::kGrow;
    s.grow_ = buffer;
    return s;
  }

  Mode mode() const { return mode_; }
  MemoryKind memory() const { return memory_; }
  // kFixed: the region; kScatter: the segments; kGrow: the buffer.
  void* data() const { return data_; }
  const std::vector<Segment>& segments() const { return segments_; }
  PodVector<char>* grow() const { return grow_; }
  // The reply size it takes (kFixed, kScatter); 0 for kGrow (any size).
  size_t bytes() const { return bytes_; }

 private:
  Mode mode_ = Mode::kFixed;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  std::vector<Segment> segments_;
  PodVector<char>* grow_ = nullptr;
  MemoryKind memory_ = MemoryKind::kHost;
};

}  // namespace fanout::rpc

#endif  // FANOUT_RPC_REPLY_SINK_H_
