// ConfigNode: the YAML conversion keeps text, quoting, order and positions; lookups never throw or
// insert; copies are independent; booleans read as yaml-cpp reads them (yaml-cpp is the oracle).
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>

#include "dfw/stages/config.h"
#include "dfw/stages/config_node.h"
#include "dfw/stages/config_yaml.h"

namespace dfw {
namespace {

ConfigNode Parse(const std::string& text) { return ConfigNodeFromYaml(YAML::Load(text)); }

TEST(ConfigNode, KeepsKindsTextQuotingOrderAndPositions) {
  const ConfigNode n = Parse("b: 1\na: 'x'\nlist:\n  - plain\n  - \"quoted\"\nnothing: ~\nmap: {k: v}\n");
  ASSERT_TRUE(n.IsMap());
  ASSERT_EQ(n.size(), 5u);
  EXPECT_EQ(n.entries()[0].key.Scalar(), "b") << "file order, not sorted";
  EXPECT_EQ(n.entries()[1].key.Scalar(), "a");
  EXPECT_TRUE(n["b"].IsScalar());
  EXPECT_FALSE(n["b"].quoted());
  EXPECT_TRUE(n["a"].quoted());
  EXPECT_TRUE(n["nothing"].IsNull());
  ASSERT_TRUE(n["list"].IsSequence());
  EXPECT_EQ(n["list"].size(), 2u);
  EXPECT_FALSE(n["list"][0].quoted());
  EXPECT_TRUE(n["list"][1].quoted());
  EXPECT_EQ(n["map"]["k"].Scalar(), "v");
  EXPECT_EQ(n["a"].line(), 2);
  EXPECT_EQ(n["a"].column(), 4);
  EXPECT_EQ(n["list"][1].line(), 5);
  EXPECT_EQ(n["list"][1].column(), 5);
  EXPECT_EQ(n.entries()[1].key.line(), 2) << "keys keep their own position";
  EXPECT_EQ(n.entries()[1].key.column(), 1);
}

TEST(ConfigNode, MissingKeysAndIndicesAreUndefinedAtAnyDepthAndInsertNothing) {
  const ConfigNode n = Parse("a: {b: [1, 2]}\ns: text\n");
  EXPECT_FALSE(n["zz"].IsDefined());
  EXPECT_FALSE(n["zz"]["yy"][3]["x"].IsDefined());
  EXPECT_FALSE(n["s"]["not a map"].IsDefined()) << "a scalar has no keys";
  EXPECT_FALSE(n["a"]["b"][2].IsDefined());
  EXPECT_EQ(n["a"]["b"][1].Scalar(), "2");
  EXPECT_EQ(n.size(), 2u) << "looking up missing keys inserted none";
  EXPECT_EQ(n["zz"].Scalar(), "");
  EXPECT_EQ(n["zz"].line(), 0);
  const YAML::Node yaml = YAML::Load("a: 1");
  EXPECT_FALSE(ConfigNodeFromYaml(yaml["missing"]).IsDefined()) << "yaml-cpp's undefined lookup result";
  EXPECT_TRUE(ConfigNodeFromYaml(YAML::Node()).IsNull()) << "a default YAML::Node is null, not undefined";
}

TEST(ConfigNode, CopiesAreIndependentAndSetReplacesOrAppends) {
  ConfigNode original = Parse("k: 1\nm: {x: 1}\n");
  ConfigNode copy = original;
  ASSERT_TRUE(copy.Set("k", ConfigNode::Scalar("2")));
  ASSERT_TRUE(copy.Set("new", ConfigNode::Scalar("3")));
  EXPECT_EQ(original["k"].Scalar(), "1") << "a yaml-cpp node would have written through";
  EXPECT_FALSE(original["new"].IsDefined());
  EXPECT_EQ(copy["k"].Scalar(), "2");
  EXPECT_EQ(copy.entries().back().key.Scalar(), "new");
  EXPECT_EQ(copy.size(), 3u);

  ConfigNode built;
  EXPECT_TRUE(built.Set("a", ConfigNode::Null())) << "an undefined node becomes a map";
  EXPECT_TRUE(built.IsMap());
  EXPECT_FALSE(built.Append(ConfigNode::Scalar("x"))) << "a map is not a sequence";
  ConfigNode scalar = ConfigNode::Scalar("s");
  EXPECT_FALSE(scalar.Set("a", ConfigNode::Null()));
  EXPECT_TRUE(scalar.IsScalar());
  ConfigNode repeated = ConfigNode::Map();
  ASSERT_TRUE(repeated.AddEntry(ConfigNode::Scalar("k"), ConfigNode::Scalar("1")));
  ASSERT_TRUE(repeated.AddEntry(ConfigNode::Scalar("k"), ConfigNode::Scalar("2")));
  EXPECT_EQ(repeated.size(), 2u);
  EXPECT_EQ(repeated["k"].Scalar(), "1") << "the first of a repeated key";
}

TEST(ConfigNode, BooleansReadAsYamlCppReadsThem) {
  for (const char* text : {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "y", "Y", "false", "False",
                           "FALSE", "no", "No", "NO", "off", "Off", "OFF", "n", "N", "tRUE", "TrUe", "yEs", "1", "0",
                           "", "truex", "nope", "~", "null"}) {
    const YAML::Node yaml = YAML::Load(std::string("v: ") + (*text ? text : "''"))["v"];
    bool expected = false;
    const bool decodes = YAML::convert<bool>::decode(yaml, expected);
    const std::optional<bool> got = ConfigScalarBool(ConfigNodeFromYaml(yaml));
    EXPECT_EQ(got.has_value(), decodes) << "'" << text << "'";
    if (got && decodes) {
      EXPECT_EQ(*got, expected) << "'" << text << "'";
    }
  }
}

TEST(ConfigNode, ValuesFollowTheYamlCoreSchemaAndQuotedScalarsStayStrings) {
  const Value v = ConfigToValue(Parse("i: 3\nf: 2.5\nb: true\nn: null\ns: word\nq: '3'\nl: [1, 'a']\nm: {k: v}\n"));
  ASSERT_TRUE(v.is_row());
  EXPECT_EQ(v.ToJson(), R"({"i":3,"f":2.5,"b":true,"n":null,"s":"word","q":"3","l":[1,"a"],"m":{"k":"v"}})");
  EXPECT_TRUE(ConfigToValue(ConfigNode()).is_null());
}

TEST(ConfigNode, ErrorsNameTheNodesPositionOrTheTransformsWhenItHasNone) {
  StageConfig c;
  c.file = "p.yaml";
  c.line = 7;
  c.column = 3;
  c.config = Parse("k: 1\nother: x\n");
  EXPECT_EQ(NodeLocation(c, c.config["other"]), "p.yaml:2:8");
  EXPECT_EQ(NodeLocation(c, ConfigNode::Scalar("made, not read")), "p.yaml:7:3");
  EXPECT_EQ(NodeLocation(c, c.config["missing"]), "p.yaml:7:3");
}

}  // namespace
}  // namespace dfw
