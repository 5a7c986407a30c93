// libFuzzer harness: WebSocket frames at /v1/ws, through the same functions ws_session
// runs on each frame (parse, dispatch by type, validate a generate). The first byte
// says whether the frame was text or binary; the rest is the frame. Every frame must
// become a generate, a rerank, an embed, a cancel or an error message that serialises as a text frame.
#include "actors/gateway/embed_request.hpp"
#include "actors/gateway/score_request.hpp"
#include "actors/gateway/ws_message.hpp"
#include "tests/fuzz/gateway_model.hpp"

using namespace inflight;
using namespace inflight::gateway;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool is_text = (data[0] & 1) == 0;
  const std::string frame(fuzz::as_text(data + 1, size - 1));
  auto msg = try_parse_ws_message(frame, is_text);
  if (!msg) {
    fuzz::check_api_error(msg.error().error);
    const auto& id = msg.error().id;
    const auto back = nlohmann::json::parse(dump_json(ws_error_message(id, msg.error().error)), nullptr, false);
    FUZZ_CHECK(!back.is_discarded() && back["type"] == "error");
    return 0;
  }
  FUZZ_CHECK(is_text);
  FUZZ_CHECK(msg->id.is_string() || msg->id.is_number_integer());
  FUZZ_CHECK(msg->key == dump_json(msg->id));
  if (msg->type == ws_message_type::cancel) return 0;
  if (msg->type == ws_message_type::rerank) {
    const auto& m = fuzz::served_models().back();  // the one serving rerank
    if (auto r = try_parse_rerank(msg->body, m)) {
      FUZZ_CHECK(r->num_pairs() >= 1 && r->num_pairs() <= m.max_rerank_documents);
      for (const auto& prompt : r->prompts) fuzz::check_prompt(prompt, m);
    } else {
      fuzz::check_api_error(r.error());
    }
    return 0;
  }
  if (msg->type == ws_message_type::embed) {
    const auto& m = fuzz::served_models().back();  // the one serving embeddings
    if (auto r = try_parse_embeddings(msg->body, m)) {
      fuzz::check_embed_inputs(r->inputs, m);
    } else {
      fuzz::check_api_error(r.error());
    }
    return 0;
  }
  for (const auto& m : fuzz::served_models()) {
    auto gen = try_parse_ws_generate(msg->body, m);
    if (gen) {
      fuzz::check_generate_request(gen->choice_request(0), m);
    } else {
      fuzz::note(gen.error().message);
      fuzz::check_api_error(gen.error());
      const auto back = nlohmann::json::parse(dump_json(ws_error_message(msg->id, gen.error())), nullptr, false);
      FUZZ_CHECK(!back.is_discarded() && back["id"] == msg->id);
    }
  }
  return 0;
}
