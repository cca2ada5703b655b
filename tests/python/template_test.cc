// Jinja2 through the embedded CPython: pipeline files as Beam renders them, chat templates as
// transformers renders them.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "dfw/python/python.h"
#include "test_util.h"

namespace dfw::python_template_test {

using python::RenderChatTemplate;
using python::RenderPipelineTemplate;

std::string Render(const std::string& source, const std::string& vars = "{}", const std::string& path = "p.yaml") {
  Result<std::string> r = RenderPipelineTemplate(path, source, vars);
  return r.ok() ? *r : "error: " + r.status().message();
}

TEST(PythonTemplate, PipelineFilesRenderWithStrictUndefined) {
  EXPECT_EQ(Render("a: {{ x * 2 }}\n{% for i in range(2) %}- {{ i }}\n{% endfor %}", R"({"x": 21})"), "a: 42\n- 0\n- 1\n");
  EXPECT_EQ(Render("\n\nk: {{ nope }}"), "error: p.yaml:3: 'nope' is undefined");
  EXPECT_EQ(Render("{% if %}"), "error: p.yaml:1: Expected an expression, got 'end of statement block'");
  EXPECT_EQ(Render("{{ datetime.date(2024, 1, 2).isoformat() }}"), "2024-01-02");
}

TEST(PythonTemplate, IncludesAreFoundBesideThePipelineFile) {
  dfw::testing::TempDir dir("dfw-pytmpl");
  dir.Write("parts/common.yaml", "shared: {{ k }}");
  dir.Write("parts/macros.j2", "{% macro twice(v) %}{{ v }}{{ v }}{% endmacro %}");
  const std::string path = dir.path() + "/parts/p.yaml";
  EXPECT_EQ(Render("{% include 'common.yaml' %}\n{% import 'macros.j2' as m %}{{ m.twice('ab') }}", R"({"k": 1})", path),
            "shared: 1\nabab");
  EXPECT_EQ(Render("{% include 'gone.yaml' %}", "{}", path),
            "error: " + path + ":1: template 'gone.yaml' not found (looked for gone.yaml, " + dir.path() + "/parts/gone.yaml)");
}

TEST(PythonTemplate, TheVariablesMustBeAnObjectAndDeepJsonIsAnError) {
  EXPECT_EQ(Render("x", "[1]"), "error: --jinja_variables: expected a JSON object such as '{\"K\": 3}', got list");
  EXPECT_EQ(Render("x", "{").rfind("error: --jinja_variables: not valid JSON: ", 0), 0u);
  const std::string deep = "{\"a\": " + std::string(40000, '[') + std::string(40000, ']') + "}";
  EXPECT_EQ(Render("x", deep), "error: --jinja_variables: nested too deeply to read (RecursionError)");
  Result<std::string> flags = RenderPipelineTemplate("p.yaml", "{{ a }}-{{ b }}", R"({"a": 1, "b": 2})", {{"b", "x"}});
  ASSERT_TRUE(flags.ok()) << flags.status().message();
  EXPECT_EQ(*flags, "1-x");
}

TEST(PythonTemplate, RunawayTemplatesEndAsErrors) {
  std::string sum = "{{ 0";
  for (int i = 0; i < 5000; ++i) sum += "+1";
  EXPECT_NE(Render(sum + " }}").find("RecursionError"), std::string::npos);
  std::string filters = "{{ 1";
  for (int i = 0; i < 20000; ++i) filters += "|abs";
  EXPECT_NE(Render(filters + " }}").find("RecursionError"), std::string::npos);
  const std::string doubling =
      "{% macro d(x, n) %}{% if n > 0 %}{{ d(x + x, n - 1) }}{% else %}{{ x|length }}{% endif %}{% endmacro %}{{ d([1], 40) }}";
  EXPECT_NE(Render(doubling).find("MemoryError"), std::string::npos) << Render(doubling);
}

// The chat templates of Llama 3.1, Qwen2.5, Gemma 2 and Mistral Nemo checkpoints, rendered with the
// variables the text-generation engine passes (hf_text_generation.cc RenderChat: the messages,
// add_generation_prompt, tools and documents none, the special tokens), byte for byte as transformers'
// apply_chat_template renders them (testdata/chat_templates/references.json, written by
// scripts/chat_template_references.py); where transformers raises, the template's own message.
TEST(PythonTemplate, CheckpointChatTemplatesRenderByteForByteAsTransformers) {
  const std::string dir = std::string(DFW_SOURCE_DIR) + "/testdata/chat_templates/";
  std::ifstream in(dir + "references.json");
  ASSERT_TRUE(in.good());
  const nlohmann::json refs = nlohmann::json::parse(in);
  int checked = 0;
  for (const auto& t : refs.at("templates")) {
    std::ifstream file(dir + t.at("file").get<std::string>(), std::ios::binary);
    std::stringstream text;
    text << file.rdbuf();
    ASSERT_FALSE(text.str().empty()) << t.at("file");
    for (const auto& c : t.at("cases")) {
      SCOPED_TRACE(t.at("file").get<std::string>() + " / " + c.at("name").get<std::string>());
      nlohmann::json vars = {{"messages", c.at("messages")},
                             {"add_generation_prompt", c.at("add_generation_prompt")},
                             {"tools", nullptr},
                             {"documents", nullptr}};
      for (const auto& [k, v] : t.at("special_tokens").items()) vars[k] = v;
      Result<std::string> r = RenderChatTemplate("chat_template", text.str(), vars.dump());
      if (c.contains("error")) {
        ASSERT_FALSE(r.ok()) << *r;
        EXPECT_NE(r.status().message().find(c.at("error").get<std::string>()), std::string::npos) << r.status().message();
      } else {
        ASSERT_TRUE(r.ok()) << r.status().message();
        EXPECT_EQ(*r, c.at("output").get<std::string>());
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 20);  // 4 checkpoints x 5 conversations
}

TEST(PythonTemplate, ChatTemplatesRenderAsTransformersDoes) {
  const std::string tmpl =
      "{% for m in messages %}{% if m['role'] == 'system' %}{% continue %}{% endif %}"
      "<|{{ m['role'] }}|>\n  {{ m['content'] | trim }}{{ eos_token }}\n{% endfor %}"
      "{% if add_generation_prompt %}<|assistant|>{% endif %}";
  Result<std::string> r = RenderChatTemplate(
      "chat_template", tmpl,
      R"({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": " hi "}], "add_generation_prompt": true, "eos_token": "</s>"})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "<|user|>\n  hi</s>\n<|assistant|>");  // lstrip_blocks strips before blocks only
  Result<std::string> raised = RenderChatTemplate("chat_template", "\n{{ raise_exception('roles must alternate') }}", "{}");
  ASSERT_FALSE(raised.ok());
  EXPECT_EQ(raised.status().message(), "chat_template:2: roles must alternate");
  Result<std::string> json = RenderChatTemplate("chat_template", "{{ x | tojson }}", R"({"x": {"é": [1, 2]}})");
  ASSERT_TRUE(json.ok());
  EXPECT_EQ(*json, R"({"é": [1, 2]})");
  Result<std::string> sandboxed = RenderChatTemplate("chat_template", "{{ messages.append(1) }}", R"({"messages": []})");
  ASSERT_FALSE(sandboxed.ok());
  EXPECT_NE(sandboxed.status().message().find("unsafe"), std::string::npos) << sandboxed.status().message();
}

}  // namespace dfw::python_template_test
