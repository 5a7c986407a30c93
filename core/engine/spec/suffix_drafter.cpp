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

void suffix_drafter::on_finished(std::span<const token_id> tokens) {
  const auto n = static_cast<std::size_t>(settings_.ngram.max_n);
  if (tokens.size() <= n || tokens.size() > settings_.max_tokens) return;  // nothing to follow a gram, or too big
  entry e{next_serial_++, {tokens.begin(), tokens.end()}};
  for (std::size_t i = 0; i + n < tokens.size(); ++i)
    index_[hash_of(tokens.subspan(i, n))].push_back({e.serial, i});
  num_tokens_ += e.tokens.size();
  corpus_.push_back(std::move(e));
  while (corpus_.size() > settings_.max_sequences || num_tokens_ > settings_.max_tokens) drop_oldest();
}

void suffix_drafter::drop_oldest() {
  const entry& old = corpus_.front();
  const auto n = static_cast<std::size_t>(settings_.ngram.max_n);
  for (std::size_t i = 0; i + n < old.tokens.size(); ++i) {
    auto it = index_.find(hash_of(std::span(old.tokens).subspan(i, n)));
    if (it == index_.end()) continue;
    std::erase_if(it->second, [&](const place& p) { return p.serial == old.serial; });
    if (it->second.empty()) index_.erase(it);
  }
  num_tokens_ -= old.tokens.size();
  corpus_.pop_front();
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
