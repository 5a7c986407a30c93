// A sentence-transformers Pooling module's config.json (core/model/formats/st_pooling.hpp):
// exactly one implemented mode is a pooling; several, none, another mode or mean
// without the prompt is stated but not implemented; bad files are clear errors.
#include <catch2/catch.hpp>

#include "core/model/formats/st_pooling.hpp"

using namespace inflight;

TEST_CASE("sentence-transformers pooling configs: cls, mean and lasttoken are implemented", "[core][embeddings]") {
  const std::pair<const char*, pooling_kind> implemented[] = {{"pooling_mode_cls_token", pooling_kind::first},
                                                             {"pooling_mode_mean_tokens", pooling_kind::mean},
                                                             {"pooling_mode_lasttoken", pooling_kind::last}};
  for (const auto& [key, kind] : implemented) {
    INFO(key);
    auto p = try_parse_st_pooling_config(std::string("{\"") + key + "\": true, \"pooling_mode_max_tokens\": false}", "c.json");
    REQUIRE(p.has_value());
    CHECK(p->kind == kind);
    CHECK(p->source == "c.json");
  }
  for (const char* text : {R"({"pooling_mode_weightedmean_tokens": true})", R"({"pooling_mode_max_tokens": true})",
                           R"({"pooling_mode_mean_sqrt_len_tokens": true})",
                           R"({"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": true})", R"({})",
                           R"({"pooling_mode_mean_tokens": true, "include_prompt": false})"}) {
    INFO(text);
    auto p = try_parse_st_pooling_config(text, "c.json");
    REQUIRE(p.has_value());
    CHECK(p->is_stated());
    CHECK_FALSE(p->kind.has_value());
  }
  CHECK(try_parse_st_pooling_config(R"({"pooling_mode_weightedmean_tokens": true})", "c")->stated == "weightedmean");
  CHECK(try_parse_st_pooling_config(R"({"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": true})", "c")->stated ==
        "cls+mean");
  // Last-token pooling does not depend on the prompt's tokens.
  CHECK(try_parse_st_pooling_config(R"({"pooling_mode_lasttoken": true, "include_prompt": false})", "c")->kind ==
        pooling_kind::last);
  for (const char* bad : {"[1]", "{", R"({"pooling_mode_mean_tokens": "yes"})"}) {
    INFO(bad);
    auto p = try_parse_st_pooling_config(bad, "c.json");
    REQUIRE_FALSE(p.has_value());
    CHECK(p.error().code == errc::corrupt_file);
    CHECK_THAT(p.error().message, Catch::Contains("c.json"));
  }
}
