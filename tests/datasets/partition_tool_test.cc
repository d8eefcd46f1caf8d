// fanout-partition as users run it: exit status, messages, and no output
// folder (not even a temporary one) after a failure.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>

#include "datasets/partition_store.h"
#include "tests/datasets/test_util.h"

namespace fanout::datasets {
namespace {

using ::testing::HasSubstr;
using testing::DataDir;
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
  ToolRun r = RunTool("--format linqs --input " + DataDir() + "/cora --parts 2 --method metis --output " + tmp.Sub("cora"));
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
  for (const char* opt : {"--input", "--format", "--parts", "--method", "--output", "--direction", "--undirected",
                          "--drop-duplicates", "--drop-self-loops", "--feature-dtype", "--rmat-scale", "--feature-dim"})
    EXPECT_THAT(r.output, HasSubstr(opt));
}

TEST(PartitionToolTest, BadInputFailsAndLeavesNoFolder) {
  TempDir tmp;
  tmp.Write("bad/t.content", "a 1 0 X\nb 0 1 1 Y\n");
  tmp.Write("bad/t.cites", "a b\n");
  ToolRun r = RunTool("--format linqs --input " + tmp.Sub("bad") + " --parts 1 --output " + tmp.Sub("out"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("t.content:2: feature row has 3 values, expected 2"));
  EXPECT_EQ(tmp.List(), std::vector<std::string>{"bad"});

  r = RunTool("--format snap --input " + tmp.Sub("missing.txt") + " --parts 2 --output " + tmp.Sub("out"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.output, HasSubstr("missing.txt: no such file"));
  EXPECT_EQ(tmp.List(), std::vector<std::string>{"bad"});

  r = RunTool("--format linqs --input " + DataDir() + "/cora --parts 5000 --output " + tmp.Sub("out"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(tmp.List(), std::vector<std::string>{"bad"});

  r = RunTool("--format nope --input x --parts 2 --output " + tmp.Sub("out"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("--format"));
}

TEST(PartitionToolTest, ExistingOutputNeedsForce) {
  TempDir tmp;
  std::string args = "--format planetoid --input " + DataDir() + "/planetoid/cora --parts 2 --output " + tmp.Sub("o");
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
