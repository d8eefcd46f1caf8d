// Helpers for dataset tests: temporary folders and the shipped data.
#ifndef FANOUT_TESTS_DATASETS_TEST_UTIL_H_
#define FANOUT_TESTS_DATASETS_TEST_UTIL_H_

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace fanout::datasets::testing {

// The source tree (its datasets/): where it was built, unless FANOUT_SOURCE_DIR
// says otherwise (the GPU check runs the tests on another machine).
inline std::string SourceDir() {
  const char* env = std::getenv("FANOUT_SOURCE_DIR");
  return env != nullptr && *env != '\0' ? env : FANOUT_SOURCE_DIR;
}
inline std::string DataDir() { return SourceDir() + "/datasets/data"; }

// A fresh temporary folder, removed with the object.
class TempDir {
 public:
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "fanout-test-XXXXXX").string();
    path_ = mkdtemp(templ.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }
  // Writes `text` to path()/name (creating folders) and returns the path.
  std::string Write(const std::string& name, const std::string& text) const {
    std::string p = Sub(name);
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }
  // Entries of the folder (names), to check nothing was left behind.
  std::vector<std::string> List() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path_))
      out.push_back(e.path().filename().string());
    return out;
  }

 private:
  std::string path_;
};

}  // namespace fanout::datasets::testing

#endif  // FANOUT_TESTS_DATASETS_TEST_UTIL_H_
