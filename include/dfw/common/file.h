// Files, the careful way: whole reads with a size cap, atomic replacement, fsync, and new files in
// folders that other users may write to (exclusive creation under an unpredictable name, relative
// to a folder descriptor, never through a symlink).
//
// Every module may use these (common is the bottom of the house). Errors are Status values naming
// the path and carrying the errno text; nothing throws.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
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

// Writes all of [p, p + n) to `fd`, retrying short writes and EINTR: 0, or the errno.
int WriteAll(int fd, const char* p, std::size_t n);
// Reads [offset, offset + n) of `fd` into p (pread), retrying short reads and EINTR until n bytes or
// the end of the file: the bytes read (fewer only at the end), or -errno.
int64_t ReadAllAt(int fd, char* p, std::size_t n, int64_t offset);

// mkdir -p with an exact mode: every missing folder of `path` is created with `mode` whatever the
// umask; folders that exist are left as they are. "" is the working directory (nothing to do).
Status MakeFolders(const std::string& path, mode_t mode);

// dfworker's per-user cache folder, for decisions measured on this machine that later jobs can
// reuse (a model's precision choice): $DFW_CACHE_DIR, else $XDG_CACHE_HOME/dfworker, else
// $HOME/.cache/dfworker, made private (0700) when missing. "" when DFW_CACHE_DIR is "none" or
// empty, or no folder could be made (callers then keep nothing beyond the job).
std::string UserCacheDir();

// What a file the user names is read as: its name in messages and the size it may have. Every
// reader of a user's file passes one of these (or its own), so that a FIFO, a device or a huge
// file in a model directory is refused by name instead of read until memory runs out.
struct FileKind {
  const char* what;       // "tokenizer.json", "model config", ...: "... over the limit of 64 MiB for a tokenizer.json"
  std::size_t max_bytes;  // larger files are refused
};
inline constexpr std::size_t kMiB = std::size_t{1} << 20;
inline constexpr FileKind kModelConfigFile{"model config (config.json)", 16 * kMiB};
inline constexpr FileKind kTokenizerFile{"tokenizer.json", 64 * kMiB};  // the largest public ones are ~35 MB
inline constexpr FileKind kTokenizerConfigFile{"tokenizer_config.json", 64 * kMiB};
inline constexpr FileKind kVocabFile{"tokenizer vocabulary", 64 * kMiB};
inline constexpr FileKind kGenerationConfigFile{"generation_config.json", 16 * kMiB};
inline constexpr FileKind kSmallJsonFile{"model settings file", 16 * kMiB};  // sentence-transformers' JSON files, refs/main
inline constexpr FileKind kPriceTableFile{"price table", 16 * kMiB};
inline constexpr FileKind kBenchResultFile{"bench result", 64 * kMiB};
inline constexpr FileKind kGpuEfficiencyFile{"GPU-efficiency file", 16 * kMiB};
inline constexpr FileKind kCatalogFile{"catalog file", 16 * kMiB};
inline constexpr FileKind kTestSuiteFile{"test suite", 64 * kMiB};

// Reads a regular file of at most `max_bytes`. The file is opened with O_NONBLOCK and fstat'ed
// before a byte is read, so a FIFO never blocks and a device is never read. Errors name the path
// and say what is there instead: kInvalidArgument "'P' is not a regular file: it is a FIFO" (a
// character device, a block device, a socket, a directory), "'P' is 3.2 GB (3200000000 bytes),
// over the limit of 64 MiB for a tokenizer.json"; a missing file (or one this user may not open)
// is kNotFound; a read error kIoError. The default kind is a
// file of no particular kind with a 64 MiB limit.
Result<std::string> ReadWholeFile(const std::string& path, std::size_t max_bytes = 64 * kMiB);
Result<std::string> ReadWholeFile(const std::string& path, const FileKind& kind);

// As ReadWholeFile, but a missing file (ENOENT, or a missing folder on the way: ENOTDIR) is
// nullopt: for files a model directory may leave out (tokenizer_config.json,
// generation_config.json). A file that is there but of the wrong kind or size is still an error,
// never taken as absent.
Result<std::optional<std::string>> ReadFileIfPresent(const std::string& path, const FileKind& kind);

// Writes `contents` to `path` via a temporary file unique to this process and call, fsync and
// rename (never half-written, and two writers never clobber each other's temporary file). The file
// gets `mode` whatever the umask. `sync` false skips the fsync (the file is still never seen
// half-written, but may not survive a crash).
Status WriteFileAtomically(const std::string& path, const std::string& contents, bool sync = true,
                           mode_t mode = kPrivateFileMode);

// Rewrites the existing file `path` with `contents` where and as a write through the path would
// (as Beam's --fix_tests writes its file), yet never half-written:
// - a symlink is followed: its target changes, the link stays a link;
// - the new file is made beside the target (CreateUniqueFileAt: O_EXCL | O_NOFOLLOW, a name no one
//   can have planted), gets the old file's owner, group and mode (fchown, then fchmod), is fsync'ed,
//   renamed over the target, and the folder is fsync'ed;
// - a file this user may not write (access(W_OK) fails, or its mode has no write bit), one that is
//   not a regular file, a folder where the new file cannot be made, or an owner/group that cannot
//   be kept, is kInvalidArgument naming the file and why, and nothing is changed.
// A missing file is kNotFound (create it with WriteFileAtomically).
Status ReplaceFileContents(const std::string& path, const std::string& contents);

// The checks of ReplaceFileContents alone, to refuse before work whose result could not be
// written (kNotFound when the file does not exist).
Status CheckFileReplaceable(const std::string& path);

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
