// Tenants: the jobs one server serves (fanout-server --tenants FILE,
// reloaded on SIGHUP). A request is charged to the tenant its credentials
// name (the token a connection authenticated with, or the subject of its TLS
// client certificate; on the data plane, the ticket that token was handed);
// a request without credentials is the `default` tenant's.
//
// The file, one tenant per line ('#' starts a comment; values may be quoted):
//
//   tenant NAME [token=TEXT | token_file=PATH] [tls_subject=TEXT]
//               [weight=W] [class=batch|online]
//               [max_inflight_bytes=BYTES] [max_requests_per_s=R]
//               [max_feature_bytes_per_s=BYTES] [max_update_bytes_per_s=BYTES] [local=yes|no]
//
// weight (default 1) sets a tenant's share of a saturated server; class
// online (inference queries) is served first, within a share that always
// leaves batch work progress; the max_ keys are quotas (0 or absent: none;
// BYTES as 64M, 2G, ...); local=yes lets the tenant's same-host clients map
// the server's export (default no: they read over the RPC paths, where
// quotas and the fair order apply). A tenant named `default` sets the limits of
// requests without credentials (without one: weight 1, batch, no quotas);
// `tenant default refuse` makes such requests Unauthenticated. A token
// shorter than 16 characters, two tenants with one token or subject, or a
// tenant other than default without credentials is an error naming the line.
//
// Thread safety: a TenantTable is immutable once parsed; servers swap the
// whole table on reload (shared_ptr).
#ifndef FANOUT_SERVER_TENANTS_H_
#define FANOUT_SERVER_TENANTS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace fanout::server {

struct Tenant {
  std::string name;
  std::string token;        // "" = none
  std::string tls_subject;  // "" = none
  double weight = 1;
  bool online = false;
  bool refuse = false;                 // `default` only: requests without credentials are refused
  bool local = false;                  // may map the same-host export (local=yes)
  bool write = false;                  // may apply updates to a live partition (write=yes)
  int64_t max_inflight_bytes = 0;      // 0 = no quota
  double max_requests_per_s = 0;       // 0 = no quota
  double max_feature_bytes_per_s = 0;  // 0 = no quota
  double max_update_bytes_per_s = 0;   // update batch bytes (live partitions); 0 = no quota
  int line = 0;                        // where the file names it (0: implicit)
};

class TenantTable {
 public:
  // Parses `text` (the file's contents; `origin` names it in errors, and
  // token_file paths are relative to its folder). InvalidArgument naming the
  // line and what is wrong.
  static Status Parse(const std::string& text, const std::string& origin,
                      std::shared_ptr<const TenantTable>* out);
  static Status Load(const std::string& path, std::shared_ptr<const TenantTable>* out);
  // The table of a server without a tenants file: `default` alone.
  static std::shared_ptr<const TenantTable> DefaultOnly();

  const std::vector<Tenant>& tenants() const { return tenants_; }
  int default_index() const { return default_; }
  // The tenant a token names (constant time in the token); -1 = none.
  int ByToken(const std::string& token) const;
  int ByTlsSubject(const std::string& subject) const;
  int ByName(const std::string& name) const;
  // Whether any tenant has a token (connections must then authenticate or be default).
  bool has_tokens() const { return has_tokens_; }

 private:
  std::vector<Tenant> tenants_;
  int default_ = 0;
  bool has_tokens_ = false;
};

}  // namespace fanout::server

#endif  // FANOUT_SERVER_TENANTS_H_
