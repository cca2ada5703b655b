#include "dfw/common/file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "dfw/common/test_hooks.h"

namespace dfw {
namespace {

// Writes all of `n` bytes, retrying short writes and EINTR. Returns 0 or the errno.
int WriteAll(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return 0;
}

std::string RandomHex() {
  unsigned char bytes[8];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got < sizeof bytes) {  // no getrandom (very old kernel): still never reused in this process
    static std::atomic<uint64_t> counter{0};
    uint64_t v = (static_cast<uint64_t>(::getpid()) << 32) ^ counter.fetch_add(1) ^ static_cast<uint64_t>(::time(nullptr));
    std::memcpy(bytes, &v, sizeof bytes);
  }
  char hex[17];
  for (int i = 0; i < 8; ++i) std::snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
  return hex;
}

}  // namespace

OwnedFd& OwnedFd::operator=(OwnedFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

OwnedFd::~OwnedFd() {
  if (fd_ >= 0) ::close(fd_);
}

Status MakeFolders(const std::string& path, mode_t mode) {
  if (path.empty()) return Status::OK();
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    const std::string prefix = path.substr(0, pos);
    if (prefix.empty() || prefix == "." || prefix == "..") continue;
    if (::mkdir(prefix.c_str(), mode) == 0) {
      if (::chmod(prefix.c_str(), mode) != 0) return ErrnoError("chmod '" + prefix + "'", errno);
    } else if (errno != EEXIST) {
      return ErrnoError("create folder '" + prefix + "'", errno);
    }
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return ErrnoError("stat '" + path + "'", errno);
  if (!S_ISDIR(st.st_mode)) return FailedPrecondition("'" + path + "' is not a folder");
  return Status::OK();
}

std::string UserCacheDir() {
  std::string dir;
  if (const char* env = std::getenv("DFW_CACHE_DIR"); env != nullptr) {
    if (std::string(env).empty() || std::string(env) == "none") return "";
    dir = env;
  } else if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/') {
    dir = std::string(xdg) + "/dfworker";
  } else if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0') {
    dir = std::string(home) + "/.cache/dfworker";
  } else {
    return "";
  }
  if (!MakeFolders(dir, kPrivateFolderMode).ok()) return "";
  return dir;
}

Result<std::string> ReadWholeFile(const std::string& path, std::size_t max_bytes) {
  // Open without blocking (a FIFO in a file's place would hang a plain open), then insist on a
  // regular file of sane size before reading it into memory.
  OwnedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) return NotFound("cannot read '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return FailedPrecondition("'" + path + "' is not a regular file");
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return FailedPrecondition("'" + path + "' is " + std::to_string(st.st_size) + " bytes, over the limit of " +
                              std::to_string(max_bytes) + " for this file");
  }
  std::string out(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t off = 0;
  while (off < out.size()) {
    ssize_t n = ::read(fd.get(), out.data() + off, out.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("read '" + path + "'", errno);
    if (n == 0) break;  // shrank while reading
    off += static_cast<std::size_t>(n);
  }
  out.resize(off);
  return out;
}

Status WriteFileAtomically(const std::string& path, const std::string& contents, bool sync, mode_t mode) {
  // A temporary name of this process and call: two writers never share one (each rename is whole).
  static std::atomic<uint64_t> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  OwnedFd fd(::open(tmp.c_str(), flags, mode));
  if (!fd.valid() && errno == EEXIST && ::unlink(tmp.c_str()) == 0) fd = OwnedFd(::open(tmp.c_str(), flags, mode));  // a killed run's, same pid
  if (!fd.valid()) return ErrnoError("create '" + tmp + "'", errno);
  auto fail = [&](const std::string& what, int err) {
    ::unlink(tmp.c_str());
    return ErrnoError(what, err);
  };
  if (::fchmod(fd.get(), mode) != 0) return fail("chmod '" + tmp + "'", errno);  // whatever the umask
  if (int err = WriteAll(fd.get(), contents.data(), contents.size()); err != 0) return fail("write '" + tmp + "'", err);
  if (sync && ::fsync(fd.get()) != 0) return fail("fsync '" + tmp + "'", errno);
  if (::close(fd.release()) != 0) return fail("close '" + tmp + "'", errno);
  test_hooks::KillPoint("rename:" + path.substr(path.find_last_of('/') + 1));  // e.g. "rename:job.json"
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("rename '" + tmp + "' to '" + path + "'", errno);
  return Status::OK();
}

Status FsyncPath(const std::string& path) {
  const std::string p = path.empty() ? "." : path;
  OwnedFd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError("open '" + p + "' to sync it", errno);
  if (::fsync(fd.get()) != 0) return ErrnoError("fsync '" + p + "'", errno);
  return Status::OK();
}

Result<OwnedFd> OpenFolder(const std::string& path) {
  const std::string p = path.empty() ? "." : path;
  OwnedFd fd(::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError("open folder '" + p + "'", errno);
  return fd;
}

Status CheckFolderNotOpenToAll(int dir_fd, const std::string& path) {
  struct stat st {};
  if (::fstat(dir_fd, &st) != 0) return ErrnoError("stat folder '" + path + "'", errno);
  if ((st.st_mode & S_IWOTH) != 0 && (st.st_mode & S_ISVTX) == 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return InvalidArgument("folder '" + path + "' (mode " + mode +
                           ") can be written by every user and has no sticky bit: another user could replace what "
                           "dfworker puts there; use a folder only you can write to (or add the sticky bit, chmod +t)");
  }
  return Status::OK();
}

Result<OwnedFd> CreateUniqueFileAt(int dir_fd, const std::string& stem, mode_t mode, std::string* name) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::string candidate = stem + "." + RandomHex();
    OwnedFd fd(::openat(dir_fd, candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
    if (!fd.valid()) {
      if (errno == EEXIST) continue;  // taken (by chance or by another user): draw again
      return ErrnoError("create '" + candidate + "'", errno);
    }
    if (::fchmod(fd.get(), mode) != 0) {
      int err = errno;
      ::unlinkat(dir_fd, candidate.c_str(), 0);
      return ErrnoError("chmod '" + candidate + "'", err);
    }
    *name = std::move(candidate);
    return fd;
  }
  return ResourceExhausted("create a file named '" + stem + ".<random>': 16 random names were all taken");
}

Status CopyFileInto(const std::string& from, int to_dir_fd, const std::string& to_name, const std::string& to_path,
                    mode_t mode) {
  OwnedFd in(::open(from.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!in.valid()) return ErrnoError("open '" + from + "'", errno);
  std::string tmp;
  ASSIGN_OR_RETURN(OwnedFd out, CreateUniqueFileAt(to_dir_fd, "." + to_name + ".dfworker-copy", mode, &tmp));
  const std::string tmp_path = to_path + " (as its temporary copy '" + tmp + "')";
  auto fail = [&](const std::string& what, int err) {
    ::unlinkat(to_dir_fd, tmp.c_str(), 0);
    return ErrnoError(what, err);
  };
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(in.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("read '" + from + "'", errno);
    if (n == 0) break;
    if (int err = WriteAll(out.get(), buf, static_cast<std::size_t>(n)); err != 0) return fail("write " + tmp_path, err);
  }
  if (::fsync(out.get()) != 0) return fail("fsync " + tmp_path, errno);
  if (::close(out.release()) != 0) return fail("close " + tmp_path, errno);
  if (::renameat(to_dir_fd, tmp.c_str(), to_dir_fd, to_name.c_str()) != 0) return fail("rename into '" + to_path + "'", errno);
  if (::fsync(to_dir_fd) != 0) return ErrnoError("fsync the folder of '" + to_path + "'", errno);
  return Status::OK();
}

}  // namespace dfw
