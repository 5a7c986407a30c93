#include "core/engine/spec/suffix_drafter.hpp"

#include <algorithm>

#include "core/engine/sampling/rng.hpp"

namespace inflight {

namespace {

/// The places of one n-gram a proposal looks at, at most.
constexpr int max_places_tried = 64;

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
  const slot* found = find_slot(hash_of(suffix));
  if (found == nullptr) return {};
  // The latest first; a common n-gram has many places: the latest few are enough.
  std::int32_t i = found->latest;
  for (int num_tried = 0; i >= 0 && num_tried < max_places_tried; ++num_tried) {
    const place& p = places_[std::size_t(i)];
    i = p.older;
    const entry* e = find(p.serial);
    if (!e) break;  // left the corpus, and so did every older place
    const auto& doc = e->tokens;
    if (!std::equal(suffix.begin(), suffix.end(), doc.begin() + static_cast<std::ptrdiff_t>(p.position))) continue;
    const std::size_t from = p.position + static_cast<std::size_t>(n);
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

const suffix_drafter::slot* suffix_drafter::find_slot(std::uint64_t hash) const {
  if (table_.empty()) return nullptr;
  const std::size_t mask = table_.size() - 1;
  for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
    if (table_[i].latest < 0) return nullptr;
    if (table_[i].hash == hash) return &table_[i];
  }
}

suffix_drafter::slot& suffix_drafter::slot_of(std::uint64_t hash) {
  if (2 * (num_used_slots_ + 1) > table_.size()) {  // at most half full: grow, and place every slot again
    std::vector<slot> old(std::max<std::size_t>(64, table_.size() * 2));
    old.swap(table_);
    for (const slot& s : old) {
      if (s.latest < 0) continue;
      const std::size_t mask = table_.size() - 1;
      std::size_t i = s.hash & mask;
      while (table_[i].latest >= 0) i = (i + 1) & mask;
      table_[i] = s;
    }
  }
  const std::size_t mask = table_.size() - 1;
  std::size_t i = hash & mask;
  while (table_[i].latest >= 0 && table_[i].hash != hash) i = (i + 1) & mask;
  return table_[i];
}

void suffix_drafter::clear_index() {
  table_.clear();
  num_used_slots_ = 0;
  places_.clear();
  num_live_places_ = 0;
}

void suffix_drafter::index(const entry& e) {
  const auto n = static_cast<std::size_t>(settings_.ngram.max_n);
  const std::size_t count = num_grams(e.tokens.size());
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t hash = hash_of(std::span(e.tokens).subspan(i, n));
    slot& s = slot_of(hash);
    if (s.latest < 0) {
      s.hash = hash;
      ++num_used_slots_;
    }
    places_.push_back({e.serial, static_cast<std::uint32_t>(i), s.latest});
    s.latest = static_cast<std::int32_t>(places_.size() - 1);
  }
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
  if (places_.size() > 2 * num_live_places_ + 1024) {  // the places of sequences gone outnumber the rest
    clear_index();
    for (const entry& e : corpus_) index(e);
  }
}

result<std::unique_ptr<drafter>> try_make_drafter(std::string_view name, ngram_settings s) {
  if (name == "ngram") return std::make_unique<ngram_drafter>(s);
  if (name == "suffix") return std::make_unique<suffix_drafter>(suffix_settings{.ngram = s});
  if (name == "draft")
    return make_error(errc::invalid_argument, "the draft drafter needs a draft model: speculative.draft_model");
  return make_error(errc::invalid_argument, "unknown speculative method '" + std::string(name) +
                                                "' (built in: ngram, suffix, draft; or a drafter plugin: none of that name)");
}

}  // namespace inflight
