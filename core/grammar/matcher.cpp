#include "core/grammar/matcher.hpp"

#include <algorithm>

namespace inflight {
namespace {

std::span<const std::uint8_t> as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

void set_bit(std::span<std::uint64_t> mask, token_id id) {
  mask[static_cast<std::size_t>(id) >> 6] |= std::uint64_t{1} << (id & 63);
}

}  // namespace

grammar_matcher::grammar_matcher(std::shared_ptr<const token_index> index)
    : index_(std::move(index)), parser_(index_->grammar_ref()) {
  parser_.start_at_root();
}

void grammar_matcher::reset() {
  parser_.start_at_root();
  step_sizes_.clear();
  is_ended_ = false;
}

bool grammar_matcher::try_accept_token(token_id token) {
  const grammar_vocab& v = index_->vocab();
  if (is_ended_ || token < 0 || token >= v.size()) return false;
  if (v.is_eos(token)) {
    if (!parser_.can_finish()) return false;
    is_ended_ = true;
    step_sizes_.push_back(0);
    return true;
  }
  const std::string& bytes = v.bytes(token);
  if (bytes.empty()) return false;
  return try_accept_bytes(bytes);
}

bool grammar_matcher::try_accept_bytes(std::string_view bytes) {
  if (is_ended_ || !parser_.try_advance_all(as_bytes(bytes))) return false;
  step_sizes_.push_back(static_cast<std::uint32_t>(bytes.size()));
  return true;
}

bool grammar_matcher::try_rollback(std::size_t num_steps) {
  if (num_steps > step_sizes_.size()) return false;
  for (std::size_t i = 0; i < num_steps; ++i) {
    const std::uint32_t n = step_sizes_.back();
    step_sizes_.pop_back();
    if (n == 0) is_ended_ = false;  // only EOS takes no bytes, and it is always last
    parser_.pop_sets(n);
  }
  return true;
}

std::vector<std::uint64_t> grammar_matcher::next_token_mask() {
  std::vector<std::uint64_t> mask(index_->vocab().num_mask_words(), 0);
  fill_next_token_mask(mask);
  return mask;
}

void grammar_matcher::fill_next_token_mask(std::span<std::uint64_t> mask) {
  std::fill(mask.begin(), mask.end(), 0);
  if (is_ended_) return;
  const auto& elements = index_->grammar_ref().elements();
  auto& positions = scratch_positions_;
  positions.clear();
  for (const auto& it : parser_.last_set())
    if (elements[it.pos].kind == element_kind::bytes) positions.push_back(it.pos);
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());

  auto& uncertain = scratch_uncertain_;
  uncertain.clear();
  for (auto pos : positions) {
    const position_tokens& t = index_->tokens_at(pos);
    if (!t.accepted_bits.empty()) {
      for (std::size_t w = 0; w < mask.size(); ++w) mask[w] |= t.accepted_bits[w];
    } else {
      for (token_id id : t.accepted_ids) set_bit(mask, id);
    }
    uncertain.insert(uncertain.end(), t.uncertain.begin(), t.uncertain.end());
  }
  if (!uncertain.empty()) check_uncertain(uncertain, mask);
  if (parser_.can_finish())
    for (token_id id : index_->vocab().eos_ids()) set_bit(mask, id);
}

// Runs each uncertain token not yet allowed through the parser, in sorted order, keeping
// the sets of the prefix it shares with the previous one; a prefix that died rejects
// every later token that starts with it.
void grammar_matcher::check_uncertain(std::vector<std::uint32_t>& uncertain, std::span<std::uint64_t> mask) {
  std::sort(uncertain.begin(), uncertain.end());
  uncertain.erase(std::unique(uncertain.begin(), uncertain.end()), uncertain.end());
  const grammar_vocab& v = index_->vocab();
  const std::string* prev = nullptr;
  std::size_t depth = 0;          // bytes of *prev pushed
  std::size_t dead_length = 0;    // *prev's first dead_length bytes cannot be consumed (0: none)
  for (std::uint32_t index : uncertain) {
    const token_id id = v.sorted()[index];
    if (mask_has(mask, id)) continue;
    const std::string& t = v.bytes(id);
    std::size_t common = 0;
    if (prev) {
      const std::size_t limit = std::min(prev->size(), t.size());
      while (common < limit && (*prev)[common] == t[common]) ++common;
    }
    if (dead_length > 0 && common >= dead_length) continue;
    dead_length = 0;
    const std::size_t keep = std::min(common, depth);
    parser_.pop_sets(depth - keep);
    depth = keep;
    prev = &t;
    bool is_dead = false;
    while (depth < t.size()) {
      if (!parser_.try_advance(static_cast<std::uint8_t>(t[depth]))) {
        is_dead = true;
        dead_length = depth + 1;
        break;
      }
      ++depth;
    }
    if (!is_dead) set_bit(mask, id);
  }
  parser_.pop_sets(depth);
}

}  // namespace inflight
