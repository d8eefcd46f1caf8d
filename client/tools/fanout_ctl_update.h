// fanout-ctl update: graph updates from a CSV file or standard input to a
// cluster's live partitions (client/tools/fanout_ctl_update.cc).
#ifndef FANOUT_CLIENT_TOOLS_FANOUT_CTL_UPDATE_H_
#define FANOUT_CLIENT_TOOLS_FANOUT_CTL_UPDATE_H_

#include <cstdint>
#include <string>

#include "rpc/rpc_client.h"

namespace fanout::ctl {

struct UpdateOptions {
  std::string cluster_file;
  std::string input = "-";  // a CSV file, or "-" for standard input
  int64_t batch = 1000;     // lines per update batch
  bool undirected = false;  // store every edge in both directions
  bool quiet = false;       // no line per batch
};

// Lines (comments from '#', blank lines skipped):
//   add,SRC,DST[,TIME[,WEIGHT[,TYPE]]]   an edge SRC -> DST
//   remove,SRC,DST[,TYPE]                every edge SRC -> DST (of TYPE)
//   label,NODE,VALUE
//   features,NODE,V1 V2 ...              a float32 dataset's whole row
// Exit status: 0; 1 where a batch was refused or a server failed (naming
// the line range and the partition); 2 for a malformed line (naming it).
int Update(const UpdateOptions& o, const rpc::RpcOptions& ro);

}  // namespace fanout::ctl

#endif  // FANOUT_CLIENT_TOOLS_FANOUT_CTL_UPDATE_H_
