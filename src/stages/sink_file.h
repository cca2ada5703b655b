// A sink's output file for one bundle: written under a temporary name, renamed on Commit.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "dfw/common/file.h"
#include "dfw/common/status.h"
#include "dfw/stages/sink.h"
#include "dfw/stages/stage.h"

namespace dfw::stages_internal {

// Writes go out in large pieces: a sink hands over a batch of a few KiB at a time, which stdio
// (its buffer a page) had made a write(2) per 4 KiB, 2,400 a 10 MiB bundle; the file keeps
// kBufferBytes and writes them at once.
//
// Commit's fsync makes the bundle's bytes durable before the commit does. Waiting for a whole
// bundle's bytes at its end left the CPU idle for the disk at every bundle (10 ms a 10 MiB bundle
// here, a tenth of the work's time); so Write starts the disk's write-back of every full
// kWritebackBytes as it goes (Linux sync_file_range, which starts write-back and does not wait for
// it), and Commit's fsync waits for little more than the last stretch. Durability is unchanged:
// nothing counts as written before that fsync.
class BundleFile {
 public:
  static constexpr std::size_t kBufferBytes = std::size_t{256} << 10;
  static constexpr int64_t kWritebackBytes = int64_t{1} << 20;

  // Creates <staging>/<transform>/ and opens bundle-<id>.tmp for writing (truncating a previous attempt).
  Status Open(const BundleContext& bundle, const std::string& transform);
  Status Write(std::string_view bytes);
  // Writes what is buffered, fsyncs, closes and renames .tmp to .done.
  Status Commit();
  bool is_open() const { return fd_.valid(); }
  // The file's first bytes whose write-back Write has started (a multiple of kWritebackBytes; 0
  // where the system has no sync_file_range or the file system refused it).
  int64_t writeback_started() const { return writeback_started_; }
  // Bytes handed to the file system so far (Write keeps up to kBufferBytes until it has more).
  int64_t written() const { return written_; }

 private:
  Status Flush();
  Status WriteOut(std::string_view bytes);
  void StartWriteback();

  OwnedFd fd_;
  std::string tmp_, done_;
  std::string pending_;            // bytes not yet written
  int64_t written_ = 0;            // bytes in the file
  int64_t writeback_started_ = 0;  // the file's first bytes whose write-back was started
  bool writeback_refused_ = false;  // the file system refused: Commit's fsync does it all
};

}  // namespace dfw::stages_internal

namespace dfw::stages_internal {

// Base of the file sinks: one BundleFile per bundle; subclasses format rows. Registered serial,
// so Process calls never overlap and the file needs no lock.
class FileSink : public Stage {
 public:
  explicit FileSink(StageConfig config) : config_(std::move(config)) {}

  Status StartBundle(const BundleContext& bundle) override {
    StartFile();
    return file_.Open(bundle, config_.name).WithContext(config_.Where());
  }
  Status Process(RowBatch& in, StageOutput& out) override {
    buffer_.clear();
    for (const Row& row : in) RETURN_IF_ERROR(Format(row, buffer_, out));
    return file_.Write(buffer_).WithContext(config_.Where());
  }
  Status FinishBundle(StageOutput&) override { return file_.Commit().WithContext(config_.Where()); }

 protected:
  // Called at the start of each bundle file (e.g. to write a CSV header again).
  virtual void StartFile() {}
  // Appends one row's bytes to `buf`, or returns out.Fail(...) for a row it cannot write.
  virtual Status Format(const Row& row, std::string& buf, StageOutput& out) = 0;

  StageConfig config_;

 private:
  BundleFile file_;
  std::string buffer_;
};

}  // namespace dfw::stages_internal
