#pragma once
/// The drafters of speculative decoding behind one small interface: a drafter proposes up
/// to k tokens to follow a sequence, and learns from the sequences that finish. The
/// engine checks each proposal against the target model (sample_rows in sampler.hpp), so a drafter
/// affects speed only, never output.
///
///   ngram   prompt lookup in the sequence itself (ngram_drafter.hpp)
///   suffix  the same lookup, then in the recent finished sequences of the server: agent
///           loops repeat tool calls, code edits repeat the code (suffix_drafter.hpp)

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/types.hpp"
#include "core/engine/spec/ngram_drafter.hpp"

namespace inflight {

class drafter {
 public:
  virtual ~drafter() = default;
  /// At most `k` tokens to follow `tokens` (a sequence's prompt and output so far).
  virtual std::vector<token_id> propose(std::span<const token_id> tokens, int k) = 0;
  /// A sequence finished with these tokens (prompt and output).
  virtual void on_finished(std::span<const token_id> tokens) { (void)tokens; }
};

/// Prompt lookup as a drafter.
class ngram_drafter final : public drafter {
 public:
  explicit ngram_drafter(ngram_settings s = {}) : settings_(s) {}
  std::vector<token_id> propose(std::span<const token_id> tokens, int k) override {
    return ngram_draft(tokens, k, settings_);
  }

 private:
  ngram_settings settings_;
};

/// A drafter by name ("ngram", "suffix"); an unknown name is an error naming the known ones.
result<std::unique_ptr<drafter>> try_make_drafter(std::string_view name, ngram_settings s = {});

}  // namespace inflight
