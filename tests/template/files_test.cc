// include, import, extends across files (an in-memory loader), Beam's search order, and the limits.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "dfw/template/render.h"

namespace dfw::tmpl {
namespace {

struct Files {
  std::map<std::string, std::string> files;
  std::vector<std::string> asked;  // every path the loader was asked for, in order
  TemplateLoader Loader() {
    return [this](const std::string& path) -> Result<std::string> {
      asked.push_back(path);
      auto it = files.find(path);
      if (it == files.end()) return NotFound(path);
      return it->second;
    };
  }
};

Result<std::string> Render(Files& f, const std::string& source, const char* vars = "{}", RenderOptions options = {}) {
  options.loader = f.Loader();
  return RenderTemplate(source, "main.yaml", Value::FromJson(nlohmann::json::parse(vars)), options);
}

TEST(TemplateFiles, IncludeSeesTheContextAndDropsLeadingCommentsAndOneTrailingNewline) {
  Files f;
  f.files["part.yaml"] = "# license\n#\n\n- {{ name }}\n";
  auto out = Render(f, "xs:\n{% include 'part.yaml' %}\nend", R"({"name": "a"})");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "xs:\n- a\nend");
}

TEST(TemplateFiles, SearchOrderIsAsGivenThenSearchPathsThenDot) {
  Files f;
  f.files["./x.yaml"] = "dot";
  RenderOptions options;
  options.search_paths = {"dirA", "dirB"};
  auto out = Render(f, "{% include 'x.yaml' %}", "{}", options);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "dot");
  EXPECT_EQ(f.asked, (std::vector<std::string>{"x.yaml", "dirA/x.yaml", "dirB/x.yaml", "./x.yaml"}));
  f.files["dirB/x.yaml"] = "b";
  f.asked.clear();
  out = Render(f, "{% include 'x.yaml' %}", "{}", options);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "b");
}

TEST(TemplateFiles, AbsolutePathsAreNotSearched) {
  Files f;
  RenderOptions options;
  options.search_paths = {"dirA"};
  auto out = Render(f, "{% include '/abs/x.yaml' %}", "{}", options);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(f.asked, (std::vector<std::string>{"/abs/x.yaml"}));
  EXPECT_EQ(out.status().code(), StatusCode::kNotFound);
}

TEST(TemplateFiles, ImportedMacrosRenderWithTheirArguments) {
  Files f;
  f.files["macros.yaml"] =
      "{%- macro read(params) -%}\n- type: ReadFromText\n  config:\n    path: \"{{ params.path }}\"\n{%- endmacro -%}\n"
      "{% macro twice(x) %}{{ helper(x) }}{{ helper(x) }}{% endmacro %}{% macro helper(x) %}<{{ x }}>{% endmacro %}";
  auto out = Render(f, "{% import 'macros.yaml' as m %}t:\n{{ m.read(r) | indent(2, true) }}\n{{ m.twice(1) }}",
                    R"({"r": {"path": "in.txt"}})");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "t:\n  - type: ReadFromText\n    config:\n      path: \"in.txt\"\n<1><1>");
}

TEST(TemplateFiles, FromImportBindsNames) {
  Files f;
  f.files["m.yaml"] = "{% macro a() %}A{% endmacro %}{% set version = 3 %}";
  auto out = Render(f, "{% from 'm.yaml' import a as b, version %}{{ b() }}{{ version }}");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "A3");
  auto missing = Render(f, "{% from 'm.yaml' import nope %}");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("main.yaml:1: the template 'm.yaml' does not export 'nope'"), std::string::npos)
      << missing.status().message();
}

TEST(TemplateFiles, ImportsDoNotSeeTheCallersVariables) {
  Files f;
  f.files["m.yaml"] = "{% macro k() %}{{ K }}{% endmacro %}";
  auto out = Render(f, "{% import 'm.yaml' as m %}{{ m.k() }}", R"({"K": 1})");
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("m.yaml:1: 'K' is undefined"), std::string::npos) << out.status().message();
}

TEST(TemplateFiles, ExtendsFillsTheParentsBlocks) {
  Files f;
  f.files["base.yaml"] = "head {{ v }}\n{% block steps %}default{% endblock %}\n{% block tail %}T{% endblock %}\nend";
  auto out = Render(f, "{% extends 'base.yaml' %}\nignored text\n{% block steps %}child {{ v }}{% endblock %}", R"({"v": 1})");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "head 1\nchild 1\nT\nend");
}

TEST(TemplateFiles, ThreeLevelsAndSuper) {
  Files f;
  f.files["a.yaml"] = "[{% block b %}a{% endblock %}]";
  f.files["b.yaml"] = "{% extends 'a.yaml' %}{% block b %}b{{ super() }}{% endblock %}";
  auto out = Render(f, "{% extends 'b.yaml' %}{% block b %}c{{ super() }}{% endblock %}");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "[cba]");
}

TEST(TemplateFiles, AnErrorInAnIncludedFileNamesThatFileAndTheInclude) {
  Files f;
  f.files["part.yaml"] = "ok\n{{ nope }}";
  auto out = Render(f, "\n\n{% include 'part.yaml' %}");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), "part.yaml:2: 'nope' is undefined (included from main.yaml:3)");
}

TEST(TemplateFiles, SelfIncludeStopsAtTheDepthLimit) {
  Files f;
  f.files["loop.yaml"] = "x{% include 'loop.yaml' %}";
  auto out = Render(f, "{% include 'loop.yaml' %}");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(out.status().message().find("loop.yaml:1: templates nested more than 16 deep"), std::string::npos)
      << out.status().message();
}

TEST(TemplateFiles, SelfExtendsStopsAtTheDepthLimit) {
  Files f;
  f.files["e.yaml"] = "{% extends 'e.yaml' %}";
  auto out = Render(f, "{% extends 'e.yaml' %}");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted) << out.status().message();
}

TEST(TemplateLimits, LoopIterationsAreCapped) {
  Files f;
  RenderOptions options;
  // All loops of the render together: 10 outer + 100 inner iterations.
  const std::string nested = "{% for i in range(10) %}{% for j in range(10) %}{% endfor %}{% endfor %}";
  options.limits.max_loop_iterations = 110;
  auto ok = Render(f, nested, "{}", options);
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
  options.limits.max_loop_iterations = 109;
  EXPECT_FALSE(Render(f, nested, "{}", options).ok());
  options.limits.max_loop_iterations = 100;
  auto out = Render(f, "\n{% for i in range(200) %}{% endfor %}", "{}", options);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(out.status().message().find("main.yaml:2: more than 100 loop iterations"), std::string::npos) << out.status().message();
}

TEST(TemplateLimits, OutputBytesAreCapped) {
  Files f;
  RenderOptions options;
  options.limits.max_output_bytes = 1000;
  auto out = Render(f, "{% for i in range(100) %}0123456789ab{% endfor %}", "{}", options);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(out.status().message().find("produced more than 1000 bytes"), std::string::npos) << out.status().message();
  auto repeat = Render(f, "{{ 'x' * 100000 }}", "{}", options);
  ASSERT_FALSE(repeat.ok());
  EXPECT_EQ(repeat.status().code(), StatusCode::kResourceExhausted) << repeat.status().message();
}

TEST(TemplateLimits, RecursiveMacrosAreCapped) {
  Files f;
  auto out = Render(f, "{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(out.status().message().find("macro calls nested more than 64 deep"), std::string::npos) << out.status().message();
}

TEST(TemplateLimits, DeepNestingIsAParseErrorNotACrash) {
  Files f;
  auto out = Render(f, "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}");
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("nested too deeply"), std::string::npos) << out.status().message();
  auto nots = Render(f, "{{ " + [] { std::string s; for (int i = 0; i < 5000; ++i) s += "not "; return s; }() + "1 }}");
  ASSERT_FALSE(nots.ok());
  auto ifs = Render(f, [] { std::string s; for (int i = 0; i < 5000; ++i) s += "{% if 1 %}"; return s; }());
  ASSERT_FALSE(ifs.ok());
  EXPECT_NE(ifs.status().message().find("nested too deeply"), std::string::npos) << ifs.status().message();
}

}  // namespace
}  // namespace dfw::tmpl
