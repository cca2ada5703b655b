// The real run of admitted tenants (dfw/tenant_runs/tenants_run.h): the parent job dir, the shared ledger and
// MPS daemon, one `dfworker run` per tenant, the MPS fault domain, the end-of-run summary.
#include "dfw/tenant_runs/tenants_run.h"
#include "tenant_runs/tenants_borrow.h"
#include "tenant_runs/tenants_memory.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "dfw/common/logging.h"
#include "dfw/common/exit_code.h"
#include "dfw/common/process.h"
#include "dfw/common/strings.h"
#include "dfw/common/test_hooks.h"
#include "dfw/device/memory_ledger.h"
#include "dfw/device/mps_client.h"
#include "dfw/device/mps_controller.h"
#include "dfw/job/job_dir.h"
#include "dfw/launcher/launcher.h"
#include "dfw/tenant_runs/tenant_group.h"
#include "dfw/tenants/admission.h"

namespace dfw {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string TenantsJsonPath(const std::string& root) { return root + "/tenants.json"; }
std::string TenantJobDir(const std::string& root, const std::string& name) { return root + "/tenants/" + name; }

// The admitted limits, for the tenants' own runs (LoadTenantDevice) and for people.
std::string TenantsJson(const TenantsFlags& flags, const Admission& a) {
  json j = {{"version", 1}, {"tenants_file", flags.tenants_path}, {"admission", json::parse(RenderAdmissionJson(a))}};
  return j.dump(2) + "\n";
}

// Creates (or, with --resume, checks) the tenants' parent job dir and locks it for this run.
Result<std::string> PrepareRoot(const TenantsFlags& flags, int& lock_fd) {
  std::string root = flags.resume.empty() ? (flags.job_dir.empty() ? std::string(kDefaultJobsDir) + "/" + NewJobId() : flags.job_dir)
                                          : flags.resume;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  std::error_code ec;
  if (flags.resume.empty()) {
    if (fs::path parent = fs::path(root).parent_path(); !parent.empty()) fs::create_directories(parent, ec);
    if (::mkdir(root.c_str(), 0700) != 0) {
      if (errno == EEXIST) return InvalidArgument("job dir '" + root + "' already exists; finish it with --resume " + root);
      return ErrnoError("create job dir '" + root + "'", errno);
    }
    if (::mkdir((root + "/tenants").c_str(), 0700) != 0) return ErrnoError("create '" + root + "/tenants'", errno);
  } else if (!fs::exists(TenantsJsonPath(root), ec)) {
    return InvalidArgument("'" + root + "' is not the job dir of a tenants run (no tenants.json)");
  }
  lock_fd = ::open((root + "/tenants.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd < 0) return ErrnoError("open '" + root + "/tenants.lock'", errno);
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    return FailedPrecondition("another dfworker run holds the job dir '" + root + "'");
  }
  return root;
}

// DFW_TEST_TENANT_LEDGER_BUDGET=name=bytes lowers one tenant's budget in the ledger below what
// admission gave it: a tenant whose real use outgrows its plan, at an exact size.
std::optional<std::pair<std::string, uint64_t>> LedgerBudgetOverride() {
  std::optional<std::string> hook = test_hooks::Get("TENANT_LEDGER_BUDGET");
  if (!hook) return std::nullopt;
  std::size_t eq = hook->find('=');
  std::optional<int64_t> bytes = eq == std::string::npos ? std::nullopt : ParseInt64(hook->substr(eq + 1));
  if (!bytes || *bytes <= 0) return std::nullopt;
  return std::pair{hook->substr(0, eq), static_cast<uint64_t>(*bytes)};
}

// Per-tenant peaks (the ledger keeps them after the processes are gone); kNotFound on a real GPU.
Result<device::LedgerSnapshot> LedgerSnapshotAt(const std::string& path) {
  if (path.empty()) return NotFound("no GPU-memory ledger (a real GPU)");
  ASSIGN_OR_RETURN(device::MemoryLedger ledger, device::MemoryLedger::Open(path));
  return ledger.Snapshot();
}

// The tenant's own metrics.json gets its share of the run under "tenant" (budget, GPU-memory peak
// and timeline, processes guaranteed and borrowed), so a tenant's job dir tells its whole story.
// Nothing to do for a tenant that wrote no metrics.json (it failed before finalize).
void AddTenantToItsMetrics(const std::string& job_dir, const std::string& name, const json& tenant) {
  const std::string path = job_dir + "/metrics.json";
  if (::access(path.c_str(), F_OK) != 0) return;
  Result<std::string> text = ReadWholeFile(path, std::size_t{256} << 20);
  json metrics = text.ok() ? json::parse(*text, nullptr, false) : json();
  if (!metrics.is_object()) {
    ReportLine("warning: tenant '{}': {} is not a JSON object; its tenant figures are in tenants_report.json only", name, path);
    return;
  }
  json section = {{"name", name}};
  for (const char* key : {"gpu_memory_budget_bytes", "gpu_memory_peak_bytes", "gpu_memory_sampled_peak_bytes",
                          "gpu_memory_timeline", "gpu_memory_process_peaks", "processes_guaranteed", "processes_started",
                          "processes_borrowed"}) {
    if (tenant.contains(key)) section[key] = tenant[key];
  }
  metrics["tenant"] = std::move(section);
  if (Status s = WriteFileAtomically(path, metrics.dump(2) + "\n"); !s.ok()) {
    ReportLine("warning: {}", s.message());
  }
}

}  // namespace

int RunAdmittedTenants(const TenantsFlags& flags, const TenantsFile& file, const Admission& admission,
               const std::vector<LoadedTenant>& tenants, const std::vector<std::string>& args) {
  int lock_fd = -1;
  Result<std::string> prepared = PrepareRoot(flags, lock_fd);
  // The lock goes with the process; closed here on every return so that nothing else inherits it.
  std::unique_ptr<int, void (*)(int*)> lock(&lock_fd, [](int* fd) {
    if (*fd >= 0) ::close(*fd);
  });
  if (!prepared.ok()) {
    PrintRunStopped(prepared.status().message());
    return static_cast<int>(ExitCodeFor(prepared.status()));
  }
  const std::string root = *prepared;
  auto stop = [&](const std::string& why, ExitCode code) {
    PrintRunStopped(why);
    return static_cast<int>(code);
  };
  ReportLine("tenants job dir: {} ({} tenants)", root, tenants.size());
  if (Status s = WriteFileAtomically(TenantsJsonPath(root), TenantsJson(flags, admission)); !s.ok()) {
    return stop(s.message(), ExitCode::kRunFailed);
  }
  const std::string self = SelfExecutable();
  std::string ledger_path;
  if (admission.emulated) {
    ledger_path = device::LedgerPathForJob(root);
    Result<device::MemoryLedger> ledger =
        device::MemoryLedger::Create(ledger_path, admission.gpu_type + " (emulated)", admission.capacity_bytes);
    if (!ledger.ok()) return stop("create the GPU-memory ledger: " + ledger.status().message(), ExitCode::kRunFailed);
    const auto hook = LedgerBudgetOverride();
    for (const TenantLimits& l : admission.tenants) {
      const uint64_t budget = hook && hook->first == l.name ? hook->second : l.budget_bytes;
      if (Status s = ledger->SetTenantBudget(l.name, budget); !s.ok()) return stop(s.message(), ExitCode::kRunFailed);
    }
  }
  // One daemon for every tenant (MPS is one server per GPU); stopped on every return below.
  device::MpsDaemonOptions mps_options;
  mps_options.dirs = device::MpsDirsForJob(root);
  if (admission.client_limit > 0) mps_options.max_clients_per_device = admission.client_limit;
  mps_options.daemon_command = {self, "mps", "daemon"};
  Result<std::unique_ptr<device::MpsController>> mps =
      device::MakeMpsController(admission.emulated ? "emulated" : "auto", mps_options);
  if (!mps.ok()) return stop(mps.status().message(), ExitCode::kRunFailed);
  if (Status s = (*mps)->Start(); !s.ok()) return stop("start the MPS control daemon: " + s.message(), ExitCode::kRunFailed);
  ReportLine("MPS: {} control daemon (pid {}) shared by the tenants, pipe dir {}", (*mps)->kind(),
             static_cast<int>((*mps)->daemon_pid()), mps_options.dirs.pipe_dir);

  // The tenants still to run: each new, or resumed from its manifest, or skipped when finished.
  auto unfinished = [&](bool say) {
    std::vector<TenantProcess> procs;
    for (const LoadedTenant& t : tenants) {
      const std::string dir = TenantJobDir(root, t.spec->name);
      std::error_code ec;
      if (fs::exists(dir + "/FINISHED", ec)) {
        if (say) ReportLine("tenant '{}': already finished", t.spec->name);
        continue;
      }
      const bool resume = fs::exists(dir + "/job.json", ec);
      TenantProcess p;
      p.name = t.spec->name;
      p.spec.argv = {self, "run", t.spec->pipeline, resume ? "--resume" : "--job_dir", dir, "--tenant_of", root,
                     "--tenant", t.spec->name, "--options_from", file.path, "--log_level", flags.log_level,
                     "--report", flags.report, "--accelerator_backend", flags.accelerator_backend};
      if (!flags.catalog_dir.empty()) p.spec.argv.insert(p.spec.argv.end(), {"--catalog_dir", flags.catalog_dir});
      p.spec.argv.insert(p.spec.argv.end(), args.begin(), args.end());
      p.spec.argv.push_back("--sdk_worker_parallelism=" + std::to_string(t.spec->sdk_processes));
      procs.push_back(std::move(p));
    }
    return procs;
  };

  Result<std::unique_ptr<SignalWatcher>> signals = SignalWatcher::Install();
  if (!signals.ok()) return stop(signals.status().message(), ExitCode::kRunFailed);
  std::unique_ptr<ProcessLauncher> launcher = MakePosixProcessLauncher();
  std::map<std::string, TenantExit> ends;  // the last end of each tenant run here
  TenantGroupResult result;
  bool fault_after_resume = false;
  int faults = 0;  // MPS faults drained (at most one is followed by a resume)
  // The CPUs the tenants' processes really run on: the worker's vCPUs, or this host's cores where
  // there are fewer (an emulated worker on a small machine).
  const long host_cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  const int cpus = host_cpus > 0 && (admission.vcpus <= 0 || host_cpus < admission.vcpus) ? static_cast<int>(host_cpus)
                                                                                           : std::max(1, admission.vcpus);
  TenantBorrowing borrowing(admission, root, file.borrowing, cpus);
  // GPU memory per tenant during the run: the ledger when emulated; NVML per-PID is the seam for a GPU.
  std::vector<TenantMemoryMonitor::Budget> budgets;
  for (const TenantLimits& l : admission.tenants) budgets.push_back({l.name, l.budget_bytes});
  Result<std::unique_ptr<GpuMemorySource>> source =
      ledger_path.empty() ? MakeNvmlMemorySource() : MakeLedgerMemorySource(ledger_path);
  if (!source.ok()) ReportLine("note: {}", source.status().message());
  TenantMemoryMonitor memory(source.ok() ? std::move(*source) : nullptr, budgets,
                             source.ok() ? "" : source.status().message());
  TenantGroupHooks hooks;
  hooks.tick = TenantMemoryMonitor::kInterval;
  hooks.on_tick = [&] { memory.Sample(); };
  if (file.borrowing) {
    hooks.on_end = [&](std::size_t i, const std::vector<TenantExit>& exits, bool stopping) {
      borrowing.OnEnd(i, exits, stopping, *launcher);
    };
  } else {
    ReportLine("borrowing: off (the tenants file says borrowing: false)");
  }
  for (int attempt = 0;; ++attempt) {
    // The emulated server reports a fatal fault on a watch socket (the real one: not yet watched).
    int watch = -1;
    if ((*mps)->kind() == "emulated") {
      Result<int> w = device::MpsWatch(mps_options.dirs.pipe_dir);
      if (w.ok()) watch = *w;
      else ReportLine("warning: cannot watch the MPS server for faults: {}", w.status().message());
    }
    std::vector<TenantProcess> starting = unfinished(attempt == 0);
    borrowing.BeforeStart(starting);
    result = RunTenantGroup(starting, *launcher, **signals, watch, hooks);
    if (watch >= 0) ::close(watch);
    for (const TenantExit& e : result.exits) ends[e.name] = e;
    if (!result.faulted || result.signal != 0) break;
    ++faults;
    if (attempt == 1) {
      fault_after_resume = true;
      break;
    }
    // MPS on Volta+: every client of the faulted server must exit; it takes clients again after.
    ReportLine("MPS fault: the server had a fatal GPU error; every tenant was drained ({} stopped)", result.exits.size());
    bool active = false;
    for (int i = 0; i < 3000 && !active; ++i) {  // up to 30 s for the killed clients to be gone
      Result<std::string> ping = device::MpsControlCommand(mps_options.dirs.pipe_dir, "ping");
      active = !ping.ok() || ping->find("state=FAULT") == std::string::npos;
      if (!active) ::usleep(10000);
    }
    if (Status q = (*mps)->Quit(); !q.ok()) ReportLine("warning: stopping the MPS daemon: {}", q.message());
    if (Status s = (*mps)->Start(); !s.ok()) return stop("restart the MPS control daemon after the fault: " + s.message(), ExitCode::kRunFailed);
    ReportLine("MPS server restarted (daemon pid {}); resuming every unfinished tenant from its manifest",
               static_cast<int>((*mps)->daemon_pid()));
  }

  int code = 0;
  json report = {{"tenants", json::object()}, {"borrowing", borrowing.EventsJson()}, {"borrowing_cpus", cpus}};
  WriteStderr(borrowing.Lines());
  Result<device::LedgerSnapshot> snap = LedgerSnapshotAt(ledger_path);
  for (const LoadedTenant& t : tenants) {
    const std::string& name = t.spec->name;
    auto it = ends.find(name);
    std::error_code ec;
    const bool finished = fs::exists(TenantJobDir(root, name) + "/FINISHED", ec);
    std::string how = it == ends.end() ? "finished before this run"
                      : it->second.start_error.empty() ? it->second.exit.Describe()
                                                        : "not started: " + it->second.start_error;
    const bool ok = finished && (it == ends.end() || it->second.exit.success());
    std::string peak;
    json j = {{"job_dir", TenantJobDir(root, name)}, {"ended", how}, {"success", ok}};
    j.update(borrowing.TenantJson(name));
    j.update(memory.TenantJson(name));
    std::string procs;
    if (j.contains("processes_started")) {
      procs = ", " + j["processes_started"].dump() + " SDK processes (" + j["processes_guaranteed"].dump() +
              " guaranteed + " + std::to_string(j["processes_started"].get<int>() - j["processes_guaranteed"].get<int>()) +
              " borrowed)";
    }
    if (snap.ok()) {
      for (const device::LedgerTenant& lt : snap->tenants) {
        if (lt.name != name) continue;
        peak = ", GPU-memory peak " + HumanBytes(lt.peak_bytes) + " of its budget " + HumanBytes(lt.budget_bytes);
        j["gpu_memory_peak_bytes"] = lt.peak_bytes;
        j["gpu_memory_budget_bytes"] = lt.budget_bytes;
        // Said during the run when a sample saw it; the ledger's exact peak also catches a spike between samples.
        if (lt.budget_bytes > 0 && lt.peak_bytes * 10 > lt.budget_bytes * 9 && !memory.warned(name)) {
          ReportLine("warning: tenant '{}' reached {}, over 90% of its GPU-memory budget {}", name, HumanBytes(lt.peak_bytes),
                     HumanBytes(lt.budget_bytes));
        }
      }
    }
    AddTenantToItsMetrics(TenantJobDir(root, name), name, j);
    report["tenants"][name] = j;
    ReportLine("tenant '{}': {}{}{} ({})", name, ok ? "finished" : "FAILED", peak, procs, how);
    if (!ok) {
      const bool invalid = it != ends.end() && it->second.exit.exited && it->second.exit.exit_code == kInvalidInvocationExit;
      code = invalid && code != 1 ? kInvalidInvocationExit : 1;
    }
  }
  report["mps_faults_drained"] = faults;
  report["gpu_memory_sampling"] = memory.SamplingJson();
  {
    TenantMemoryMonitor::Gauge guaranteed{"dfworker_tenant_processes_guaranteed", "guaranteed SDK processes of the tenant", {}};
    TenantMemoryMonitor::Gauge lent{"dfworker_tenant_processes_borrowed", "most process slots lent to the tenant", {}};
    for (const LoadedTenant& t : tenants) {
      const json b = borrowing.TenantJson(t.spec->name);
      guaranteed.by_tenant[t.spec->name] = b.value("processes_guaranteed", 0);
      lent.by_tenant[t.spec->name] = b.value("processes_borrowed", 0);
    }
    if (Status s = WriteFileAtomically(root + "/tenants.prom", memory.Prometheus({guaranteed, lent})); !s.ok()) {
      ReportLine("warning: {}", s.message());
    }
  }
  // Every process of the run has ended: the ledger should hold nothing (dead entries are reclaimed).
  if (snap.ok()) report["gpu_memory_held_at_end_bytes"] = snap->used_bytes;
  if (Status s = WriteFileAtomically(root + "/tenants_report.json", report.dump(2) + "\n"); !s.ok()) {
    ReportLine("warning: {}", s.message());
  }
  if (Status quit = (*mps)->Quit(); !quit.ok()) {
    ReportLine("warning: stopping the MPS daemon: {}", quit.message());
  }
  if (result.signal != 0) {
    return stop("interrupted; finish the tenants with --tenants " + file.path + " --resume " + root,
                result.signal == SIGINT ? ExitCode::kInterrupted : ExitCode::kTerminated);
  }
  if (fault_after_resume) {
    return stop("the MPS server faulted again after the tenants were resumed once; resume with --tenants " + file.path +
                    " --resume " + root,
                ExitCode::kRunFailed);
  }
  if (code == 0) {
    (void)WriteFileAtomically(root + "/FINISHED", "");
    ReportLine("every tenant finished; job dir {}", root);
  } else {
    std::string failed;
    for (const LoadedTenant& t : tenants) {
      if (!report["tenants"][t.spec->name]["success"].get<bool>()) failed += (failed.empty() ? "'" : ", '") + t.spec->name + "'";
    }
    return stop("tenant(s) " + failed + " failed (the others finished); see " + root + "/tenants/<name>/ and resume with --resume " + root,
                static_cast<ExitCode>(code));
  }
  return 0;
}

Result<TenantDevice> LoadTenantDevice(const std::string& root, const std::string& name) {
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(TenantsJsonPath(root)));
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  const std::string where = "'" + TenantsJsonPath(root) + "'";
  if (!j.is_object() || !j.contains("admission") || !j["admission"].is_object()) {
    return InvalidArgument(where + " is not a tenants admission file");
  }
  const json& a = j["admission"];
  for (const json& t : a.value("tenants", json::array())) {
    if (!t.is_object() || t.value("name", "") != name) continue;
    TenantDevice d;
    d.name = name;
    if (a.value("emulated", false)) d.ledger_path = device::LedgerPathForJob(root);
    if (a.value("strategy", json(nullptr)) == "mps") d.mps = device::MpsDirsForJob(root);
    if (uint64_t pinned = t.value("pinned_limit_bytes", uint64_t{0}); pinned > 0) d.limits.pinned_mem_limit_bytes = pinned;
    d.limits.active_thread_percentage = t.value("active_thread_percentage", 100.0);
    d.limits.client_priority = t.value("priority", "normal") == "below_normal" ? 1 : 0;
    return d;
  }
  return NotFound(where + " admits no tenant '" + name + "'");
}

}  // namespace dfw
