// Files, the careful way: whole reads with a size cap, atomic replacement, fsync, and new files in
// folders that other users may write to (exclusive creation under an unpredictable name, relative
// to a folder descriptor, never through a symlink).
//
// Every module may use these (common is the bottom of the house). Errors are Status values naming
// the path and carrying the errno text; nothing throws.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "dfw/common/status.h"

namespace dfw {

// The modes dfworker gives what it creates, whatever the umask: a job dir and everything in it is
// private to the user who runs the job; outputs are readable by all, as `cp` would leave them
// under the usual umask 022.
inline constexpr mode_t kPrivateFolderMode = 0700;
inline constexpr mode_t kPrivateFileMode = 0600;
inline constexpr mode_t kOutputFileMode = 0644;
inline constexpr mode_t kOutputFolderMode = 0755;

// A file descriptor closed on destruction (move-only).
class OwnedFd {
 public:
  OwnedFd() = default;
  explicit OwnedFd(int fd) : fd_(fd) {}
  OwnedFd(OwnedFd&& o) noexcept : fd_(o.release()) {}
  OwnedFd& operator=(OwnedFd&& o) noexcept;
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  ~OwnedFd();
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// mkdir -p with an exact mode: every missing folder of `path` is created with `mode` whatever the
// umask; folders that exist are left as they are. "" is the working directory (nothing to do).
Status MakeFolders(const std::string& path, mode_t mode);

// dfworker's per-user cache folder, for decisions measured on this machine that later jobs can
// reuse (a model's precision choice): $DFW_CACHE_DIR, else $XDG_CACHE_HOME/dfworker, else
// $HOME/.cache/dfworker, made private (0700) when missing. "" when DFW_CACHE_DIR is "none" or
// empty, or no folder could be made (callers then keep nothing beyond the job).
std::string UserCacheDir();

// Reads a regular file of at most `max_bytes` (a FIFO, device or folder in its place is
// kFailedPrecondition, never a hang; a bigger file is kFailedPrecondition naming the size; a
// missing one kNotFound).
Result<std::string> ReadWholeFile(const std::string& path, std::size_t max_bytes = std::size_t{64} << 20);

// Writes `contents` to `path` via a temporary file unique to this process and call, fsync and
// rename (never half-written, and two writers never clobber each other's temporary file). The file
// gets `mode` whatever the umask. `sync` false skips the fsync (the file is still never seen
// half-written, but may not survive a crash).
Status WriteFileAtomically(const std::string& path, const std::string& contents, bool sync = true,
                           mode_t mode = kPrivateFileMode);

// fsync of a file or folder by path (kIoError naming it). A folder "" is the working directory.
Status FsyncPath(const std::string& path);

// Opens a folder for use as the base of *at() calls (O_DIRECTORY; symlinks in the path are
// followed: the user named it).
Result<OwnedFd> OpenFolder(const std::string& path);

// kInvalidArgument when the opened folder `dir_fd` (named `path` in the message) can be written
// by every user and has no sticky bit: another user could then rename or replace what is put in
// it, so nothing of a job may go there.
Status CheckFolderNotOpenToAll(int dir_fd, const std::string& path);

// Creates a new file in `dir_fd` under a fresh unpredictable name starting with `stem`
// (O_CREAT | O_EXCL | O_NOFOLLOW: a name another user planted, file or symlink, is never opened),
// with `mode` whatever the umask. Returns the open descriptor; `*name` receives the name.
Result<OwnedFd> CreateUniqueFileAt(int dir_fd, const std::string& stem, mode_t mode, std::string* name);

// Copies `from` into the folder `to_dir_fd` as `to_name`: a new exclusive temporary file there
// (CreateUniqueFileAt), the bytes, `mode`, fsync, then renameat onto `to_name` (which replaces a
// file or symlink of that name without following it) and an fsync of the folder. `to_path` names
// the target in messages. On failure the temporary file is removed; `to_name` is untouched.
Status CopyFileInto(const std::string& from, int to_dir_fd, const std::string& to_name, const std::string& to_path,
                    mode_t mode);

}  // namespace dfw
