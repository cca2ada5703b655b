#include "dfw/common/logging.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

namespace dfw {
namespace logging_test {

// Points fd 2 at one end of a SOCK_SEQPACKET pair while it lives: every write(2) to stderr is one
// packet, so a test sees how many writes a line took, not only the bytes.
class StderrPackets {
 public:
  StderrPackets() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fds), 0);
    reader_ = fds[0];
    writer_ = fds[1];
    std::fflush(stderr);
    saved_ = ::dup(STDERR_FILENO);
    ::dup2(writer_, STDERR_FILENO);
  }
  ~StderrPackets() {
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
    ::close(writer_);
    ::close(reader_);
  }
  // The packets written so far, each as one string.
  std::vector<std::string> Take() {
    std::vector<std::string> packets;
    std::vector<char> buf(1 << 20);
    for (;;) {
      const ssize_t n = ::recv(reader_, buf.data(), buf.size(), MSG_DONTWAIT);
      if (n < 0) break;
      packets.emplace_back(buf.data(), static_cast<std::size_t>(n));
    }
    return packets;
  }

 private:
  int reader_ = -1, writer_ = -1, saved_ = -1;
};

TEST(ReportLine, WritesThePrefixedLineInOneWrite) {
  StderrPackets err;
  ReportLine("tenant '{}': {} ({} stopped)", "classify", "finished", 2);
  const std::string long_path(10000, 'p');
  ReportLine("job dir {}", long_path);
  EXPECT_EQ(err.Take(), (std::vector<std::string>{"[dfworker] tenant 'classify': finished (2 stopped)\n",
                                                  "[dfworker] job dir " + long_path + "\n"}));
}

TEST(ReportLineAs, NamesTheProcessInThePrefix) {
  StderrPackets err;
  ReportLineAs("sdk-3", "bundle '{}' not committed: {}", "b-7", "stale");
  ReportLineAs("", "error: {}", "model_host --name '' must be non-empty without spaces");
  EXPECT_EQ(err.Take(), (std::vector<std::string>{
                            "[dfworker sdk-3] bundle 'b-7' not committed: stale\n",
                            "[dfworker ] error: model_host --name '' must be non-empty without spaces\n"}));
}

TEST(WriteStderr, WritesTheTextAsItIsInOneWrite) {
  StderrPackets err;
  const std::string table = "\n" + FormatReportLine("SIGINT: no new bundles") + "stage  records\nread   12\n";
  WriteStderr(table);
  PrintRunStopped("tenant(s) 'a' failed");
  EXPECT_EQ(err.Take(), (std::vector<std::string>{"\n[dfworker] SIGINT: no new bundles\nstage  records\nread   12\n",
                                                  "run stopped: tenant(s) 'a' failed\n"}));
}

// The lines were printf's before; a figure a script reads ("first bundle committed 12.3 ms")
// keeps its digits: fmt's fixed precision rounds the exact binary value as printf does.
TEST(FormatReportLine, FixedPrecisionMatchesPrintf) {
  for (double v : {0.05, 0.25, 1.25, 2.5, 1e6 / 3, -0.0, 0.0, 1e300, -7.45, 123456789.95}) {
    char expected[2048];  // 1e300 prints 301 digits, twice
    std::snprintf(expected, sizeof expected, "[dfworker] at %.1f s, %.3f\n", v, v);
    EXPECT_EQ(FormatReportLine("at {:.1f} s, {:.3f}", v, v), expected) << v;
  }
}

TEST(FormatReportLine, PercentSignsAreText) {
  EXPECT_EQ(FormatReportLine("over 90% of its budget {}", "1.0 GiB"), "[dfworker] over 90% of its budget 1.0 GiB\n");
}

}  // namespace logging_test
}  // namespace dfw
