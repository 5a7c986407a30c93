#pragma once
/// Turns a request's token ids into text deltas: incremental detokenization (never a
/// broken UTF-8 character) plus stop strings. Text that could be the start of a stop
/// string is held back until it is clear either way, so a client never sees a stop
/// string or a prefix of one that later matched.

#include <string>
#include <vector>

#include "core/model/tokenizer/tokenizer.hpp"

namespace inflight {

class text_stream {
 public:
  /// `prev` is the token before the first generated one (the prompt's last), which
  /// decides e.g. whether a leading space is dropped after BOS.
  text_stream(const tokenizer& tok, std::vector<std::string> stop_strings, token_id prev);

  struct delta {
    std::string text;      ///< safe to send now (may be empty)
    bool is_stopped = false;  ///< a stop string matched; text ends before it
    std::string stop;         ///< is_stopped: the stop string that matched
  };

  /// Adds one generated token.
  delta push(token_id token);
  /// End of generation: releases whatever is held.
  std::string finish();
  /// All text released so far.
  const std::string& text() const { return released_; }

 private:
  delta release(bool at_end);

  incremental_decoder decoder_;
  std::vector<std::string> stops_;
  std::size_t max_stop_len_ = 0;
  std::string held_;
  std::string released_;
  bool is_stopped_ = false;
};

}  // namespace inflight
