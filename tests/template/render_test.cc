// Templates × variables → output or error, as Beam's jinja2 (StrictUndefined) renders them.
#include "dfw/template/render.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "dfw/template/value.h"

namespace dfw::tmpl {
namespace {

struct Case {
  const char* name;
  const char* source;
  const char* variables;  // JSON object
  const char* output;     // expected output, or null when an error is expected
  const char* error;      // substring of the expected error
};

const Case kCases[] = {
    // Literals, variables, access.
    {"plain_text", "a: 1\nb: 2\n", "{}", "a: 1\nb: 2\n", nullptr},
    {"variable", "k: {{ K }}", R"({"K": 3})", "k: 3", nullptr},
    {"string_literal", "{{ 'a' ~ \"b\" }}", "{}", "ab", nullptr},
    {"float_repr", "{{ 1.5 }} {{ 2.0 }} {{ 1e20 }} {{ 0.1 + 0.2 }}", "{}", "1.5 2.0 1e+20 0.30000000000000004", nullptr},
    {"list_and_dict_repr", "{{ [1, 'a', none, true] }} {{ {'k': 'v'} }}", "{}", "[1, 'a', None, True] {'k': 'v'}", nullptr},
    {"attribute", "{{ p.path }}", R"({"p": {"path": "gs://b/x"}})", "gs://b/x", nullptr},
    {"item_access", "{{ p['path'] }} {{ xs[0] }} {{ xs[-1] }} {{ xs.1 }}", R"({"p": {"path": "x"}, "xs": [4, 5, 6]})", "x 4 6 5", nullptr},
    {"nested_access", "{{ a.b.c }}", R"({"a": {"b": {"c": "deep"}}})", "deep", nullptr},
    // Operators.
    {"arithmetic", "{{ 1 + 2 * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }}", "{}",
     "7 3 -4 1 2 3.5 1024", nullptr},
    {"comparison", "{{ 1 < 2 }} {{ 'a' == 'a' }} {{ 1 == 1.0 }} {{ 3 >= 4 }} {{ 1 != 2 }}", "{}", "True True True False True", nullptr},
    {"logic", "{{ true and false }} {{ none or 'x' }} {{ not 0 }} {{ 0 and undefined_name }}", "{}", "False x True 0", nullptr},
    {"membership", "{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in d }} {{ 3 not in [1] }}", R"({"d": {"k": 1}})",
     "True True True True", nullptr},
    {"concat_stringifies", "{{ 'n=' ~ 3 ~ true }}", "{}", "n=3True", nullptr},
    {"string_and_list_plus", "{{ 'a' + 'b' }} {{ [1] + [2] }} {{ 'ab' * 2 }}", "{}", "ab [1, 2] abab", nullptr},
    {"conditional_expression", "{{ 'y' if K > 2 else 'n' }}", R"({"K": 3})", "y", nullptr},
    // Filters.
    {"default_on_undefined", "{{ missing | default('d') }} {{ K | default(1) }}", R"({"K": 0})", "d 0", nullptr},
    {"default_boolean", "{{ '' | default('d', true) }}", "{}", "d", nullptr},
    {"upper_lower_trim", "{{ 'Ab' | upper }} {{ 'Ab' | lower }} [{{ '  x  ' | trim }}]", "{}", "AB ab [x]", nullptr},
    {"replace", "{{ 'a-b-c' | replace('-', '_') }} {{ 'aaa' | replace('a', 'b', 2) }}", "{}", "a_b_c bba", nullptr},
    {"join_and_length", "{{ xs | join(',') }} {{ xs | length }} {{ 'abc' | length }}", R"({"xs": [1, 2, 3]})", "1,2,3 3 3", nullptr},
    {"int_and_string", "{{ '42' | int + 1 }} {{ 'x' | int }} {{ 3.9 | int }} {{ 5 | string ~ '!' }}", "{}", "43 0 3 5!", nullptr},
    {"tojson_sorted_and_escaped", "{{ d | tojson }}", R"({"d": {"b": [1, 2.5], "a": "<'&>"}})",
     R"({"a": "\u003c\u0027\u0026\u003e", "b": [1, 2.5]})", nullptr},
    {"indent", "x:\n{{ 'a: 1\\nb: 2\\n\\nc: 3' | indent(2, true) }}", "{}", "x:\n  a: 1\n  b: 2\n\n  c: 3", nullptr},
    {"filter_chain", "{{ ' Hi ' | trim | upper | replace('I', 'o') }}", "{}", "Ho", nullptr},
    // Tests and methods.
    {"is_defined", "{{ K is defined }} {{ Z is defined }} {{ Z is not defined }} {{ none is none }}", R"({"K": 1})",
     "True False True True", nullptr},
    {"dict_items", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", R"({"d": {"x": 1, "y": 2}})", "x=1;y=2;", nullptr},
    {"string_methods", "{{ 'a,b'.split(',') }} {{ 'Ab'.upper() }} {{ 'abc'.startswith('ab') }}", "{}", "['a', 'b'] AB True", nullptr},
    // Statements.
    {"if_elif_else", "{% if K == 1 %}one{% elif K == 2 %}two{% else %}many{% endif %}", R"({"K": 2})", "two", nullptr},
    {"if_false_no_else", "[{% if false %}x{% endif %}]", "{}", "[]", nullptr},
    {"for_loop_vars", "{% for x in xs %}{{ loop.index }}:{{ x }}{% if not loop.last %},{% endif %}{% endfor %}",
     R"({"xs": ["a", "b", "c"]})", "1:a,2:b,3:c", nullptr},
    {"for_first_index0_length", "{% for x in xs %}{{ loop.first }}{{ loop.index0 }}/{{ loop.length }} {% endfor %}",
     R"({"xs": [1, 2]})", "True0/2 False1/2 ", nullptr},
    {"for_else", "{% for x in xs %}{{ x }}{% else %}empty{% endfor %}", R"({"xs": []})", "empty", nullptr},
    {"for_filter", "{% for x in range(6) if x is even %}{{ x }}{% endfor %}", "{}", "024", nullptr},
    {"for_range", "{% for i in range(1, 4) %}{{ i }}{% endfor %}", "{}", "123", nullptr},
    {"for_scope_does_not_leak", "{% set n = 1 %}{% for x in [5] %}{% set n = x %}{% endfor %}{{ n }}", "{}", "1", nullptr},
    {"set", "{% set name = 'w' ~ K %}{{ name }}", R"({"K": 7})", "w7", nullptr},
    {"set_block", "{% set body %}a{{ 1 }}{% endset %}[{{ body }}]", "{}", "[a1]", nullptr},
    {"set_tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}", "{}", "12", nullptr},
    {"comment", "a{# a comment {{ x }} #}b", "{}", "ab", nullptr},
    {"whitespace_control", "a  {%- if true -%}  \n b \n {%- endif %}", "{}", "ab", nullptr},
    {"expression_whitespace_control", "x = \n  {{- 1 -}}\n  ;", "{}", "x =1;", nullptr},
    {"raw", "{% raw %}{{ not rendered }}{% endraw %}", "{}", "{{ not rendered }}", nullptr},
    {"macro", "{% macro t(name, n=2) %}{{ name }}x{{ n }}{% endmacro %}{{ t('a') }} {{ t('b', n=3) }}", "{}", "ax2 bx3", nullptr},
    {"macro_sees_globals", "{% macro g() %}{{ K }}{% endmacro %}{{ g() }}", R"({"K": "k"})", "k", nullptr},
    {"dict_literal_in_expression", "{{ {'a': {'b': 1}}.a.b }}", "{}", "1", nullptr},
    {"jinja_variables_types", "{{ s }} {{ i }} {{ f }} {{ b }} {{ n }} {{ l }}",
     R"({"s": "x", "i": 1, "f": 1.25, "b": false, "n": null, "l": [1, "y"]})", "x 1 1.25 False None [1, 'y']", nullptr},
    {"trailing_newline_kept", "{{ 1 }}\n", "{}", "1\n", nullptr},
    {"yaml_lines_kept", "a: {{ A }}\n\nb: |\n  {{ B }}\n", R"({"A": 1, "B": "x"})", "a: 1\n\nb: |\n  x\n", nullptr},

    // Errors: StrictUndefined, syntax, types; each names the file and line.
    {"undefined_variable", "line1\nk: {{ K }}", "{}", nullptr, "t.yaml:2: 'K' is undefined"},
    {"undefined_attribute", "{{ p.nope }}", R"({"p": {"path": 1}})", nullptr, "t.yaml:1: 'dict object' has no attribute 'nope'"},
    {"attribute_of_undefined", "{{ p.path | default('x') }}", "{}", nullptr, "t.yaml:1: 'p' is undefined"},
    {"undefined_in_if", "\n\n{% if K %}x{% endif %}", "{}", nullptr, "t.yaml:3: 'K' is undefined"},
    {"undefined_in_for", "{% for x in xs %}{% endfor %}", "{}", nullptr, "t.yaml:1: 'xs' is undefined"},
    {"undefined_in_arithmetic", "{{ K + 1 }}", "{}", nullptr, "t.yaml:1: 'K' is undefined"},
    {"list_index_out_of_range", "{{ xs[5] }}", R"({"xs": [1]})", nullptr, "t.yaml:1: list object has no element 5"},
    {"unclosed_expression", "a\n{{ K", R"({"K": 1})", nullptr, "t.yaml:2: the expression is not closed"},
    {"unclosed_if", "{% if true %}x", "{}", nullptr, "unexpected end of template: expected '{% endif %}'"},
    {"mismatched_end", "{% if true %}x{% endfor %}", "{}", nullptr, "t.yaml:1: unknown tag 'endfor'"},
    {"unknown_tag", "\n{% frobnicate %}", "{}", nullptr, "t.yaml:2: unknown tag 'frobnicate'"},
    {"unknown_filter", "{{ 1 | frob }}", "{}", nullptr, "t.yaml:1: no filter named 'frob'"},
    {"bad_operands", "{{ 'a' - 1 }}", "{}", nullptr, "t.yaml:1: unsupported operand type(s) for -: 'str' and 'int'"},
    {"division_by_zero", "{{ 1 // 0 }}", "{}", nullptr, "t.yaml:1: integer division or modulo by zero"},
    {"int_overflow", "{{ 9223372036854775807 + 1 }}", "{}", nullptr, "integer overflow"},
    {"unclosed_comment", "{# x", "{}", nullptr, "t.yaml:1: the comment is not closed"},
    {"unclosed_string", "{{ 'abc }}", "{}", nullptr, "the string is not closed"},
    {"not_callable", "{{ K() }}", R"({"K": 1})", nullptr, "t.yaml:1: 'int' object is not callable"},
    {"macro_too_many_args", "{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", "{}", nullptr, "macro 'm' takes 1 argument(s), 2 given"},
    {"missing_include", "{% include 'nope.yaml' %}", "{}", nullptr, "t.yaml:1: template 'nope.yaml' not found"},
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class RenderTableTest : public ::testing::TestWithParam<Case> {};

TEST_P(RenderTableTest, RendersOrFailsAsJinja2Does) {
  const Case& c = GetParam();
  Value vars = Value::FromJson(nlohmann::json::parse(c.variables));
  RenderOptions options;
  options.loader = [](const std::string& path) -> Result<std::string> { return NotFound(path); };
  Result<std::string> out = RenderTemplate(c.source, "t.yaml", vars, options);
  if (c.output) {
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(*out, c.output);
  } else {
    ASSERT_FALSE(out.ok()) << "rendered: " << *out;
    EXPECT_NE(out.status().message().find(c.error), std::string::npos) << out.status().message();
  }
}

INSTANTIATE_TEST_SUITE_P(Templates, RenderTableTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace dfw::tmpl
