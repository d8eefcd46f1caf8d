// An update batch as a live server receives it (apply_updates' payload, and
// a record of its update log): any bytes. What DecodeUpdateBatch accepts
// re-encodes to exactly those bytes (nothing read past them, no count that
// does not add up), and the versioned partition's check then either refuses
// it by name or applies it; a hop at the new version never reads outside the
// rows it built.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "live/updates.h"
#include "live/versioned_partition.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fanout;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  live::UpdateBatch b;
  if (!live::DecodeUpdateBatch(bytes, &b).ok()) return 0;
  std::string again = live::EncodeUpdateBatch(b);
  uint32_t form = 0;
  std::memcpy(&form, bytes.data() + 4, 4);
  if (form == 1) {  // the first byte form: no writer fields after the header
    if (b.writer != 0 || b.writer_seq != 0) __builtin_trap();
    again.erase(48, 16);
    std::memcpy(&again[4], &form, 4);
  }
  if (again != bytes) __builtin_trap();
  // A retry table takes any writer and number; the same pair twice is a retry.
  live::RetryTable retries(2);
  if (!retries.Admit(b.writer, b.writer_seq, 1)) __builtin_trap();
  if (b.writer != 0 && retries.Admit(b.writer, b.writer_seq, 2)) __builtin_trap();
  // A small partition: rows [4, 12) of 16 nodes, two edges per row.
  static std::vector<int64_t> indptr, indices;
  if (indptr.empty()) {
    for (int64_t r = 0; r <= 8; ++r) indptr.push_back(2 * r);
    for (int64_t i = 0; i < 16; ++i) indices.push_back((i * 7) % 16);
  }
  sampler::PartitionView view;
  view.node_begin = 4;
  view.node_end = 12;
  view.indptr = ArrayView<const int64_t>(indptr);
  view.indices = ArrayView<const int64_t>(indices);
  live::LiveShape shape;
  shape.num_nodes_total = 16;
  shape.base_edges_total = 16;
  shape.row_bytes = 4;
  shape.has_labels = true;
  live::VersionedPartition vp(view, shape);
  if (!vp.Check(b).ok()) return 0;
  vp.Apply(1, b);
  vp.Publish(1);
  std::vector<int64_t> nodes;
  for (int64_t v = 4; v < 12; ++v) nodes.push_back(v);
  sampler::OneHopResult out;
  if (!vp.SampleHop(ArrayView<const int64_t>(nodes), 3, 0, 7, {}, 1, &out).ok()) __builtin_trap();
  for (int64_t n : out.neighbors)
    if (n < 0 || n >= 16) __builtin_trap();
  return 0;
}
