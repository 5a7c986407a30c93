#pragma once
/// Compiling a constraint once: grammar_spec names what a request asked for,
/// try_compile() turns it into a grammar (a pure function, callable off the step loop),
/// and grammar_cache keeps the compiled grammars with their token_index for one
/// vocabulary, keyed by (kind, text), so that the same schema twice compiles once.

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/base/error.hpp"
#include "core/grammar/grammar.hpp"
#include "core/grammar/grammar_spec.hpp"
#include "core/grammar/token_index.hpp"

namespace inflight {

/// Compiles `spec` with its front-end.
result<grammar> try_compile(const grammar_spec& spec);

/// Default number of compiled grammars a cache keeps.
inline constexpr std::size_t default_grammar_cache_entries = 256;

/// Thread-safe. Errors are cached too: a bad schema sent again fails without compiling.
class grammar_cache {
 public:
  explicit grammar_cache(std::shared_ptr<const grammar_vocab> vocab,
                         std::size_t max_entries = default_grammar_cache_entries);

  /// The token_index of `spec`, compiled on a miss. Compiling runs outside the lock.
  result<std::shared_ptr<const token_index>> try_get(const grammar_spec& spec);

  std::size_t num_hits() const;
  std::size_t num_misses() const;
  std::size_t num_entries() const;

 private:
  using value = result<std::shared_ptr<const token_index>>;
  struct entry {
    grammar_spec spec;
    value compiled;
  };

  std::shared_ptr<const grammar_vocab> vocab_;
  std::size_t max_entries_;
  mutable std::mutex mutex_;
  std::list<entry> lru_;  // most recent first
  std::unordered_multimap<std::uint64_t, std::list<entry>::iterator> by_hash_;
  std::size_t num_hits_ = 0;
  std::size_t num_misses_ = 0;
};

/// Hash of (kind, text), the cache key.
std::uint64_t hash_of(const grammar_spec& spec);

}  // namespace inflight
