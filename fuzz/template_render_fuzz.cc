// Parses arbitrary bytes as a Jinja template and renders it with fixed variables and two in-memory
// files to include, import or extend (one of them the input itself). Any outcome but a crash, a
// hang or a sanitizer report is fine; the limits are small so that loops and self-includes end fast.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "dfw/template/parser.h"
#include "dfw/template/render.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string src(reinterpret_cast<const char*>(data), size);
  (void)dfw::tmpl::ParseTemplate(src, "fuzz.yaml");
  (void)dfw::tmpl::ParseTemplate(src, "fuzz.yaml", dfw::tmpl::LexOptions{true, true});
  static const dfw::tmpl::Value vars = dfw::tmpl::Value::FromJson(nlohmann::json::parse(
      R"({"K": 3, "s": "Hello {{x}}", "xs": [1, "a", 2.5, null, true], "d": {"a": {"b": [1, 2]}, "n": -1}})"));
  dfw::tmpl::RenderOptions options;
  options.limits.max_include_depth = 4;
  options.limits.max_call_depth = 8;
  options.limits.max_loop_iterations = 2000;
  options.limits.max_output_bytes = 1 << 16;
  // The first byte's low bits turn on jinja2's trim_blocks / lstrip_blocks (chat templates use both).
  options.whitespace.trim_blocks = size > 0 && (data[0] & 1) != 0;
  options.whitespace.lstrip_blocks = size > 0 && (data[0] & 2) != 0;
  options.loader = [&src](const std::string& path) -> dfw::Result<std::string> {
    if (path == "self.yaml") return src;
    if (path == "m.yaml") return std::string("{% macro f(a, b=2) %}[{{ a }}{{ b }}]{% endmacro %}{% block x %}X{% endblock %}");
    return dfw::NotFound(path);
  };
  (void)dfw::tmpl::RenderTemplate(src, "fuzz.yaml", vars, options);
  return 0;
}
