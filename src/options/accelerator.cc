// The worker_accelerator grammar. Any order of sub-fields is accepted; a duplicate is an error
// (reference §3: order and duplicates are undocumented, so we refuse the ambiguous case).
#include "dfw/options/accelerator.h"

#include <cmath>

#include "dfw/common/strings.h"

namespace dfw {
namespace {

// "latest" (seen in public launch lines and cited as documented) asks for the latest driver, like
// "version=latest"; "5xx" pins the 5xx branch (Beam's vLLM example).
constexpr const char* kDriverArgs[] = {"5xx", "latest", "version=latest", "version=default"};

// Values of provisioning_model: only FLEX_START is documented (https://cloud.google.com/dataflow/docs/gpu/use-gpus,
// "Configure a provisioning model"; release note 2025-09-24: "available in Preview and is for batch
// pipelines only"). Compute Engine's other models (STANDARD, SPOT) are not documented for Dataflow.
constexpr const char* kProvisioningModels[] = {"FLEX_START"};

struct Item {
  std::string_view text;  // e.g. "count:2"
  std::size_t offset;     // inside origin.text
};

class AcceleratorParser {
 public:
  AcceleratorParser(AcceleratorForm form, const Origin& origin, std::vector<Diagnostic>& out)
      : out_(out) {
    spec_.form = form;
    spec_.origin = origin;
  }

  AcceleratorSpec Parse(std::string_view value, std::size_t value_offset) {
    std::size_t start = 0;
    while (start <= value.size()) {
      std::size_t end = value.find(';', start);
      if (end == std::string_view::npos) end = value.size();
      Item item{value.substr(start, end - start), value_offset + start};
      if (item.text.empty()) {
        Error(item, 1, "empty sub-field in '" + std::string(value) + "'",
              "separate sub-fields with exactly one ';' and do not end the value with ';'");
      } else {
        ParseItem(item);
      }
      start = end + 1;
    }
    if (!spec_.type_field) {
      Error({value, value_offset}, value.size(), "'" + std::string(value) + "' has no type:<gpu> sub-field",
            "add the GPU type, e.g. type:nvidia-l4");
    }
    if (!spec_.count_field) {
      Error({value, value_offset}, value.size(), "'" + std::string(value) + "' has no count:<n> sub-field",
            "add the number of GPUs per worker, e.g. count:1");
    }
    return std::move(spec_);
  }

 private:
  void ParseItem(const Item& item) {
    std::size_t colon = item.text.find(':');
    std::string_view key = item.text.substr(0, colon);
    std::string_view arg = colon == std::string_view::npos ? std::string_view() : item.text.substr(colon + 1);
    bool has_arg = colon != std::string_view::npos;
    std::size_t arg_offset = item.offset + (has_arg ? colon + 1 : item.text.size());
    if (key == "type") {
      if (!Claim(spec_.type_field, item)) return;
      if (arg.empty()) return Error({arg, arg_offset}, 0, "type: needs a GPU type", "e.g. type:nvidia-l4");
      spec_.gpu_type = std::string(arg);
    } else if (key == "count") {
      if (!Claim(spec_.count_field, item)) return;
      auto n = ParseInt64(arg);
      if (n && *n == 0) {
        return Error({arg, arg_offset}, arg.size(), "count:0 attaches no GPU",
                     "count is the number of GPUs attached to each worker, at least 1 (e.g. count:1); drop "
                     "worker_accelerator for a worker without a GPU",
                     "gpu-count-invalid");
      }
      if (!n || *n < 0 || *n > 1024) {
        return Error({arg, arg_offset}, arg.size(),
                     "count must be a positive whole number, got '" + std::string(arg) + "'",
                     "count is the number of GPUs attached to each worker, e.g. count:1");
      }
      spec_.count = static_cast<int>(*n);
    } else if (key == "install-nvidia-driver") {
      if (!Claim(spec_.driver_field, item)) return;
      spec_.install_driver = true;
      if (!has_arg) return;
      for (const char* allowed : kDriverArgs) {
        if (arg == allowed) {
          spec_.driver_arg = std::string(arg);
          return;
        }
      }
      Error({arg, arg_offset}, arg.size(), "unknown driver argument '" + std::string(arg) + "'",
            "use install-nvidia-driver, install-nvidia-driver:5xx, :latest, :version=latest or :version=default");
    } else if (key == "use_nvidia_mps") {
      if (!Claim(spec_.mps_field, item)) return;
      if (has_arg) {
        return Error(item, item.text.size(), "use_nvidia_mps takes no value, got '" + std::string(item.text) + "'",
                     "write use_nvidia_mps on its own");
      }
      spec_.use_mps = true;
    } else if (key == "provisioning_model") {
      if (!Claim(spec_.provisioning_field, item)) return;
      for (const char* allowed : kProvisioningModels) {
        if (arg == allowed) {
          spec_.provisioning_model = std::string(arg);
          return;
        }
      }
      Error({arg, arg_offset}, arg.size(),
            "unknown provisioning model '" + std::string(arg) + "'" +
                DidYouMeanSuffix(std::string(arg), {kProvisioningModels[0]}),
            "Dataflow documents provisioning_model:FLEX_START (GPU flex-start, Preview, batch only); leave the "
            "sub-field out for standard provisioning");
    } else if (key == "machine_type" && spec_.form == AcceleratorForm::kResourceHint) {
      if (!Claim(spec_.machine_field, item)) return;
      if (arg.empty()) return Error(item, item.text.size(), "machine_type: needs a machine type", "");
      spec_.machine_type = std::string(arg);
    } else {
      std::vector<std::string> known = {"type", "count", "install-nvidia-driver", "use_nvidia_mps", "provisioning_model"};
      if (spec_.form == AcceleratorForm::kResourceHint) known.push_back("machine_type");
      Error(item, item.text.size(),
            "unknown accelerator sub-field '" + std::string(item.text) + "'" + DidYouMeanSuffix(key, known),
            "allowed: type:<gpu>, count:<n>, install-nvidia-driver[:5xx], use_nvidia_mps, provisioning_model:FLEX_START" +
                std::string(spec_.form == AcceleratorForm::kResourceHint ? ", machine_type:<type>" : ""));
    }
  }

  // Records the first occurrence of a sub-field; a second one is a duplicate.
  bool Claim(std::optional<SubField>& slot, const Item& item) {
    if (slot) {
      Error(item, item.text.size(),
            "duplicate accelerator sub-field '" + std::string(item.text) + "' (already given as '" + slot->text + "')",
            "give each sub-field once");
      return false;
    }
    slot = SubField{std::string(item.text), item.offset};
    return true;
  }

  void Error(const Item& at, std::size_t length, std::string message, std::string help,
             const char* code = "option-syntax") {
    out_.push_back(MakeDiagnostic(Severity::kError, code,
                                  std::string(AcceleratorFormName(spec_.form)) + " accelerator: " + message,
                                  std::move(help), spec_.origin, at.offset, length));
  }

  AcceleratorSpec spec_;
  std::vector<Diagnostic>& out_;
};

}  // namespace

AcceleratorSpec ParseAcceleratorSpec(std::string_view value, std::size_t value_offset, AcceleratorForm form,
                                     const Origin& origin, std::vector<Diagnostic>& diagnostics) {
  return AcceleratorParser(form, origin, diagnostics).Parse(value, value_offset);
}

std::optional<uint64_t> ParseByteSize(std::string_view text) {
  text = Trim(text);
  std::size_t i = 0;
  while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.')) ++i;
  auto number = ParseDouble(text.substr(0, i));
  if (!number || *number < 0) return std::nullopt;
  std::string_view unit = Trim(text.substr(i));
  struct Unit { const char* name; double factor; };
  static constexpr Unit kUnits[] = {
      {"", 1}, {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
      {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  for (const Unit& u : kUnits) {
    if (unit == u.name) {
      double bytes = *number * u.factor;
      if (!std::isfinite(bytes) || bytes > 1.8e19) return std::nullopt;
      return static_cast<uint64_t>(bytes);
    }
  }
  return std::nullopt;
}

}  // namespace dfw
