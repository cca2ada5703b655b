#include "dfw/device/mps_status.h"

#include <sys/stat.h>

#include <fstream>
#include <map>
#include <sstream>

#include "dfw/common/strings.h"
#include "dfw/device/memory_ledger.h"
#include "dfw/device/mps_client.h"
#include "dfw/device/mps_env.h"
#include "control_socket.h"
#include "subprocess.h"

namespace dfw::device {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

std::string Field(std::string_view line, const std::string& key) {
  for (const std::string& w : Split(line, ' ')) {
    if (w.rfind(key + "=", 0) == 0) return w.substr(key.size() + 1);
  }
  return "";
}

}  // namespace

Result<std::string> DescribeMpsStatus(std::string_view job_dir, const std::string& control_program) {
  const MpsDirs dirs = MpsDirsForJob(job_dir);
  const std::string ledger_path = LedgerPathForJob(job_dir);
  const bool has_mps = Exists(dirs.pipe_dir), has_ledger = Exists(ledger_path);
  if (!has_mps && !has_ledger) {
    return NotFound("job dir '" + std::string(job_dir) + "' has no MPS pipe dir (" + dirs.pipe_dir +
                    ") and no GPU-memory ledger (" + ledger_path + "); is it a dfworker job dir?");
  }
  // pid -> allocated bytes, from the ledger.
  std::map<long, uint64_t> allocated;
  std::ostringstream out;
  std::string memory_line;
  if (has_ledger) {
    Result<MemoryLedger> ledger = MemoryLedger::Open(ledger_path);
    Result<LedgerSnapshot> snap = ledger.ok() ? ledger->Snapshot() : Result<LedgerSnapshot>(ledger.status());
    if (!snap.ok()) return snap.status();
    for (const LedgerEntry& e : snap->entries) allocated[e.pid] = e.allocated_bytes;
    memory_line = "device memory: " + snap->device_name + ", " + HumanBytes(snap->used_bytes) + " used of " +
                  HumanBytes(snap->capacity_bytes) + " (" + HumanBytes(snap->free_bytes()) + " free)\n";
    if (!has_mps) {
      out << "MPS: not used by this job\n";
      for (const LedgerEntry& e : snap->entries) {
        out << "  pid " << e.pid << "  " << e.name << "  allocated " << HumanBytes(e.allocated_bytes) << "\n";
      }
    }
  }
  if (has_mps) {
    if (Exists(ControlSocketPath(dirs.pipe_dir))) {
      Result<std::string> ping = MpsControlCommand(dirs.pipe_dir, "ping", 2000);
      Result<std::string> ps = ping.ok() ? MpsControlCommand(dirs.pipe_dir, "ps", 2000) : ping;
      if (!ps.ok()) {
        out << "MPS daemon (emulated): not running (" << ps.status().message() << ")\n";
      } else {
        out << "MPS daemon (emulated): pid " << Field(Trim(*ping), "pid") << ", " << Field(Trim(*ping), "clients")
            << " clients, pipe dir " << dirs.pipe_dir << "\n";
        for (const std::string& line : Split(*ps, '\n')) {
          if (line.rfind("client ", 0) != 0) continue;
          long pid = ParseInt64(Field(line, "pid")).value_or(0);
          std::optional<int64_t> pinned = ParseInt64(Field(line, "pinned"));
          out << "  pid " << pid << "  " << Field(line, "name") << "  threads " << Field(line, "threads") << "%"
              << "  pinned " << (pinned ? HumanBytes(static_cast<uint64_t>(*pinned)) : std::string("unlimited"))
              << "  allocated " << HumanBytes(allocated.count(pid) ? allocated[pid] : 0) << "\n";
        }
      }
    } else if (Exists(dirs.pipe_dir + "/nvidia-cuda-mps-control.pid")) {
      EnvOverrides env = {{std::string(kPipeDirEnv), dirs.pipe_dir}, {std::string(kLogDirEnv), dirs.log_dir}};
      std::unique_ptr<ProcessLauncher> launcher = MakePosixProcessLauncher();
      Result<CommandResult> ps = RunCommand(*launcher, {control_program}, env, "ps\n", 5000);
      if (!ps.ok() || ps->exit_code != 0) {
        out << "MPS daemon (nvidia): not answering ("
            << (ps.ok() ? std::string(Trim(ps->output)) : ps.status().message()) << ")\n";
      } else {
        out << "MPS daemon (nvidia): pipe dir " << dirs.pipe_dir << "\n" << ps->output;
        if (!ps->output.empty() && ps->output.back() != '\n') out << "\n";
      }
    } else {
      out << "MPS daemon: not running (pipe dir " << dirs.pipe_dir << " holds no daemon)\n";
    }
  }
  out << memory_line;
  return out.str();
}

}  // namespace dfw::device
