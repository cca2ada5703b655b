#include "dfw/common/file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "dfw/common/strings.h"
#include "dfw/common/test_hooks.h"

namespace dfw {

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

int64_t ReadAllAt(int fd, char* p, std::size_t n, int64_t offset) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, p + got, n - got, static_cast<off_t>(offset + static_cast<int64_t>(got)));
    if (r < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  return static_cast<int64_t>(got);
}

namespace {

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

namespace {

// What a non-regular file is, for "'P' is not a regular file: it is a FIFO".
const char* KindOfNonRegular(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

Status NotRegular(const std::string& path, mode_t mode, const char* what) {
  return InvalidArgument("'" + path + "' is not a regular file: it is " + KindOfNonRegular(mode) +
                         (what != nullptr && what[0] != '\0' ? std::string(" (a ") + what + " is read whole)" : std::string()));
}

Status TooBig(const std::string& path, uint64_t size, bool exact, std::size_t max_bytes, const char* what) {
  std::string limit = (max_bytes % kMiB == 0 && max_bytes > 0) ? std::to_string(max_bytes / kMiB) + " MiB"
                                                                : std::to_string(max_bytes) + " bytes";
  return InvalidArgument("'" + path + "' is " + (exact ? "" : "over ") + HumanBytes(size, ByteUnits::kDecimal) + " (" + std::to_string(size) +
                         " bytes), over the limit of " + limit +
                         (what != nullptr && what[0] != '\0' ? std::string(" for a ") + what : std::string()));
}

Result<std::string> ReadRegular(const std::string& path, std::size_t max_bytes, const char* what) {
  // stat first: a device is never even opened (opening some has side effects); then open without
  // blocking (a FIFO swapped in meanwhile would hang a plain open) and check the descriptor itself.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return NotFound("cannot read '" + path + "': " + std::strerror(errno));  // missing, or no permission
  }
  if (!S_ISREG(st.st_mode)) return NotRegular(path, st.st_mode, what);
  if (static_cast<uint64_t>(st.st_size) > max_bytes) return TooBig(path, static_cast<uint64_t>(st.st_size), true, max_bytes, what);
  OwnedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) {
    return NotFound("cannot read '" + path + "': " + std::strerror(errno));
  }
  if (::fstat(fd.get(), &st) != 0) return ErrnoError("stat '" + path + "'", errno);
  if (!S_ISREG(st.st_mode)) return NotRegular(path, st.st_mode, what);
  if (static_cast<uint64_t>(st.st_size) > max_bytes) return TooBig(path, static_cast<uint64_t>(st.st_size), true, max_bytes, what);
  // Read to the end, whatever st_size said (a file that grows, or a /proc file that states 0), but
  // never past the limit.
  std::string out;
  out.resize(std::min<std::size_t>(static_cast<std::size_t>(st.st_size) + 1, max_bytes + 1));
  std::size_t off = 0;
  for (;;) {
    if (off == out.size()) {
      if (out.size() > max_bytes) return TooBig(path, out.size(), false, max_bytes, what);
      out.resize(std::min<std::size_t>(out.size() * 2 + 4096, max_bytes + 1));
    }
    ssize_t n = ::read(fd.get(), out.data() + off, out.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("read '" + path + "'", errno);
    if (n == 0) break;
    off += static_cast<std::size_t>(n);
  }
  if (off > max_bytes) return TooBig(path, off, false, max_bytes, what);
  out.resize(off);
  return out;
}

}  // namespace

Result<std::string> ReadWholeFile(const std::string& path, std::size_t max_bytes) { return ReadRegular(path, max_bytes, ""); }

Result<std::string> ReadWholeFile(const std::string& path, const FileKind& kind) {
  return ReadRegular(path, kind.max_bytes, kind.what);
}

Result<std::optional<std::string>> ReadFileIfPresent(const std::string& path, const FileKind& kind) {
  Result<std::string> text = ReadRegular(path, kind.max_bytes, kind.what);
  if (text.ok()) return std::optional<std::string>(std::move(text).value());
  if (text.status().code() != StatusCode::kNotFound) return text.status();
  struct stat st {};  // absent only when nothing is there; a file we may not read is an error
  if (::lstat(path.c_str(), &st) != 0 && (errno == ENOENT || errno == ENOTDIR)) return std::optional<std::string>();
  return text.status();
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

namespace {

struct ReplaceTarget {
  std::string target;  // the file that changes (symlinks resolved)
  std::string folder;  // its folder
  std::string name;    // its name there
  struct stat st {};
};

std::string OctalMode(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

Result<ReplaceTarget> ResolveReplaceTarget(const std::string& path) {
  ReplaceTarget t;
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (resolved == nullptr) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return NotFound("'" + path + "' does not exist");
    return InvalidArgument("cannot resolve '" + path + "': " + std::strerror(err));
  }
  t.target = resolved;
  std::free(resolved);
  const std::string via = t.target == path ? std::string() : " (the target of '" + path + "')";
  if (::stat(t.target.c_str(), &t.st) != 0) return InvalidArgument("cannot stat '" + t.target + "'" + via + ": " + std::strerror(errno));
  if (!S_ISREG(t.st.st_mode)) {
    return InvalidArgument("'" + t.target + "'" + via + " is not a regular file: it is " + KindOfNonRegular(t.st.st_mode));
  }
  const std::size_t slash = t.target.find_last_of('/');
  t.folder = slash == 0 ? "/" : t.target.substr(0, slash);
  t.name = t.target.substr(slash + 1);
  if ((t.st.st_mode & 0222) == 0) {
    return InvalidArgument("'" + t.target + "'" + via + " is read-only (mode " + OctalMode(t.st.st_mode) +
                           "); dfworker does not rewrite it: make it writable (chmod u+w) to let it be changed");
  }
  if (::access(t.target.c_str(), W_OK) != 0) {
    return InvalidArgument("'" + t.target + "'" + via + " cannot be written by this user (" + std::strerror(errno) + ", mode " +
                           OctalMode(t.st.st_mode) + ", owner " + std::to_string(t.st.st_uid) + ":" +
                           std::to_string(t.st.st_gid) + "); it is left unchanged");
  }
  if (::access(t.folder.c_str(), W_OK | X_OK) != 0) {
    return InvalidArgument("'" + t.target + "'" + via + ": its folder '" + t.folder + "' cannot be written by this user (" +
                           std::strerror(errno) + "), so the file cannot be replaced whole; it is left unchanged");
  }
  return t;
}

}  // namespace

Status CheckFileReplaceable(const std::string& path) { return ResolveReplaceTarget(path).status(); }

Status ReplaceFileContents(const std::string& path, const std::string& contents) {
  ASSIGN_OR_RETURN(ReplaceTarget t, ResolveReplaceTarget(path));
  ASSIGN_OR_RETURN(OwnedFd dir, OpenFolder(t.folder));
  std::string tmp;
  ASSIGN_OR_RETURN(OwnedFd fd, CreateUniqueFileAt(dir.get(), "." + t.name + ".dfworker-new", kPrivateFileMode, &tmp));
  auto drop = [&] { ::unlinkat(dir.get(), tmp.c_str(), 0); };
  auto fail = [&](const std::string& what, int err) {
    drop();
    return ErrnoError(what, err);
  };
  const std::string tmp_path = t.folder + "/" + tmp;
  if (int err = WriteAll(fd.get(), contents.data(), contents.size()); err != 0) return fail("write '" + tmp_path + "'", err);
  // The owner and group first (chown may clear set-id bits), then the mode.
  const uid_t uid = t.st.st_uid == ::geteuid() ? static_cast<uid_t>(-1) : t.st.st_uid;
  const gid_t gid = t.st.st_gid == ::getegid() ? static_cast<gid_t>(-1) : t.st.st_gid;
  if ((uid != static_cast<uid_t>(-1) || gid != static_cast<gid_t>(-1)) && ::fchown(fd.get(), uid, gid) != 0) {
    const int err = errno;
    drop();
    return InvalidArgument("'" + t.target + "' belongs to " + std::to_string(t.st.st_uid) + ":" + std::to_string(t.st.st_gid) +
                           "; its replacement written by this user (" + std::to_string(::geteuid()) + ":" +
                           std::to_string(::getegid()) + ") cannot keep that owner and group (" + std::strerror(err) +
                           "); it is left unchanged");
  }
  if (::fchmod(fd.get(), t.st.st_mode & 07777) != 0) return fail("chmod '" + tmp_path + "'", errno);
  if (::fsync(fd.get()) != 0) return fail("fsync '" + tmp_path + "'", errno);
  if (::close(fd.release()) != 0) return fail("close '" + tmp_path + "'", errno);
  test_hooks::KillPoint("rename:" + t.name);
  if (::renameat(dir.get(), tmp.c_str(), dir.get(), t.name.c_str()) != 0) return fail("rename '" + tmp_path + "' to '" + t.target + "'", errno);
  if (::fsync(dir.get()) != 0) return ErrnoError("fsync the folder of '" + t.target + "'", errno);
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
