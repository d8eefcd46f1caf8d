// A live partition's base file (live/base_file.h) as a server reads it at
// start from its live folder: any bytes. A flag byte first (bit 0: fix up
// the header's and every section's checksum, so that the fields behind them
// are reached; bit 1: the dataset has edge times; bit 2: two edge types;
// bit 3: edge weights),
// then the file. The harness reads it for the partition its header names
// (rows clamped to a small graph); what ReadBaseFile accepts is restored
// into a versioned partition, every row sampled (uniform, and temporal or
// per-edge-type where the shape has them) and every feature row and label
// read: junk must be refused by name, never a crash or a read past a buffer.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/crc32c.h"
#include "fuzz/fuzz_util.h"
#include "live/base_file.h"
#include "live/versioned_partition.h"
#include "sampler/hetero.h"
#include "sampler/temporal.h"

namespace {
using fanout::fuzz::Get;

// The header's checksum, then each section's (length, bytes, checksum) in turn.
void FixChecksums(std::string* f) {
  if (f->size() < 64) return;
  uint32_t crc = fanout::Crc32c(f->data(), 60);
  std::memcpy(&(*f)[60], &crc, 4);
  size_t at = 64;
  for (int s = 0; s < 8 && at + 8 <= f->size(); ++s) {
    const uint64_t n = Get<uint64_t>(*f, at);
    if (n > f->size() - at - 8 || f->size() - at - 8 - n < 4) return;
    crc = fanout::Crc32c(f->data() + at + 8, n);
    std::memcpy(&(*f)[at + 8 + n], &crc, 4);
    at += 8 + n + 4;
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fanout;
  if (size < 1) return 0;
  const uint8_t flags = data[0];
  std::string file(reinterpret_cast<const char*>(data + 1), size - 1);
  if (flags & 1) FixChecksums(&file);
  live::LiveShape shape;
  shape.num_parts = 2;
  shape.num_nodes_total = 64;
  shape.base_edges_total = 1000;
  shape.row_bytes = 4;
  shape.has_labels = true;
  shape.temporal = flags & 2;
  shape.weighted = flags & 8;
  shape.num_edge_types = (flags & 4) ? 2 : 0;
  // The partition the header names, within the small graph.
  const int part = static_cast<int>(Get<uint32_t>(file, 12) & 1);
  const int64_t node_begin = std::clamp<int64_t>(Get<int64_t>(file, 24), 0, 63);
  const int64_t rows = std::clamp<int64_t>(Get<int64_t>(file, 32), 0, 64 - node_begin);
  const int fd = ::memfd_create("fuzz_base_file", 0);
  if (fd < 0) return 0;
  if (::write(fd, file.data(), file.size()) != static_cast<ssize_t>(file.size())) {
    ::close(fd);
    return 0;
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  live::BaseFileHeader h;
  auto arrays = std::make_unique<live::Generation::Arrays>();
  live::BaseOverlay overlay;
  live::RetryState table;
  const Status st =
      live::ReadBaseFile(path, shape, part, node_begin, rows, &h, arrays.get(), &overlay, &table);
  ::close(fd);
  if (!st.ok()) {
    if (st.message().empty()) __builtin_trap();  // refused by name
    return 0;
  }
  // The dataset's base this file replaces: the rows, no edges.
  std::vector<int64_t> indptr(static_cast<size_t>(rows + 1), 0);
  sampler::PartitionView view;
  view.part = part;
  view.node_begin = node_begin;
  view.node_end = node_begin + rows;
  view.indptr = ArrayView<const int64_t>(indptr);
  live::VersionedPartition vp(view, shape);
  if (!vp.RestoreBase(std::move(arrays), h.version, h.next_ordinal, overlay).ok()) return 0;
  live::RetryTable retries;
  retries.Import(table);
  std::vector<int64_t> nodes, times;
  for (int64_t v = node_begin; v < node_begin + rows; ++v) {
    nodes.push_back(v);
    times.push_back(v * 3);
    std::string row;
    int64_t label = 0;
    vp.FeatureRow(v, h.version, &row);
    vp.Label(v, h.version, &label);
  }
  sampler::OneHopResult out;
  (void)vp.SampleHop(ArrayView<const int64_t>(nodes), 2, 0, 7, {}, h.version, &out);
  std::shared_ptr<const live::Generation> g;
  if (!vp.GenerationFor(h.version, &g).ok()) __builtin_trap();
  const sampler::PartitionView& b = g->view();
  if (shape.temporal && shape.num_edge_types == 0)
    sampler::SampleTemporalHop(g->graph(), b.edge_times.data(), g->time_index(), node_begin,
                               ArrayView<const int64_t>(nodes), ArrayView<const int64_t>(times), 2,
                               0, 7, sampler::TemporalStrategy::kUniform, true, &out);
  const std::vector<int64_t> fanouts{1, -1};
  if (shape.num_edge_types > 0) {
    sampler::SamplingOptions so;
    so.node_offset = node_begin;
    (void)sampler::SampleHeteroHop(g->graph(), b.edge_types.data(), ArrayView<const int64_t>(nodes),
                                   ArrayView<const int64_t>(fanouts), 0, 7, so, &out);
  }
  return 0;
}
