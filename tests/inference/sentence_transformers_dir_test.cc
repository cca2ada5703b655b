// The sentence-transformers directory layout, read once for the handler, MLTransform and export.
#include "dfw/inference/sentence_transformers_dir.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace dfw::sentence_transformers_dir_test {
namespace {

using ::dfw::testing::TempDir;
using Pooling = SentenceTransformersDir::Pooling;

TEST(SentenceTransformersDir, AFullDirectoryIsReadAsSentenceTransformersReadsIt) {
  TempDir dir;
  dir.Write("sentence_bert_config.json", R"({"max_seq_length": 256, "do_lower_case": false})");
  dir.Write("1_Pooling/config.json", R"({"word_embedding_dimension": 384, "pooling_mode_cls_token": false,
                                        "pooling_mode_mean_tokens": true})");
  dir.Write("modules.json", R"([{"idx": 0, "type": "sentence_transformers.models.Transformer"},
                               {"idx": 1, "type": "sentence_transformers.models.Pooling"},
                               {"idx": 2, "type": "sentence_transformers.models.Normalize"}])");
  dir.Write("config.json", R"({"max_position_embeddings": 512, "hidden_size": 384})");
  dir.Write("tokenizer_config.json", R"({"model_max_length": 128})");
  const SentenceTransformersDir d = ReadSentenceTransformersDir(dir.path());
  EXPECT_EQ(d.max_seq_length, 256);
  EXPECT_EQ(d.pooling, Pooling::kMean);
  EXPECT_TRUE(d.normalize);
  EXPECT_EQ(d.max_position_embeddings, 512);
  EXPECT_EQ(d.tokenizer_max_length, 128);
}

TEST(SentenceTransformersDir, APlainHuggingFaceDirectoryHasNoneOfTheFiles) {
  TempDir dir;
  dir.Write("config.json", R"({"max_position_embeddings": 128})");
  const SentenceTransformersDir d = ReadSentenceTransformersDir(dir.path());
  EXPECT_FALSE(d.max_seq_length.has_value());
  EXPECT_EQ(d.pooling, Pooling::kAbsent);
  EXPECT_FALSE(d.normalize);
  EXPECT_EQ(d.max_position_embeddings, 128);
  EXPECT_FALSE(d.tokenizer_max_length.has_value());
}

TEST(SentenceTransformersDir, ClsOtherModesAndMalformedFilesAreToldApartWithoutThrowing) {
  TempDir cls, other, bad;
  cls.Write("1_Pooling/config.json", R"({"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false})");
  other.Write("1_Pooling/config.json", R"({"pooling_mode_max_tokens": true})");
  // Wrong types and broken JSON leave the fields unset (and never throw from nlohmann's value()).
  bad.Write("1_Pooling/config.json", R"({"pooling_mode_cls_token": "yes"})");
  bad.Write("sentence_bert_config.json", R"({"max_seq_length": 1.5e30})");
  bad.Write("config.json", "{not json");
  bad.Write("tokenizer_config.json", R"({"model_max_length": 1000000000000000019884624838656})");
  EXPECT_EQ(ReadSentenceTransformersDir(cls.path()).pooling, Pooling::kCls);
  EXPECT_EQ(ReadSentenceTransformersDir(other.path()).pooling, Pooling::kOther);
  const SentenceTransformersDir d = ReadSentenceTransformersDir(bad.path());
  EXPECT_EQ(d.pooling, Pooling::kOther) << "a pooling module whose cls flag is not a boolean is not cls";
  EXPECT_FALSE(d.max_seq_length.has_value());
  EXPECT_FALSE(d.max_position_embeddings.has_value());
  EXPECT_FALSE(d.tokenizer_max_length.has_value());
}

}  // namespace
}  // namespace dfw::sentence_transformers_dir_test
