// RenderPipelineFile: what Beam's loader does to a pipeline file before YAML sees it.
#include "dfw/template/pipeline_file.h"

#include <gtest/gtest.h>

#include <string>

#include "test_util.h"

namespace dfw::tmpl {
namespace {

TEST(PipelineFile, AFileWithoutTemplateSyntaxComesBackByteForByte) {
  // Not even jinja2's dropped trailing newline, CRLFs or a '{' of a YAML flow mapping change.
  const std::string text = "# c {{ in a leading comment }}\r\n\npipeline:\r\n  x: {a: 1}\n  y: '{ %'\n\n";
  Result<std::string> out = RenderPipelineFile("p.yaml", text, Value());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, text);
  EXPECT_FALSE(HasTemplateSyntax(text));
}

TEST(PipelineFile, LeadingCommentLinesAreNotRenderedAndKeepTheirLines) {
  const std::string text = "#\n# {{ would fail }}\n  # indented comment\n\nk: {{ K }}\nbad: {{ Z }}\n";
  EXPECT_TRUE(HasTemplateSyntax(text));
  Result<std::string> out = RenderPipelineFile("p.yaml", text, *ParseJinjaVariables(R"({"K": 3, "Z": 4})"));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "\n\n\n\nk: 3\nbad: 4\n");
  Result<std::string> err = RenderPipelineFile("p.yaml", text, *ParseJinjaVariables(R"({"K": 3})"));
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.status().message(), "p.yaml:6: 'Z' is undefined");  // line 6 of the file as written
}

TEST(PipelineFile, IncludesAreFoundInThePipelineFilesFolder) {
  dfw::testing::TempDir dir("dfw-tmpl");
  dir.Write("sub/part.yaml", "# license\nv: {{ V }}\n");
  const std::string p = dir.Write("sub/p.yaml", "{% include 'part.yaml' %}\n");
  Result<std::string> out = RenderPipelineFile(p, "{% include 'part.yaml' %}\n", *ParseJinjaVariables(R"({"V": "x"})"));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "v: x\n");
}

TEST(PipelineFile, JinjaVariablesMustBeAnObject) {
  EXPECT_TRUE(ParseJinjaVariables(R"({"K": [1, {"a": null}]})").ok());
  for (const char* bad : {"[1]", "3", "\"s\"", "{", ""}) {
    Result<Value> v = ParseJinjaVariables(bad);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_EQ(v.status().message().rfind("--jinja_variables: ", 0), 0u) << v.status().message();
  }
}

}  // namespace
}  // namespace dfw::tmpl
