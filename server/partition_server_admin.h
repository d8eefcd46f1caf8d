// PartitionServer's admin endpoint state, shared by its lifecycle
// (partition_server.cc: Stop) and the endpoint itself
// (partition_server_admin.cc). Internal to server/.
#ifndef FANOUT_SERVER_PARTITION_SERVER_ADMIN_H_
#define FANOUT_SERVER_PARTITION_SERVER_ADMIN_H_

#include <httplib.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "server/partition_server.h"

namespace fanout::server {

struct PartitionServer::Admin {
  httplib::Server http;
  std::thread http_thread, tick_thread;
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;  // GUARDED_BY(mu)
};

}  // namespace fanout::server

#endif  // FANOUT_SERVER_PARTITION_SERVER_ADMIN_H_
