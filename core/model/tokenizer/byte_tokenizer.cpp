#include "core/model/tokenizer/byte_tokenizer.hpp"

#include <cstdio>

namespace inflight {

std::vector<token_id> byte_tokenizer::encode(std::string_view text, bool add_bos) const {
  std::vector<token_id> ids;
  ids.reserve(text.size() + 1);
  if (add_bos) ids.push_back(bos_token);
  for (unsigned char c : text) ids.push_back(token_id(c) + byte_offset);
  return ids;
}

std::string byte_tokenizer::token_bytes(token_id, token_id token) const {
  if (token < byte_offset || token >= byte_offset + 256) return "";
  return std::string(1, char(token - byte_offset));
}

std::string byte_tokenizer::piece(token_id token) const {
  switch (token) {
    case 0: return "<unk>";
    case bos_token: return "<s>";
    case eos_token: return "</s>";
    default: break;
  }
  if (token >= byte_offset && token < byte_offset + 256) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", unsigned(token - byte_offset));
    return buf;
  }
  return "";
}

}  // namespace inflight
