// fanout-ctl's admin-endpoint commands (client/tools/fanout_ctl_admin.cc).
#ifndef FANOUT_CLIENT_TOOLS_FANOUT_CTL_ADMIN_H_
#define FANOUT_CLIENT_TOOLS_FANOUT_CTL_ADMIN_H_

#include <string>
#include <vector>

namespace fanout::ctl {

// 12.3K, 4.56M, ...: a count or a size as people read it.
std::string Human(double v, const char* unit = "");
// fanout-ctl stats / tenants over the admin addresses HOST:PORT; `token` the
// admin credential ("" = none). The exit status: 0, or 1 where a server did
// not answer.
int Stats(const std::vector<std::string>& servers, const std::string& token);
int Tenants(const std::vector<std::string>& servers, const std::string& token);

}  // namespace fanout::ctl

#endif  // FANOUT_CLIENT_TOOLS_FANOUT_CTL_ADMIN_H_
