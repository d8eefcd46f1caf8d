// A plain blocking-socket feature server, the baseline the RPC paths are
// measured against: request u32 count + count i64 ids; reply the gathered
// rows. One thread per connection.
#ifndef FANOUT_BENCH_PLAIN_SERVER_H_
#define FANOUT_BENCH_PLAIN_SERVER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <thread>
#include <vector>

#include "datasets/partition_store.h"

namespace fanout::bench {

inline bool ReadAll(int fd, void* buf, size_t n) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = recv(fd, p, n, 0);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

inline bool WriteAll(int fd, const void* buf, size_t n) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t r = send(fd, p, n, MSG_NOSIGNAL);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// The baseline: a plain blocking-socket server, one thread per connection.
// Request: u32 count + count i64 ids; reply: the gathered rows.
class PlainServer {
 public:
  explicit PlainServer(const fanout::datasets::PartitionData& d) : d_(d) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    listen(fd_, 64);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    accept_ = std::thread([this] {
      for (;;) {
        int c = accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        workers_.emplace_back([this, c] { Serve(c); });
      }
    });
  }
  ~PlainServer() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    accept_.join();
    for (auto& w : workers_) w.join();
  }
  int port() const { return port_; }

 private:
  void Serve(int c) {
    int one = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const size_t row = static_cast<size_t>(d_.meta.feature_dim) * 4;
    std::vector<int64_t> ids;
    std::vector<char> out;
    for (;;) {
      uint32_t n;
      if (!ReadAll(c, &n, 4)) break;
      ids.resize(n);
      if (!ReadAll(c, ids.data(), n * 8)) break;
      out.resize(n * row);
      for (uint32_t i = 0; i < n; ++i)
        std::memcpy(out.data() + i * row, d_.features.data() + (ids[i] - d_.node_begin) * row, row);
      if (!WriteAll(c, out.data(), out.size())) break;
    }
    close(c);
  }
  const fanout::datasets::PartitionData& d_;
  int fd_ = -1, port_ = 0;
  std::thread accept_;
  std::vector<std::thread> workers_;
};

// Connects a TCP_NODELAY socket to the plain server on loopback (-1 on failure).
inline int ConnectPlain(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

}  // namespace fanout::bench

#endif  // FANOUT_BENCH_PLAIN_SERVER_H_
