// `dfworker report JOB_DIR [--out FILE.html]`: the run's HTML report (dfw/report/job_report.h).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "commands.h"
#include "dfw/common/exit_code.h"
#include "dfw/job/job_dir.h"
#include "dfw/report/job_report.h"
#include "dfw/report/tenants_report.h"

namespace dfw::cli {
namespace {

struct ReportFlags {
  std::string job_dir;
  std::string out;  // "" = <job dir>/report.html
};

int ReportOne(const ReportFlags& flags);
int ReportTenants(const ReportFlags& flags);

// A pipeline with a Combine ran as fused stages, one job dir each under the root: one page per stage.
int Report(const ReportFlags& flags) {
  if (report::IsTenantsJobDir(flags.job_dir)) return ReportTenants(flags);
  if (::access((flags.job_dir + "/stages.json").c_str(), F_OK) != 0) return ReportOne(flags);
  if (!flags.out.empty()) {
    std::cerr << "dfworker report: error: " << flags.job_dir
              << " ran as fused stages (one job dir each); --out names one page: give a stage's dir ("
              << flags.job_dir << "/stage-0, ...) or leave --out out\n";
    return kInvalid;
  }
  int code = 0, stages = 0;
  for (int k = 0; ::access((flags.job_dir + "/stage-" + std::to_string(k) + "/job.json").c_str(), F_OK) == 0; ++k, ++stages) {
    ReportFlags stage = flags;
    stage.job_dir = flags.job_dir + "/stage-" + std::to_string(k);
    code = std::max(code, ReportOne(stage));
  }
  if (stages == 0) {
    std::cerr << "dfworker report: error: " << flags.job_dir << " has stages.json but no stage job dir yet\n";
    return kInvalid;
  }
  return code;
}

int ReportOne(const ReportFlags& flags) {
  auto data = report::LoadJobReport(flags.job_dir);
  if (!data.ok()) {
    std::cerr << "dfworker report: error: " << data.status().message() << "\n";
    return kInvalid;
  }
  const std::string out = flags.out.empty() ? flags.job_dir + "/report.html" : flags.out;
  Status s = WriteFileAtomically(out, report::RenderJobReportHtml(*data), /*sync=*/false, kOutputFileMode);
  if (!s.ok()) {
    std::cerr << "dfworker report: error: writing " << out << ": " << s.message() << "\n";
    return kInvalid;
  }
  std::cout << out << "\n";
  return 0;
}

// A tenants run: its own page, plus each tenant's page in its job dir (linked from it).
int ReportTenants(const ReportFlags& flags) {
  auto page = report::RenderTenantsReportHtml(flags.job_dir);
  if (!page.ok()) {
    std::cerr << "dfworker report: error: " << page.status().message() << "\n";
    return kInvalid;
  }
  int code = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(flags.job_dir + "/tenants", ec)) {
    if (!e.is_directory()) continue;
    ReportFlags tenant;
    tenant.job_dir = e.path().string();
    code = std::max(code, Report(tenant));  // a tenant's own run (stages included)
  }
  const std::string out = flags.out.empty() ? flags.job_dir + "/report.html" : flags.out;
  Status s = WriteFileAtomically(out, *page, /*sync=*/false, kOutputFileMode);
  if (!s.ok()) {
    std::cerr << "dfworker report: error: writing " << out << ": " << s.message() << "\n";
    return kInvalid;
  }
  std::cout << out << "\n";
  return code;
}

}  // namespace

void AddReportCommand(CLI::App& app, CliContext& context) {
  auto flags = std::make_shared<ReportFlags>();
  CLI::App* report = app.add_subcommand("report", "Write one self-contained HTML page (inline SVG) about a job dir's run");
  report->add_option("job_dir", flags->job_dir, "The job dir (printed by `dfworker run`)")->required();
  report->add_option("--out", flags->out, "Where the page goes (default: JOB_DIR/report.html)");
  report->callback([flags, &context] { context.exit_code = Report(*flags); });
}

}  // namespace dfw::cli
