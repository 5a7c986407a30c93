#include "core/engine/spec/draft_verify.hpp"

#include <algorithm>
#include <cassert>

namespace inflight {

namespace {

token_id argmax(const std::vector<float>& row) {
  return static_cast<token_id>(std::max_element(row.begin(), row.end()) - row.begin());  // first of ties
}

/// A draw from `p`, leaving out `excluded` (-1: none) and renormalising over the rest.
token_id draw(const std::vector<float>& p, token_id excluded, counter_rng& rng) {
  double total = 0.0;
  for (std::size_t t = 0; t < p.size(); ++t)
    if (static_cast<token_id>(t) != excluded) total += p[t];
  if (total <= 0.0) return argmax(p);  // all mass on the excluded token: it was kept, never here
  double u = rng.next_unit() * total;
  token_id last = -1;
  for (std::size_t t = 0; t < p.size(); ++t) {
    if (static_cast<token_id>(t) == excluded || p[t] <= 0.0f) continue;
    last = static_cast<token_id>(t);
    u -= p[t];
    if (u < 0.0) return last;
  }
  return last;  // rounding left a sliver: the last token with mass
}

}  // namespace

draft_verdict verify_greedy(std::span<const token_id> draft, std::span<const std::vector<float>> rows) {
  assert(rows.size() == draft.size() + 1);
  draft_verdict v;
  while (v.num_accepted < int(draft.size()) && argmax(rows[v.num_accepted]) == draft[v.num_accepted]) ++v.num_accepted;
  v.next = argmax(rows[v.num_accepted]);
  return v;
}

draft_verdict verify_sampled(std::span<const token_id> draft, std::span<const std::vector<float>> probs,
                             counter_rng& rng) {
  assert(probs.size() == draft.size() + 1);
  draft_verdict v;
  for (; v.num_accepted < int(draft.size()); ++v.num_accepted) {
    const auto& p = probs[v.num_accepted];
    const token_id x = draft[v.num_accepted];
    const double keep = x >= 0 && std::size_t(x) < p.size() ? p[x] : 0.0;
    if (rng.next_unit() >= keep) {
      v.next = draw(p, x, rng);
      return v;
    }
  }
  v.next = draw(probs[v.num_accepted], -1, rng);
  return v;
}

}  // namespace inflight
