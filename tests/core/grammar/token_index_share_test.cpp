// The copies of a bounded repetition share their token lists (token_index.hpp): the
// lists and the masks must be exactly what classifying every copy on its own gives.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <set>

#include "tests/core/grammar/grammar_test_util.hpp"

namespace inflight::grammar_test {
namespace {

// The synthetic vocabulary plus long tokens (up to 40 bytes): runs of letters, some
// closing a string and going on, some with escapes, so that from the copies near a
// chain's end long tokens are rejected that the outer copies accept.
std::shared_ptr<const grammar_vocab> vocab_with_long_tokens() {
  auto base = synthetic_vocab(1500, 21);
  std::vector<std::string> tokens;
  for (token_id id = 0; id < base->size(); ++id) tokens.push_back(base->bytes(id));
  tokens.pop_back();  // EOS goes last again below
  std::mt19937_64 rng(5);
  const std::string letters = "abcdexyz";
  for (std::size_t len = 6; len <= 40; ++len) {
    for (int variant = 0; variant < 6; ++variant) {
      std::string t;
      for (std::size_t i = 0; i < len; ++i) t += letters[rng() % letters.size()];
      if (variant == 1) t += "\"";
      if (variant == 2) t += "\",";
      if (variant == 3) t.replace(len / 2, 2, "\\n");
      if (variant == 4) t = std::string(len, 'a');
      if (variant == 5) t += "\"]";
      tokens.push_back(t);
    }
  }
  tokens.push_back("");
  const token_id eos = static_cast<token_id>(tokens.size() - 1);
  return std::make_shared<const grammar_vocab>(std::move(tokens), std::vector<token_id>{eos});
}

std::set<token_id> accepted_set(const position_tokens& t) {
  std::set<token_id> out(t.accepted_ids.begin(), t.accepted_ids.end());
  for (std::size_t w = 0; w < t.accepted_bits.size(); ++w)
    for (int b = 0; b < 64; ++b)
      if ((t.accepted_bits[w] >> b) & 1) out.insert(static_cast<token_id>(w * 64 + static_cast<std::size_t>(b)));
  return out;
}

struct compared {
  std::size_t num_shared = 0;
  std::size_t num_differing_from_rep = 0;  // shared positions whose lists differ from the outermost copy's
};

// Every bytes position: the shared index's lists equal the lists of an index that
// classifies each copy by itself.
compared compare_all_positions(std::shared_ptr<const grammar> g, std::shared_ptr<const grammar_vocab> vocab) {
  token_index shared(g, vocab);
  token_index alone(g, vocab, std::nullopt, false);
  REQUIRE(alone.num_shared() == 0);
  compared c;
  c.num_shared = shared.num_shared();
  const auto& elements = g->elements();
  std::vector<std::uint32_t> rep_of(elements.size(), 0);
  for (const auto& chain : g->repeats())
    for (std::size_t k = 1; k + 1 < chain.begins.size(); ++k)
      for (std::uint32_t pos = chain.begins[k]; pos < chain.ends[k]; ++pos)
        rep_of[pos] = chain.begins.back() + (pos - chain.begins[k]);
  for (std::uint32_t pos = 0; pos < elements.size(); ++pos) {
    if (elements[pos].kind != element_kind::bytes) continue;
    const position_tokens& a = shared.tokens_at(pos);
    const position_tokens& b = alone.tokens_at(pos);
    INFO("position " << pos);
    REQUIRE(accepted_set(a) == accepted_set(b));
    REQUIRE(a.uncertain == b.uncertain);
    REQUIRE(a.num_rejected == b.num_rejected);
    REQUIRE(a.accepted_bits.empty() == b.accepted_bits.empty());
    if (rep_of[pos] != 0) {
      const position_tokens& rep = alone.tokens_at(rep_of[pos]);
      if (accepted_set(rep) != accepted_set(b) || rep.uncertain != b.uncertain) ++c.num_differing_from_rep;
    }
  }
  return c;
}

}  // namespace

TEST_CASE("token index: a maxLength string's copies share lists, and every list is what the copy alone gives",
          "[core][grammar]") {
  auto vocab = vocab_with_long_tokens();
  auto g = must(grammar_from_json_schema(R"({"type": "object", "properties": {"s": {"type": "string", "maxLength": 30}},
                                             "required": ["s"]})"));
  REQUIRE(g->repeats().size() == 1);
  CHECK(g->repeats()[0].begins.size() == 30);
  const compared c = compare_all_positions(g, vocab);
  CHECK(c.num_shared > 0);
  // Near the chain's end long tokens are classified differently from the outermost copy:
  // copying the outermost copy's lists wholesale would fail the comparison above.
  CHECK(c.num_differing_from_rep > 0);
}

TEST_CASE("token index: copies deeper than the longest token hold the outermost copy's lists themselves",
          "[core][grammar]") {
  auto vocab = vocab_with_long_tokens();  // the longest token has 42 bytes
  std::size_t longest = 0;
  for (token_id id = 0; id < vocab->size(); ++id) longest = std::max(longest, vocab->bytes(id).size());
  REQUIRE(longest == 42);
  auto g = must(grammar_from_json_schema(R"({"type": "string", "maxLength": 60})"));
  REQUIRE(g->repeats().size() == 1);
  const auto& chain = g->repeats()[0];
  const std::size_t outer = chain.begins.size() - 1;
  token_index index(g, vocab);
  const auto& elements = g->elements();
  int num_same = 0, num_own = 0;
  for (std::size_t k = 1; k < outer; ++k) {
    for (std::uint32_t pos = chain.begins[k]; pos < chain.ends[k]; ++pos) {
      if (elements[pos].kind != element_kind::bytes) continue;
      const position_tokens* own = &index.tokens_at(pos);
      const position_tokens* rep = &index.tokens_at(chain.begins[outer] + (pos - chain.begins[k]));
      INFO("copy " << k << ", position " << pos);
      if (k + 1 > longest) {  // every token is at most k bytes: the same lists, one storage
        CHECK(own == rep);
        ++num_same;
      } else {
        CHECK(own != rep);
        ++num_own;
      }
    }
  }
  CHECK(num_same > 0);
  CHECK(num_own > 0);
  const compared c = compare_all_positions(g, vocab);  // and they are the right lists
  CHECK(c.num_shared > 0);
}

TEST_CASE("token index: shared lists equal unshared ones for nested, GBNF and regex repetitions", "[core][grammar]") {
  auto vocab = vocab_with_long_tokens();
  const std::vector<std::shared_ptr<const grammar>> grammars = {
      must(grammar_from_json_schema(R"({"type": "array", "maxItems": 6,
          "items": {"type": "object", "properties": {"t": {"type": "string", "minLength": 2, "maxLength": 12}},
                    "required": ["t"]}})")),
      must(grammar_from_json_schema(R"({"type": "string", "maxLength": 45})")),
      must(grammar_from_gbnf("root ::= \"[\" item{0,9} \"]\"\nitem ::= [a-e] | \"xy\" | \"\\\"\"")),
      must(grammar_from_gbnf("root ::= (\"ab\" | [c-z]){3,25} \",\"")),
      must(grammar_from_regex("[a-z]{0,20}\"?[0-9]{1,8}")),
  };
  std::size_t num_shared = 0;
  for (std::size_t i = 0; i < grammars.size(); ++i) {
    INFO("grammar " << i);
    num_shared += compare_all_positions(grammars[i], vocab).num_shared;
  }
  CHECK(num_shared > 0);
}

TEST_CASE("token index: a repetition of a named rule shares its copies", "[core][grammar]") {
  auto g = must(grammar_from_gbnf("root ::= item{0,9}\nitem ::= [a-e] \"x\""));
  REQUIRE(g->repeats().size() == 1);
  CHECK(g->repeats()[0].begins.size() == 9);
}

TEST_CASE("token index: masks with shared lists equal masks without, along random walks", "[core][grammar]") {
  auto vocab = vocab_with_long_tokens();
  auto g = must(grammar_from_json_schema(R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 25}, "tags": {"type": "array", "maxItems": 4,
      "items": {"type": "string", "maxLength": 8}}}, "required": ["name", "tags"]})"));
  auto shared = std::make_shared<const token_index>(g, vocab);
  auto alone = std::make_shared<const token_index>(g, vocab, std::nullopt, false);
  REQUIRE(shared->num_shared() > 0);
  std::mt19937_64 rng(11);
  for (int walk = 0; walk < 30; ++walk) {
    grammar_matcher a(shared);
    grammar_matcher b(alone);
    for (int step = 0; step < 60; ++step) {
      const auto mask = a.next_token_mask();
      REQUIRE(mask == b.next_token_mask());
      if (step % 10 == 0) REQUIRE(mask == brute_force_mask(a));
      const auto allowed = allowed_ids(mask, vocab->size());
      if (allowed.empty()) break;
      // Prefer long tokens half of the time, to reach the strings' ends.
      std::vector<token_id> pick = allowed;
      if (rng() % 2) {
        std::erase_if(pick, [&](token_id id) { return vocab->bytes(id).size() < 6; });
        if (pick.empty()) pick = allowed;
      }
      const token_id id = pick[rng() % pick.size()];
      if (vocab->is_eos(id)) break;
      REQUIRE(a.try_accept_token(id));
      REQUIRE(b.try_accept_token(id));
    }
  }
}

}  // namespace inflight::grammar_test
