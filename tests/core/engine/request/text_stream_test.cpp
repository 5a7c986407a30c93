#include <catch2/catch.hpp>

#include "core/engine/request/text_stream.hpp"
#include "core/model/tokenizer/byte_tokenizer.hpp"

using namespace inflight;

namespace {

std::string stream_all(const std::string& text, std::vector<std::string> stops, bool* stopped = nullptr,
                       std::vector<std::string>* deltas = nullptr) {
  byte_tokenizer tok;
  text_stream ts(tok, std::move(stops), byte_tokenizer::bos_token);
  std::string out;
  for (token_id id : tok.encode(text, false)) {
    auto d = ts.push(id);
    out += d.text;
    if (deltas) deltas->push_back(d.text);
    if (d.is_stopped) {
      if (stopped) *stopped = true;
      return out;
    }
  }
  if (stopped) *stopped = false;
  return out + ts.finish();
}

}  // namespace

TEST_CASE("without stop strings every byte is released as soon as its character completes", "[text_stream]") {
  std::vector<std::string> deltas;
  CHECK(stream_all("hi 你", {}, nullptr, &deltas) == "hi 你");
  REQUIRE(deltas.size() == 6);
  CHECK(deltas[0] == "h");
  CHECK(deltas[3] == "");  // first byte of a 3-byte character is held
  CHECK(deltas[4] == "");
  CHECK(deltas[5] == "你");
}

TEST_CASE("a stop string ends the text before it, and no part of it is ever sent", "[text_stream]") {
  bool stopped = false;
  std::vector<std::string> deltas;
  CHECK(stream_all("Hello world. The end", {"world"}, &stopped, &deltas) == "Hello ");
  CHECK(stopped);
  for (const auto& d : deltas) CHECK(d.find('w') == std::string::npos);
}

TEST_CASE("a partial match that fails is released", "[text_stream]") {
  bool stopped = true;
  CHECK(stream_all("wor wo wonder", {"world"}, &stopped) == "wor wo wonder");
  CHECK_FALSE(stopped);
}

TEST_CASE("the earliest of several stop strings wins", "[text_stream]") {
  bool stopped = false;
  CHECK(stream_all("abc\n\nUser: x", {"User:", "\n\n"}, &stopped) == "abc");
  CHECK(stopped);
}

TEST_CASE("held text never splits a multi-byte character", "[text_stream]") {
  std::vector<std::string> deltas;
  stream_all("ééééé", {"xyz"}, nullptr, &deltas);
  for (const auto& d : deltas) CHECK(is_valid_utf8(d));
}

TEST_CASE("a stop names the string that matched", "[text_stream]") {
  byte_tokenizer tok;
  text_stream ts(tok, {"User:", "\n\n", "c\n"}, byte_tokenizer::bos_token);
  std::string matched;
  for (token_id id : tok.encode("abc\n\nUser: x", false)) {
    auto d = ts.push(id);
    if (d.is_stopped) {
      matched = d.stop;
      break;
    }
  }
  CHECK(matched == "c\n");  // the earliest occurrence, whichever is listed first
}
