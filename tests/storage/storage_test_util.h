// Helpers of the storage tests: a temporary folder, a feature file of
// patterned rows and what a reader expects of it.
#ifndef FANOUT_TESTS_STORAGE_STORAGE_TEST_UTIL_H_
#define FANOUT_TESTS_STORAGE_STORAGE_TEST_UTIL_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "storage/feature_file.h"

namespace fanout::storage {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string t = (fs::temp_directory_path() / "fanout-storage-XXXXXX").string();
    path_ = mkdtemp(t.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string Sub(const std::string& n) const { return path_ + "/" + n; }

 private:
  std::string path_;
};

FeatureFileIdentity Identity(int64_t rows, int64_t dim, FeatureDType t = FeatureDType::kFloat32) {
  FeatureFileIdentity id;
  id.dataset_id = "0123456789abcdef";
  id.partition = 1;
  id.node_begin = 1000;
  id.rows = rows;
  id.feature_dim = dim;
  id.dtype = t;
  return id;
}

FeatureFile::Expect ExpectOf(const FeatureFileIdentity& id) {
  FeatureFile::Expect x;
  x.dataset_id = id.dataset_id;
  x.partition = id.partition;
  x.node_begin = id.node_begin;
  x.rows = id.rows;
  x.feature_dim = id.feature_dim;
  x.dtype = id.dtype;
  return x;
}

// Row r's bytes: a pattern that differs per row and column.
std::vector<char> Rows(int64_t rows, int64_t row_bytes) {
  std::vector<char> out(static_cast<size_t>(rows * row_bytes));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < row_bytes; ++j)
      out[r * row_bytes + j] = static_cast<char>((r * 131 + j * 7 + 3) & 0xff);
  return out;
}

std::string Write(const std::string& path, const FeatureFileIdentity& id,
                  const std::vector<char>& rows, int64_t chunk = 37) {
  std::unique_ptr<FeatureFileWriter> w;
  EXPECT_TRUE(FeatureFileWriter::Create(path, id, &w).ok());
  const int64_t rb = id.row_bytes();
  for (int64_t r = 0; r < id.rows; r += chunk)
    EXPECT_TRUE(w->Append(rows.data() + r * rb, std::min(chunk, id.rows - r)).ok());
  EXPECT_TRUE(w->Finish().ok());
  return path;
}

}  // namespace
}  // namespace fanout::storage

#endif  // FANOUT_TESTS_STORAGE_STORAGE_TEST_UTIL_H_
