// Where same-host export sockets live, and the checks that keep other uids
// from owning their folder (rpc/local_export.h).
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "rpc/local_export.h"

namespace fanout::rpc {

namespace {
std::string Octal(mode_t m) {
  char b[8];
  std::snprintf(b, sizeof(b), "%04o", static_cast<unsigned>(m & 07777));
  return b;
}
std::string ParentOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}
}  // namespace

std::string DefaultLocalSocketDir() {
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  if (xdg != nullptr && *xdg != '\0') return std::string(xdg) + "/fanout";
  if (geteuid() == 0) return "/run/fanout";
  return "/tmp/fanout-" + std::to_string(geteuid());
}

Status PrepareLocalSocketDir(const std::string& dir, bool others_may_connect) {
  const mode_t want = others_may_connect ? 0711 : 0700;
  if (mkdir(dir.c_str(), want) != 0 && errno != EEXIST)
    return Status::Unavailable("cannot make the local socket folder " + dir + ": " +
                               std::strerror(errno));
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0)
    return Status::Unavailable("local socket folder " + dir + ": " + std::strerror(errno));
  const std::string fix =
      "; remove it (or set XDG_RUNTIME_DIR, or pass --local-socket PATH or --local-socket off)";
  if (S_ISLNK(st.st_mode))
    return Status::InvalidArgument("local socket folder " + dir + " is a symbolic link" + fix);
  if (!S_ISDIR(st.st_mode))
    return Status::InvalidArgument("local socket folder " + dir + " is not a folder" + fix);
  if (st.st_uid != geteuid())
    return Status::InvalidArgument("local socket folder " + dir + " belongs to uid " +
                                   std::to_string(st.st_uid) + ", not to this server's uid " +
                                   std::to_string(geteuid()) + " (another user made it first?)" +
                                   fix);
  // mkdir's mode went through the umask; an existing folder keeps its own.
  const mode_t allowed = others_may_connect ? 0711 : 0700;
  if ((st.st_mode & 0777 & ~allowed) != 0) {
    if (chmod(dir.c_str(), want) != 0 ||  // ours: narrowed, then checked again below
        lstat(dir.c_str(), &st) != 0 || (st.st_mode & 0777 & ~allowed) != 0)
      return Status::InvalidArgument("local socket folder " + dir + " has mode " +
                                     Octal(st.st_mode) + "; it must allow no other uid more than " +
                                     Octal(allowed) + fix);
  }
  if ((st.st_mode & 0700) != 0700 && chmod(dir.c_str(), want) != 0)
    return Status::Unavailable("local socket folder " + dir + ": " + std::strerror(errno));
  return Status::OK();
}

Status CheckSocketFolder(const std::string& socket_path) {
  const std::string dir = ParentOf(socket_path);
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0)
    return Status::InvalidArgument("the folder of local socket " + socket_path + " (" + dir +
                                   "): " + std::strerror(errno));
  if (S_ISLNK(st.st_mode))
    return Status::InvalidArgument("the folder of local socket " + socket_path + " (" + dir +
                                   ") is a symbolic link; give its real path");
  if (!S_ISDIR(st.st_mode))
    return Status::InvalidArgument("the folder of local socket " + socket_path + " (" + dir +
                                   ") is not a folder");
  if (st.st_uid != geteuid() && st.st_uid != 0)
    return Status::InvalidArgument("the folder of local socket " + socket_path + " (" + dir +
                                   ") belongs to uid " + std::to_string(st.st_uid) +
                                   ", who could replace the socket; use a folder of uid " +
                                   std::to_string(geteuid()) + " or root");
  if ((st.st_mode & 022) != 0 && (st.st_mode & S_ISVTX) == 0)
    return Status::InvalidArgument("the folder of local socket " + socket_path + " (" + dir +
                                   ") has mode " + Octal(st.st_mode) +
                                   ": other uids may replace the socket; use a folder only its "
                                   "owner can write (or a sticky one)");
  return Status::OK();
}

std::string DefaultLocalSocketPath(const std::string& dataset_id, int partition, int rpc_port) {
  std::string id = dataset_id.substr(0, 32);
  for (char& c : id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  return DefaultLocalSocketDir() + "/" + id + "-p" + std::to_string(partition) + "-" +
         std::to_string(rpc_port) + ".sock";
}

}  // namespace fanout::rpc
