// ReadFromCsv: RFC 4180 CSV (quoted fields, "" escapes, newlines inside quotes) with a header row.
// Values are typed the way pandas reads them: integers, floats, empty field = null, else strings.
#include <algorithm>
#include <filesystem>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>

#include "dfw/common/strings.h"
#include "dfw/stages/config.h"
#include "dfw/stages/stage.h"
#include "file_source.h"

namespace dfw {
namespace {

struct ReadCsvOptions {
  std::string path;      // glob of CSV files; each file starts with a header row
  char delimiter = ',';  // field separator (one character)
  char comment = 0;      // lines starting with this character are skipped; 0 = none
  std::string filename_column;  // Beam's filename_column: a last field holding the row's file path; "" = none
};

struct CsvField {
  std::string text;
  bool quoted = false;
};

// Parses one record starting at `pos`; advances `pos` past its terminator and `line` by the
// newlines consumed. Returns an error message (empty when fine).
std::string ParseRecord(std::string_view data, std::size_t& pos, char delim, std::vector<CsvField>& fields,
                        int64_t& line) {
  fields.clear();
  CsvField cur;
  bool in_quotes = false, after_quote = false;
  while (pos < data.size()) {
    char ch = data[pos++];
    if (in_quotes) {
      if (ch == '"') {
        if (pos < data.size() && data[pos] == '"') {
          cur.text.push_back('"');
          ++pos;
        } else {
          in_quotes = false;
          after_quote = true;
        }
      } else {
        if (ch == '\n') ++line;
        cur.text.push_back(ch);
      }
      continue;
    }
    if (ch == delim) {
      fields.push_back(std::move(cur));
      cur = CsvField{};
      after_quote = false;
    } else if (ch == '\n' || ch == '\r') {
      if (ch == '\r' && pos < data.size() && data[pos] == '\n') ++pos;
      ++line;
      fields.push_back(std::move(cur));
      return "";
    } else if (ch == '"' && cur.text.empty() && !cur.quoted) {
      in_quotes = true;
      cur.quoted = true;
    } else if (after_quote) {
      return fmt::format("unexpected character '{}' after a closing quote", ch);
    } else {
      cur.text.push_back(ch);
    }
  }
  if (in_quotes) return "unterminated quoted field";
  fields.push_back(std::move(cur));
  return "";
}

std::string TrimNewline(std::string_view raw) {
  while (!raw.empty() && (raw.back() == '\n' || raw.back() == '\r')) raw.remove_suffix(1);
  return std::string(raw);
}

Value TypedValue(const CsvField& f) {
  if (f.text.empty()) return f.quoted ? Value::String("") : Value();
  if (auto i = ParseInt64(f.text)) return Value::Int(*i);
  if (auto d = ParseDouble(f.text)) return Value::Float(*d);
  return Value::String(f.text);
}

class CsvReader final : public SplitReader {
 public:
  // `range_begin`: where the bundle's range starts (before the header the first split skips);
  // progress is reported in bytes of that range.
  CsvReader(const ReadCsvOptions& o, SourceSplit split, std::string data, std::vector<std::string> header, int64_t range_begin)
      : options_(o), split_(std::move(split)), data_(std::move(data)), header_(std::move(header)),
        line_(split_.first_line), skipped_(split_.begin - range_begin) {}

  std::optional<SplitProgress> Progress() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return SplitProgress{skipped_ + static_cast<int64_t>(pos_), skipped_ + static_cast<int64_t>(data_.size())};
  }

  std::optional<SourceSplit> TrySplit(double fraction) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto cut = stages_internal::FindLineCut(data_, pos_, fraction, /*csv_quotes=*/true);
    if (!cut) return std::nullopt;
    SourceSplit residual{split_.path, split_.begin + static_cast<int64_t>(cut->at), split_.end, line_ + cut->newlines};
    data_.resize(cut->at);
    split_.end = residual.begin;
    return residual;
  }

  Result<bool> Next(StageOutput& out, std::size_t max_rows) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<CsvField> fields;
    for (std::size_t n = 0; n < max_rows && pos_ < data_.size();) {
      std::size_t start = pos_;
      int64_t start_line = line_;
      if (options_.comment && data_[pos_] == options_.comment) {
        SkipLine();
        continue;
      }
      if (data_[pos_] == '\n' || data_[pos_] == '\r') {  // blank line
        SkipLine();
        continue;
      }
      std::string err = ParseRecord(data_, pos_, options_.delimiter, fields, line_);
      std::string_view raw(data_.data() + start, pos_ - start);
      ++n;
      if (err.empty() && !stages_internal::IsValidUtf8(raw)) err = "not valid UTF-8";
      if (err.empty() && fields.size() != header_.size()) {
        err = fmt::format("{} fields, but the header has {}", fields.size(), header_.size());
      }
      if (!err.empty()) {
        RETURN_IF_ERROR(out.FailRaw(TrimNewline(raw),
                                    fmt::format("line {} of '{}': {}", start_line, split_.path, err)));
        continue;
      }
      Row row;
      row.Reserve(fields.size());
      for (std::size_t i = 0; i < fields.size(); ++i) row.Append(header_[i], TypedValue(fields[i]));
      if (!options_.filename_column.empty()) row.Set(options_.filename_column, Value::String(split_.path));
      out.Emit(std::move(row));
    }
    return pos_ < data_.size();
  }

 private:
  void SkipLine() {
    while (pos_ < data_.size() && data_[pos_] != '\n') ++pos_;
    if (pos_ < data_.size()) ++pos_;
    ++line_;
  }

  ReadCsvOptions options_;
  SourceSplit split_;
  std::string data_;
  std::vector<std::string> header_;
  int64_t line_;  // of the byte at pos_
  std::size_t pos_ = 0;
  int64_t skipped_;  // header bytes before split_.begin in the bundle's range
  mutable std::mutex mu_;  // Next against Progress/TrySplit (another thread)
};

class ReadCsv final : public Stage {
 public:
  ReadCsv(StageConfig config, ReadCsvOptions options) : config_(std::move(config)), options_(options) {}

  Status Process(RowBatch&, StageOutput&) override { return Internal("ReadFromCsv has no input"); }

  Result<std::vector<SourceSplit>> Split(int64_t target_bytes) override {
    ASSIGN_OR_RETURN(auto files, stages_internal::ExpandGlob(config_, options_.path));
    ASSIGN_OR_RETURN(std::vector<SourceSplit> splits, stages_internal::SplitFiles(files, target_bytes, /*csv_quotes=*/true));
    // Each file's header, once, while the job is planned: a header every bundle of the file would
    // fail on (a repeated or empty column name) is an error now, not after 4 attempts of each bundle.
    std::string checked;
    for (const SourceSplit& split : splits) {
      if (split.path == checked) continue;
      RETURN_IF_ERROR(ReadHeader(split.path).status());
      checked = split.path;
    }
    return splits;
  }

  Result<std::unique_ptr<SplitReader>> OpenSplit(const SourceSplit& split) override {
    ASSIGN_OR_RETURN(Header header, ReadHeader(split.path));
    SourceSplit body = split;
    if (split.begin == 0) {  // the first split holds the header itself: skip it
      body.begin = std::min<int64_t>(static_cast<int64_t>(header.end), split.end);
      body.first_line = header.next_line;
    }
    ASSIGN_OR_RETURN(std::string data, stages_internal::ReadRange(body, 0));
    auto reader = std::make_unique<CsvReader>(options_, body, std::move(data), std::move(header.names), split.begin);
    return std::unique_ptr<SplitReader>(std::move(reader));
  }

 private:
  struct Header {
    std::vector<std::string> names;
    std::size_t end = 0;  // byte offset just past the header record
    int64_t next_line = 1;  // line number after it
  };

  // The first record of the file that is not a comment or blank line; every split needs it.
  Result<Header> ReadHeader(const std::string& path) {
    constexpr int64_t kMaxHeaderBytes = 1 << 20;
    std::error_code ec;
    auto size = static_cast<int64_t>(std::filesystem::file_size(path, ec));
    if (ec) return IoError(config_.Where() + ": cannot stat '" + path + "': " + ec.message());
    ASSIGN_OR_RETURN(std::string data, stages_internal::ReadRange({path, 0, std::min(size, kMaxHeaderBytes), 1}, 0));
    Header h;
    std::size_t pos = 0;
    int64_t line = 1;
    while (pos < data.size()) {
      char c0 = data[pos];
      if (c0 == '\n' || c0 == '\r' || (options_.comment && c0 == options_.comment)) {
        while (pos < data.size() && data[pos] != '\n') ++pos;
        if (pos < data.size()) ++pos;
        ++line;
        continue;
      }
      std::vector<CsvField> fields;
      int64_t header_line = line;
      std::string err = ParseRecord(data, pos, options_.delimiter, fields, line);
      if (!err.empty()) return DataLoss(fmt::format("{}: header of '{}' (line {}): {}", config_.Where(), path, header_line, err));
      std::unordered_map<std::string, std::size_t> seen;
      for (auto& f : fields) {
        if (f.text.empty()) {
          // A trailing delimiter (`id,`) or `a,,b`: rows would carry a field named "".
          return InvalidArgument(fmt::format("{}: header of '{}' (line {}): column {} has no name; every column needs "
                                             "one (a trailing '{}' at the end of the header line?)",
                                             config_.Where(), path, header_line, h.names.size() + 1, options_.delimiter));
        }
        auto [it, fresh] = seen.emplace(f.text, h.names.size() + 1);
        if (!fresh) {
          // Rows would carry two fields of one name and every later lookup would see only the first.
          return InvalidArgument(fmt::format("{}: header of '{}' (line {}) repeats column '{}' (columns {} and {}); "
                                             "column names must be unique: rename one in the file",
                                             config_.Where(), path, header_line, f.text, it->second, h.names.size() + 1));
        }
        h.names.push_back(std::move(f.text));
      }
      h.end = pos;
      h.next_line = line;
      return h;
    }
    return DataLoss(config_.Where() + ": '" + path + "' has no header row");
  }

  StageConfig config_;
  ReadCsvOptions options_;
};

Result<char> OneChar(const StageConfig& c, const std::string& key, std::optional<std::string> fallback) {
  ASSIGN_OR_RETURN(std::string s, ConfigString(c, key, fallback));
  if (s.size() == 1 && s[0] != '"' && s[0] != '\n' && s[0] != '\r') return s[0];
  if (s.empty() && key == "comment") return char(0);
  return ConfigKeyError(c, key, "must be a single character other than '\"' or a newline, got '" + s + "'");
}

Result<std::unique_ptr<Stage>> MakeReadCsv(const StageConfig& config) {
  ReadCsvOptions o;
  ASSIGN_OR_RETURN(o.path, ConfigString(config, "path"));
  RETURN_IF_ERROR(CheckLocalPath(config, "path", o.path));
  o.path = ResolveConfigPath(config, o.path);
  ASSIGN_OR_RETURN(o.delimiter, OneChar(config, "delimiter", std::string(",")));
  ASSIGN_OR_RETURN(o.comment, OneChar(config, "comment", std::string("")));
  if (o.comment && o.comment == o.delimiter) return ConfigKeyError(config, "comment", "must differ from the delimiter");
  ASSIGN_OR_RETURN(o.filename_column, ConfigString(config, "filename_column", std::string()));
  return std::unique_ptr<Stage>(new ReadCsv(config, o));
}

}  // namespace

void RegisterReadCsv(StageRegistry& r) {
  (void)r.Register({"ReadFromCsv", MakeReadCsv, {"path", "delimiter", "comment", "filename_column"}, {"path"},
                    StageTraits{.is_source = true, .can_fail_per_record = true}, CheckByMaking(MakeReadCsv)});
}

}  // namespace dfw
