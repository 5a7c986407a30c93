#pragma once
/// The drafters of speculative decoding behind one small interface: a drafter proposes up
/// to k tokens to follow a sequence, learns from the sequences that finish, and forgets
/// what it kept for a sequence that ended (a draft model's cache). The
/// engine checks each proposal against the target model (sample_rows in sampler.hpp), so a drafter
/// affects speed only, never output.
///
///   ngram   prompt lookup in the sequence itself (ngram_drafter.hpp)
///   suffix  the same lookup, then in the recent finished sequences of the server: agent
///           loops repeat tool calls, code edits repeat the code (suffix_drafter.hpp)
///   draft   a smaller model of the same vocabulary, greedy: not a drafter object but a
///           model, whose blocks the KV owner grants and whose steps the executor runs
///           (draft_plan.hpp, backends/draft_model.hpp)

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
  /// At most `k` tokens to follow `tokens` (sequence `id`'s prompt and output so far).
  virtual std::vector<token_id> propose(seq_id id, std::span<const token_id> tokens, int k) = 0;
  /// A sequence finished on its own (stop or length) with these tokens (prompt and output).
  virtual void on_finished(std::span<const token_id> tokens) { (void)tokens; }
  /// Sequence `id` ended, however: what the drafter keeps for it can go.
  virtual void forget(seq_id id) { (void)id; }
};

/// Prompt lookup as a drafter.
class ngram_drafter final : public drafter {
 public:
  explicit ngram_drafter(ngram_settings s = {}) : settings_(s) {}
  std::vector<token_id> propose(seq_id, std::span<const token_id> tokens, int k) override {
    return ngram_draft(tokens, k, settings_);
  }

 private:
  ngram_settings settings_;
};

/// A drafter by name ("ngram", "suffix"); an unknown name is an error naming the known ones.
result<std::unique_ptr<drafter>> try_make_drafter(std::string_view name, ngram_settings s = {});

}  // namespace inflight
