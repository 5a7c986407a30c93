#include "core/grammar/token_index.hpp"

#include <algorithm>
#include <numeric>

#include "core/grammar/earley.hpp"

namespace inflight {

grammar_vocab::grammar_vocab(std::vector<std::string> token_bytes, std::vector<token_id> eos_ids)
    : bytes_(std::move(token_bytes)), eos_ids_(std::move(eos_ids)), first_index_(257, 0) {
  for (std::size_t id = 0; id < bytes_.size(); ++id)
    if (!bytes_[id].empty() && !is_eos(static_cast<token_id>(id))) sorted_.push_back(static_cast<token_id>(id));
  std::sort(sorted_.begin(), sorted_.end(), [&](token_id a, token_id b) {
    return bytes_[a] != bytes_[b] ? bytes_[a] < bytes_[b] : a < b;
  });
  lcp_.assign(sorted_.size(), 0);
  for (std::size_t i = 1; i < sorted_.size(); ++i) {
    const std::string& a = bytes_[sorted_[i - 1]];
    const std::string& b = bytes_[sorted_[i]];
    std::uint32_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    lcp_[i] = n;
  }
  // first_index_[b] = first sorted index whose first byte is >= b.
  std::size_t i = 0;
  for (int b = 0; b < 256; ++b) {
    first_index_[b] = static_cast<std::uint32_t>(i);
    while (i < sorted_.size() && static_cast<std::uint8_t>(bytes_[sorted_[i]][0]) == b) ++i;
  }
  first_index_[256] = static_cast<std::uint32_t>(sorted_.size());
}

bool grammar_vocab::is_eos(token_id id) const {
  return std::find(eos_ids_.begin(), eos_ids_.end(), id) != eos_ids_.end();
}

token_index::token_index(std::shared_ptr<const grammar> g, std::shared_ptr<const grammar_vocab> vocab,
                         std::optional<grammar_spec> source)
    : grammar_(std::move(g)), vocab_(std::move(vocab)), source_(std::move(source)) {
  const auto& elements = grammar_->elements();
  slot_of_pos_.assign(elements.size(), 0);
  std::uint32_t num_slots = 0;
  for (std::size_t pos = 0; pos < elements.size(); ++pos) {
    if (elements[pos].kind == element_kind::bytes) slot_of_pos_[pos] = num_slots++;
    if (elements[pos].kind == element_kind::ref && elements[pos].index == grammar_->root()) is_root_called_ = true;
  }
  once_ = std::make_unique<std::once_flag[]>(num_slots);
  lists_.resize(num_slots);
}

const position_tokens& token_index::tokens_at(std::uint32_t pos) const {
  const std::uint32_t slot = slot_of_pos_[pos];
  std::call_once(once_[slot], [&] {
    lists_[slot] = compute(pos);
    ++num_computed_;
  });
  return lists_[slot];
}

void token_index::warm_up() const {
  const auto& elements = grammar_->elements();
  for (std::uint32_t pos = 0; pos < elements.size(); ++pos)
    if (elements[pos].kind == element_kind::bytes) tokens_at(pos);
}

std::size_t token_index::num_computed() const { return num_computed_.load(); }

// Depth-first over the sorted vocabulary from one position (see the header comment).
position_tokens token_index::compute(std::uint32_t pos) const {
  const grammar_vocab& v = *vocab_;
  const auto& sorted = v.sorted();
  const auto& lcp = v.lcp();
  earley_parser parser(*grammar_);
  parser.start_at(pos);
  const byte_set& first = grammar_->byte_sets()[grammar_->elements()[pos].index];

  // Completing a root that nothing calls ends the text: nothing can follow, so a token
  // that goes on after it is rejected, not uncertain.
  const bool is_context_final = parser.context_rule() == grammar_->root() && !is_root_called_;

  std::vector<token_id> accepted;
  position_tokens out;
  // touched[k]: the context was touched after consuming some k' <= k bytes (k' >= 1).
  std::vector<std::uint8_t> touched{0};
  std::size_t depth = 0;
  for (int b = 0; b < 256; ++b) {
    if (!first.contains(static_cast<std::uint8_t>(b))) continue;
    const std::uint32_t begin = v.first_index(b);
    const std::uint32_t end = v.first_index(b + 1);
    parser.pop_sets(depth);
    depth = 0;
    touched.resize(1);
    for (std::uint32_t i = begin; i < end;) {
      const std::string& t = v.bytes(sorted[i]);
      const std::size_t common = i == begin ? 0 : std::min<std::size_t>(lcp[i], depth);
      parser.pop_sets(depth - common);
      depth = common;
      touched.resize(depth + 1);
      bool is_dead = false;
      while (depth < t.size()) {
        if (!parser.try_advance(static_cast<std::uint8_t>(t[depth]))) {
          is_dead = true;
          break;
        }
        ++depth;
        touched.push_back(touched.back() || (!is_context_final && parser.last_set_touched_context()));
      }
      if (!is_dead) {
        accepted.push_back(sorted[i++]);
        continue;
      }
      // Every token sharing the dead prefix t[0..depth] dies at the same byte.
      const bool is_uncertain = touched[depth] != 0;
      do {
        if (is_uncertain)
          out.uncertain.push_back(i);
        else
          ++out.num_rejected;
        ++i;
      } while (i < end && lcp[i] > depth);
    }
  }
  parser.pop_sets(depth);

  const std::size_t num_words = v.num_mask_words();
  if (accepted.size() > num_words) {
    out.accepted_bits.assign(num_words, 0);
    for (token_id id : accepted) out.accepted_bits[id >> 6] |= std::uint64_t{1} << (id & 63);
  } else {
    out.accepted_ids = std::move(accepted);
  }
  return out;
}

}  // namespace inflight
