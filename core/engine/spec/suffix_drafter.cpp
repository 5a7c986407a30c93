#include "core/engine/spec/suffix_drafter.hpp"

#include <algorithm>

#include "core/engine/sampling/rng.hpp"

namespace inflight {

namespace {

std::uint64_t hash_of(std::span<const token_id> gram) {
  std::uint64_t h = 0x243f6a8885a308d3ULL;
  for (token_id t : gram) h = mix64(h ^ static_cast<std::uint32_t>(t));
  return h;
}

}  // namespace

suffix_drafter::suffix_drafter(suffix_settings s) : settings_(s) {
  settings_.ngram.min_n = std::max(1, settings_.ngram.min_n);
  settings_.ngram.max_n = std::max(settings_.ngram.min_n, settings_.ngram.max_n);
}

const suffix_drafter::entry* suffix_drafter::find(std::uint64_t serial) const {
  if (corpus_.empty() || serial < corpus_.front().serial) return nullptr;  // left the corpus
  const std::size_t i = serial - corpus_.front().serial;
  return i < corpus_.size() ? &corpus_[i] : nullptr;
}

std::vector<token_id> suffix_drafter::propose(seq_id, std::span<const token_id> tokens, int k) {
  if (k <= 0) return {};
  if (auto own = ngram_draft(tokens, k, settings_.ngram); !own.empty()) return own;
  // The corpus is looked up by the sequence's last max_n tokens (the index's one length);
  // shorter suffixes only in the sequence itself, above.
  const auto size = static_cast<std::ptrdiff_t>(tokens.size());
  const std::ptrdiff_t n = settings_.ngram.max_n;
  if (size < n) return {};
  const auto suffix = tokens.subspan(static_cast<std::size_t>(size - n));
  const auto it = index_.find(hash_of(suffix));
  if (it == index_.end()) return {};
  for (auto p = it->second.rbegin(); p != it->second.rend(); ++p) {  // the latest first
    const entry* e = find(p->serial);
    if (!e) continue;
    const auto& doc = e->tokens;
    if (!std::equal(suffix.begin(), suffix.end(), doc.begin() + static_cast<std::ptrdiff_t>(p->position))) continue;
    const std::size_t from = p->position + static_cast<std::size_t>(n);
    if (from >= doc.size()) continue;  // the gram ends its sequence: nothing followed it
    const std::size_t to = std::min(doc.size(), from + static_cast<std::size_t>(k));
    return {doc.begin() + static_cast<std::ptrdiff_t>(from), doc.begin() + static_cast<std::ptrdiff_t>(to)};
  }
  return {};
}

std::size_t suffix_drafter::num_grams(std::size_t size) const {
  const auto n = static_cast<std::size_t>(settings_.ngram.max_n);
  return size > n ? size - n : 0;  // a gram at the very end has nothing after it
}

void suffix_drafter::index(const entry& e) {
  const auto n = static_cast<std::size_t>(settings_.ngram.max_n);
  const std::size_t count = num_grams(e.tokens.size());
  for (std::size_t i = 0; i < count; ++i)
    index_[hash_of(std::span(e.tokens).subspan(i, n))].push_back({e.serial, i});
  num_places_ += count;
  num_live_places_ += count;
}

void suffix_drafter::on_finished(std::span<const token_id> tokens) {
  if (num_grams(tokens.size()) == 0 || tokens.size() > settings_.max_tokens) return;  // nothing to follow, or too big
  corpus_.push_back({next_serial_++, {tokens.begin(), tokens.end()}});
  num_tokens_ += tokens.size();
  index(corpus_.back());
  while (corpus_.size() > settings_.max_sequences || num_tokens_ > settings_.max_tokens) {
    num_tokens_ -= corpus_.front().tokens.size();
    num_live_places_ -= num_grams(corpus_.front().tokens.size());
    corpus_.pop_front();  // its places stay until the index is built again
  }
  if (num_places_ > 2 * num_live_places_ + 1024) {
    index_.clear();
    num_places_ = num_live_places_ = 0;
    for (const entry& e : corpus_) index(e);
  }
}

result<std::unique_ptr<drafter>> try_make_drafter(std::string_view name, ngram_settings s) {
  if (name == "ngram") return std::make_unique<ngram_drafter>(s);
  if (name == "suffix") return std::make_unique<suffix_drafter>(suffix_settings{.ngram = s});
  if (name == "draft")
    return make_error(errc::invalid_argument, "the draft drafter needs a draft model: speculative.draft_model");
  return make_error(errc::invalid_argument,
                    "unknown drafter '" + std::string(name) + "' (known: ngram, suffix)");
}

}  // namespace inflight
