// libFuzzer target: one of the text-format readers (FANOUT_FUZZ_FORMAT:
// linqs, planetoid, ogb, snap, movielens, ogb-hetero, tables), on files cut from the
// input at NUL bytes:
//   linqs     x.content \0 x.cites
//   planetoid labels.txt \0 edges.txt \0 features.txt \0 split_train.txt \0 split_val.txt \0
//   split_test.txt ogb       raw/num-node-list.csv \0 raw/edge.csv \0 raw/node-feat.csv \0
//   raw/node-label.csv \0
//             split/s/train.csv \0 split/s/valid.csv \0 split/s/test.csv
//   snap      the edge list
//   movielens movies.csv \0 ratings.csv \0 tags.csv
//   ogb-hetero raw/num-node-dict.csv \0 raw/relations/a___r___b/edge.csv \0
//             raw/relations/b___s___b/edge.csv \0 raw/node-feat/b/node-feat.csv \0
//             raw/node-label/b/node-label.csv \0 split/s/b/train.csv \0 split/s/b/valid.csv \0
//             split/s/b/test.csv
//   tables    graph.json \0 a.csv \0 b.csv.gz \0 e.csv (the schema names what it reads)
// written to a private folder under /dev/shm (or the temp folder).
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "datasets/formats.h"

namespace {
std::string g_dir;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::filesystem::path base =
      std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
  g_dir = (base / ("fanout-fuzz-" FANOUT_FUZZ_FORMAT "-" + std::to_string(getpid()))).string();
  std::filesystem::create_directories(g_dir);
  std::atexit([] { std::filesystem::remove_all(g_dir); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  const std::string format = FANOUT_FUZZ_FORMAT;
  std::vector<std::string> files;
  if (format == "linqs") files = {"x.content", "x.cites"};
  if (format == "planetoid")
    files = {"labels.txt",      "edges.txt",     "features.txt",
             "split_train.txt", "split_val.txt", "split_test.txt"};
  if (format == "ogb")
    files = {"raw/num-node-list.csv", "raw/edge.csv",      "raw/node-feat.csv",
             "raw/node-label.csv",    "split/s/train.csv", "split/s/valid.csv",
             "split/s/test.csv"};
  if (format == "snap") files = {"graph.txt"};
  if (format == "movielens") files = {"movies.csv", "ratings.csv", "tags.csv"};
  if (format == "tables") files = {"graph.json", "a.csv", "b.csv.gz", "e.csv"};
  if (format == "ogb-hetero")
    files = {"raw/num-node-dict.csv",
             "raw/relations/a___r___b/edge.csv",
             "raw/relations/b___s___b/edge.csv",
             "raw/node-feat/b/node-feat.csv",
             "raw/node-label/b/node-label.csv",
             "split/s/b/train.csv",
             "split/s/b/valid.csv",
             "split/s/b/test.csv"};
  std::error_code ec;
  fs::remove_all(g_dir, ec);
  fs::create_directories(g_dir + "/raw");
  fs::create_directories(g_dir + "/split/s");
  if (format == "ogb-hetero") {
    for (const char* d : {"/raw/relations/a___r___b", "/raw/relations/b___s___b",
                          "/raw/node-feat/b", "/raw/node-label/b", "/split/s/b"})
      fs::create_directories(g_dir + d);
  }
  size_t at = 0;
  for (size_t f = 0; f < files.size(); ++f) {
    size_t end = f + 1 == files.size() ? size : at;
    while (end < size && data[end] != 0) ++end;
    if (at <= size)
      std::ofstream(g_dir + "/" + files[f], std::ios::binary)
          .write(reinterpret_cast<const char*>(data + at), end - at);
    at = end + 1;
  }
  fanout::datasets::RawDataset ds;
  fanout::datasets::LoadOptions lo;
  lo.quiet = true;
  // Declared counts size arrays up to the memory allowed (by default the
  // machine's): here 512 MiB, under libFuzzer's 2 GiB limit.
  lo.memory_limit_bytes = int64_t{512} << 20;
  std::vector<std::string> notes;
  const std::string input = format == "snap"     ? g_dir + "/graph.txt"
                            : format == "tables" ? g_dir + "/graph.json"
                                                 : g_dir;
  (void)fanout::datasets::LoadDataset(format, input, lo, &ds, &notes);
  return 0;
}
