// A feature file as a same-host client receives it: any bytes a server (or
// whoever holds its socket path) hands over as the descriptor
// (storage/feature_file.h). The harness fixes up the header's checksum (and,
// where the first byte's low bit says so, the checksum table's) so that the
// fields and blocks behind them are reached; then it opens the file as the
// client does, with the identity the header claims, reads every row and a
// few blocks through both readers. Junk must be refused by name: no crash,
// no read past a buffer, no allocation beyond what the file's size bounds.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/crc32c.h"
#include "fuzz/fuzz_util.h"
#include "storage/block_reader.h"
#include "storage/feature_file.h"

namespace {
using fanout::fuzz::Get;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fanout::storage;
  if (size < 1) return 0;
  const bool fix_table = data[0] & 1;
  std::string file(reinterpret_cast<const char*>(data + 1), size - 1);
  if (file.size() >= 344) {
    const uint32_t crc = fanout::Crc32c(file.data(), 340);
    std::memcpy(&file[340], &crc, 4);
  }
  FeatureFile::Expect x;  // what the header claims (identity is then "right")
  const uint32_t idn = Get<uint32_t>(file, 8);
  if (idn <= 255 && 12 + idn <= file.size()) x.dataset_id.assign(file.data() + 12, idn);
  x.partition = Get<int32_t>(file, 268);
  x.node_begin = Get<int64_t>(file, 272);
  x.rows = Get<int64_t>(file, 280);
  x.feature_dim = Get<int64_t>(file, 288);
  const uint32_t dt = Get<uint32_t>(file, 296);
  x.dtype = static_cast<fanout::FeatureDType>(dt <= 3 ? dt : 0);
  if (fix_table && x.rows >= 0 && x.rows < (int64_t{1} << 30) && x.feature_dim >= 0 &&
      x.feature_dim <= 4096) {
    const FeatureFileGeometry g =
        FeatureFileGeometry::For(x.rows, x.feature_dim * fanout::FeatureDTypeSize(x.dtype));
    const int64_t at = g.TableOffset();
    if (at >= 0 && at + g.num_blocks * 4 <= static_cast<int64_t>(file.size()) &&
        file.size() >= 344) {
      const uint32_t crc = fanout::Crc32c(file.data() + at, static_cast<size_t>(g.num_blocks * 4));
      std::memcpy(&file[336], &crc, 4);
      const uint32_t hcrc = fanout::Crc32c(file.data(), 340);
      std::memcpy(&file[340], &hcrc, 4);
    }
  }
  const int fd = memfd_create("fuzz-feature-file", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (write(fd, file.data(), file.size()) != static_cast<ssize_t>(file.size())) {
    close(fd);
    return 0;
  }
  std::shared_ptr<const FeatureFile> f;
  if (!FeatureFile::FromDescriptor(fd, "fuzzed", x, &f).ok()) return 0;
  const FeatureFileGeometry& g = f->geometry();
  // Opened: every claim agrees with the bytes there.
  if (g.FileBytes() != static_cast<int64_t>(file.size())) __builtin_trap();
  if (g.rows * g.row_bytes <= (int64_t{64} << 20)) {
    std::vector<char> rows(static_cast<size_t>(g.rows * g.row_bytes));
    (void)f->ReadAll(rows.data());
  }
  for (bool uring : {true, false}) {
    std::unique_ptr<BlockReader> r;
    const int64_t bb = std::max<int64_t>(kFeatureBlockAlign, g.block_bytes);
    if (bb > (int64_t{1} << 20)) break;
    if (!(uring ? BlockReader::Create(4, bb, &r) : BlockReader::CreatePread(4, bb, &r)).ok()) break;
    std::vector<int64_t> blocks{0, g.num_blocks - 1, g.num_blocks / 2, g.num_blocks, -1};
    (void)r->Read(*f, blocks.data(), static_cast<int64_t>(blocks.size()),
                  [](int64_t, const char*) {});
  }
  return 0;
}
