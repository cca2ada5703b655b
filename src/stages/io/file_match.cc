#include "file_match.h"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>

namespace dfw::stages_io {

Result<std::vector<MatchedFile>> MatchFiles(const std::string& pattern) {
  glob_t g{};
  // GLOB_PERIOD: Beam matches dot files with '*'. No GLOB_ERR: an unreadable folder is no match.
  const int rc = ::glob(pattern.c_str(), GLOB_PERIOD, nullptr, &g);
  std::vector<std::string> paths;
  if (rc == 0) {
    for (std::size_t i = 0; i < g.gl_pathc; ++i) paths.emplace_back(g.gl_pathv[i]);
  }
  globfree(&g);
  if (rc != 0 && rc != GLOB_NOMATCH) {
    return IoError("cannot expand pattern '" + pattern + "' (glob error " + std::to_string(rc) + ")");
  }
  std::sort(paths.begin(), paths.end());
  std::vector<MatchedFile> files;
  for (std::string& p : paths) {
    struct stat st {};
    // A file that vanished between glob and stat is simply not matched (Beam skips it too).
    if (::stat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    MatchedFile f;
    f.path = std::move(p);
    f.size_in_bytes = static_cast<int64_t>(st.st_size);
    f.last_updated_in_seconds = static_cast<double>(st.st_mtim.tv_sec) + static_cast<double>(st.st_mtim.tv_nsec) * 1e-9;
    files.push_back(std::move(f));
  }
  return files;
}

bool HasWildcard(const std::string& pattern) { return pattern.find_first_of("*?[") != std::string::npos; }

}  // namespace dfw::stages_io

namespace dfw::stages_io {

Result<std::vector<SourceSplit>> WholeFileSplits(const StageConfig& c, const std::string& pattern) {
  ASSIGN_OR_RETURN(std::vector<MatchedFile> files, MatchFiles(pattern));
  if (files.empty()) return NotFound(c.Where() + ": path '" + pattern + "' matches no files");
  std::vector<SourceSplit> splits;
  for (const MatchedFile& f : files) {
    if (f.size_in_bytes == 0) continue;
    splits.push_back(SourceSplit{f.path, 0, f.size_in_bytes, 1});
  }
  return splits;
}

}  // namespace dfw::stages_io
