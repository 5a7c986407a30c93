#include "core/grammar/grammar_cache.hpp"

#include <nlohmann/json.hpp>

#include "core/grammar/front_ends.hpp"

namespace inflight {
namespace {

result<grammar> compile_choices(const std::string& text) {
  const auto list = nlohmann::json::parse(text, nullptr, false);
  if (list.is_discarded() || !list.is_array())
    return make_error(errc::invalid_argument, "a choice list must be a JSON array of strings");
  std::vector<std::string> choices;
  for (const auto& c : list) {
    if (!c.is_string()) return make_error(errc::invalid_argument, "a choice list must be a JSON array of strings");
    choices.push_back(c.get<std::string>());
  }
  return grammar_from_choices(choices);
}

}  // namespace

const char* to_string(grammar_kind kind) {
  switch (kind) {
    case grammar_kind::gbnf: return "gbnf";
    case grammar_kind::regex: return "regex";
    case grammar_kind::choice: return "choice";
    case grammar_kind::json_schema: return "json_schema";
    case grammar_kind::framed_json: return "framed_json";
  }
  return "gbnf";
}

result<grammar> try_compile(const grammar_spec& spec) {
  switch (spec.kind) {
    case grammar_kind::gbnf: return grammar_from_gbnf(spec.text);
    case grammar_kind::regex: return grammar_from_regex(spec.text);
    case grammar_kind::choice: return compile_choices(spec.text);
    case grammar_kind::json_schema: return grammar_from_json_schema(spec.text);
    case grammar_kind::framed_json: return grammar_from_framed_json(spec.text);
  }
  return make_error(errc::invalid_argument, "unknown grammar kind");
}

std::uint64_t hash_of(const grammar_spec& spec) {
  // FNV-1a over the kind byte and the text.
  std::uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&](std::uint8_t b) {
    h ^= b;
    h *= 0x100000001b3ull;
  };
  mix(static_cast<std::uint8_t>(spec.kind));
  for (char c : spec.text) mix(static_cast<std::uint8_t>(c));
  return h;
}

grammar_cache::grammar_cache(std::shared_ptr<const grammar_vocab> vocab, std::size_t max_entries)
    : vocab_(std::move(vocab)), max_entries_(max_entries == 0 ? 1 : max_entries) {}

result<std::shared_ptr<const token_index>> grammar_cache::try_get(const grammar_spec& spec) {
  const std::uint64_t h = hash_of(spec);
  {
    std::lock_guard lock(mutex_);
    auto [from, to] = by_hash_.equal_range(h);
    for (auto it = from; it != to; ++it) {
      if (it->second->spec != spec) continue;
      lru_.splice(lru_.begin(), lru_, it->second);
      ++num_hits_;
      return it->second->compiled;
    }
    ++num_misses_;
  }
  value compiled = [&]() -> value {
    auto g = try_compile(spec);
    if (!g) return std::unexpected(g.error());
    return std::make_shared<const token_index>(std::make_shared<const grammar>(std::move(*g)), vocab_, spec);
  }();
  std::lock_guard lock(mutex_);
  auto [from, to] = by_hash_.equal_range(h);
  for (auto it = from; it != to; ++it)
    if (it->second->spec == spec) return it->second->compiled;  // another thread was first
  lru_.push_front({spec, compiled});
  by_hash_.emplace(h, lru_.begin());
  while (lru_.size() > max_entries_) {
    auto last = std::prev(lru_.end());
    auto [a, b] = by_hash_.equal_range(hash_of(last->spec));
    for (auto it = a; it != b; ++it) {
      if (it->second == last) {
        by_hash_.erase(it);
        break;
      }
    }
    lru_.erase(last);
  }
  return compiled;
}

std::size_t grammar_cache::num_hits() const {
  std::lock_guard lock(mutex_);
  return num_hits_;
}

std::size_t grammar_cache::num_misses() const {
  std::lock_guard lock(mutex_);
  return num_misses_;
}

std::size_t grammar_cache::num_entries() const {
  std::lock_guard lock(mutex_);
  return lru_.size();
}

}  // namespace inflight
