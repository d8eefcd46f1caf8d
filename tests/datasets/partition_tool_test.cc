// fanout-partition as users run it: exit status, messages, and no output
// folder (not even a temporary one) after a failure.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "datasets/partition_store.h"
#include "tests/datasets/test_util.h"

namespace fanout::datasets {
namespace {

using testing::DataDir;
using ::testing::HasSubstr;
using testing::TempDir;

struct ToolRun {
  int exit_code;
  std::string output;  // stdout + stderr
};

ToolRun RunTool(const std::string& args) {
  std::string cmd = std::string(FANOUT_BIN_DIR) + "/fanout-partition --quiet " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ToolRun r{-1, ""};
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(PartitionToolTest, PartitionsCoraAndPrintsItsStatistics) {
  TempDir tmp;
  ToolRun r = RunTool("--format linqs --input " + DataDir() +
                      "/cora --parts 2 --method metis --output " + tmp.Sub("cora"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("2708 nodes, 5429 edges, 1433 features, 7 classes"));
  EXPECT_THAT(r.output, HasSubstr("method metis: edge cut"));
  DatasetMeta meta;
  ASSERT_TRUE(ReadDatasetMeta(tmp.Sub("cora"), &meta).ok());
  EXPECT_EQ(meta.num_parts, 2);
  EXPECT_EQ(meta.offsets.back(), 2708);
  EXPECT_EQ(tmp.List(), std::vector<std::string>{"cora"});
}

TEST(PartitionToolTest, HelpDocumentsEveryOption) {
  ToolRun r = RunTool("--help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* opt :
       {"--input", "--format", "--parts", "--method", "--output", "--direction", "--undirected",
        "--drop-duplicates", "--drop-self-loops", "--feature-dtype", "--rmat-scale",
        "--feature-dim", "--memory-limit", "--spill-dir", "hash"})
    EXPECT_THAT(r.output, HasSubstr(opt));
}

TEST(PartitionToolTest, BadInputFailsAndLeavesNoFolder) {
  TempDir tmp;
  tmp.Write("bad/t.content", "a 1 0 X\nb 0 1 1 Y\n");
  tmp.Write("bad/t.cites", "a b\n");
  ToolRun r =
      RunTool("--format linqs --input " + tmp.Sub("bad") + " --parts 1 --output " + tmp.Sub("out"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("t.content:2: feature row has 3 values, expected 2"));
  EXPECT_EQ(tmp.List(), std::vector<std::string>{"bad"});

  r = RunTool("--format snap --input " + tmp.Sub("missing.txt") + " --parts 2 --output " +
              tmp.Sub("out"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("missing.txt: no such file"));
  EXPECT_EQ(tmp.List(), std::vector<std::string>{"bad"});

  r = RunTool("--format linqs --input " + DataDir() + "/cora --parts 5000 --output " +
              tmp.Sub("out"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(tmp.List(), std::vector<std::string>{"bad"});

  r = RunTool("--format nope --input x --parts 2 --output " + tmp.Sub("out"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("--format"));
}

TEST(PartitionToolTest, ExistingOutputNeedsForce) {
  TempDir tmp;
  std::string args = "--format planetoid --input " + DataDir() +
                     "/planetoid/cora --parts 2 --output " + tmp.Sub("o");
  ASSERT_EQ(RunTool(args).exit_code, 0);
  ToolRun r = RunTool(args);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("already exists"));
  EXPECT_EQ(RunTool(args + " --force --method random").exit_code, 0);
  DatasetMeta meta;
  ASSERT_TRUE(ReadDatasetMeta(tmp.Sub("o"), &meta).ok());
  EXPECT_EQ(meta.method, "random");
  EXPECT_EQ(tmp.List(), std::vector<std::string>{"o"});
}

}  // namespace
}  // namespace fanout::datasets

namespace fanout::datasets {
namespace {

// fanout-partition killed (SIGKILL) at moments spread over its run, writing
// a new folder and replacing an existing one: the output folder is either
// absent (or the previous dataset) or complete, never partly written; the
// next run removes what the killed one left and succeeds.
TEST(PartitionToolTest, KilledMidWriteLeavesNoFolderThatLooksComplete) {
  TempDir tmp;
  const std::string out = tmp.Sub("rmat");
  const std::string bin = std::string(FANOUT_BIN_DIR) + "/fanout-partition";
  auto spawn = [&](bool force) {
    pid_t pid = fork();
    if (pid == 0) {
      int null = open("/dev/null", O_WRONLY);
      dup2(null, 1);
      dup2(null, 2);
      execl(bin.c_str(), bin.c_str(), "--quiet", "--format", "rmat", "--rmat-scale", "15",
            "--feature-dim", "16", "--parts", "3", "--method", "random", "--output", out.c_str(),
            force ? "--force" : "--quiet", nullptr);
      _exit(127);
    }
    return pid;
  };
  // How long a whole run takes here: the kills are spread over it.
  auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  waitpid(spawn(false), &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const double run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::error_code ec;
  std::filesystem::remove_all(out, ec);
  auto complete = [&](const std::string& dir) {
    for (int p = 0; p < 3; ++p) {
      PartitionData d;
      Status st = OpenPartition(dir, p, {}, &d);
      if (!st.ok()) return st;
    }
    return Status::OK();
  };
  // Kills at 1/12, 3/12, ... 11/12 of the timed run, twice each, and on
  // until at least 6 landed before a run finished: where a run finished
  // before its kill (the timed run was slowed by other tests on the machine),
  // the times shrink, so that the count does not hang on this run's speed.
  int killed_before_done = 0;
  double scale = 1.0;
  for (int i = 0; i < 48 && (i < 12 || killed_before_done < 6); ++i) {
    const bool force =
        i % 2 == 1;  // odd runs replace the folder the previous run may have finished
    const double at = scale * ((i % 12) / 2 + 0.5) / 6.0;
    pid_t pid = spawn(force);
    std::this_thread::sleep_for(std::chrono::duration<double>(run_s * at));
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status))
      ++killed_before_done;
    else
      scale *= 0.7;
    if (std::filesystem::exists(out)) {
      Status st = complete(out);
      EXPECT_TRUE(st.ok()) << "after a kill at " << at << " of a run: " << st.ToString();
    }
  }
  EXPECT_GE(killed_before_done, 6);
  // The next run cleans up what the killed ones left beside the output.
  waitpid(spawn(true), &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(complete(out).ok());
  EXPECT_EQ(tmp.List(), std::vector<std::string>{"rmat"});
}

}  // namespace
}  // namespace fanout::datasets
