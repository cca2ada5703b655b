// `dfworker report JOB_DIR [--out FILE.html]`: the run's HTML report (dfw/report/job_report.h).
#include <iostream>
#include <memory>

#include "commands.h"
#include "dfw/common/exit_code.h"
#include "dfw/job/job_dir.h"
#include "dfw/report/job_report.h"

namespace dfw::cli {
namespace {

struct ReportFlags {
  std::string job_dir;
  std::string out;  // "" = <job dir>/report.html
};

int Report(const ReportFlags& flags) {
  auto data = report::LoadJobReport(flags.job_dir);
  if (!data.ok()) {
    std::cerr << "dfworker report: error: " << data.status().message() << "\n";
    return static_cast<int>(ExitCode::kInvalidInvocation);
  }
  const std::string out = flags.out.empty() ? flags.job_dir + "/report.html" : flags.out;
  Status s = WriteFileAtomically(out, report::RenderJobReportHtml(*data), /*sync=*/false);
  if (!s.ok()) {
    std::cerr << "dfworker report: error: writing " << out << ": " << s.message() << "\n";
    return static_cast<int>(ExitCode::kInvalidInvocation);
  }
  std::cout << out << "\n";
  return 0;
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
