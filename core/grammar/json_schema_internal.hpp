#pragma once
/// Pieces of the JSON Schema front-end shared by its files: JSON text expressions
/// (strings, numbers, integer ranges) and the whitespace policy.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/error.hpp"
#include "core/grammar/grammar.hpp"

namespace inflight::json_text {

/// The whitespace policy: one optional space after ',' and ':' and nowhere else.
gexpr separator_space();

/// One JSON string character: any code point but '"', '\\' and controls, or an escape
/// (\" \\ \/ \b \f \n \r \t, \uXXXX of a non-surrogate, or a \uD8xx\uDCxx pair).
/// Inlined at each use (not a shared rule) so the token cache can see across characters.
gexpr string_char();

/// A JSON string whose character count is within [min_count, max_count].
gexpr string_of_length(std::uint32_t min_count, std::optional<std::uint32_t> max_count);
/// The same, written with `b`'s block rules when the counts are large (see counted()).
gexpr string_of_length(grammar_builder& b, std::uint32_t min_count, std::optional<std::uint32_t> max_count);

/// A JSON string other than each of `names`, for the names of additional properties.
/// Written canonically (plain characters, \" and \\; no other escapes, no control
/// characters), so that no other spelling of a declared name can slip through.
gexpr string_not_in(const std::vector<std::string>& names);

/// A JSON string whose decoded content is matched in full by `content` (an expression
/// over raw UTF-8, e.g. from a regex); quotes, backslashes and controls in `content`
/// become their escapes.
gexpr string_with_content(const gexpr& content);

/// Any JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?
gexpr number();

/// JSON integers n with lo <= n <= hi (either may be absent), without leading zeros.
gexpr integer_range(std::optional<std::int64_t> lo, std::optional<std::int64_t> hi);

/// An integral bound of a number: value and whether it is exclusive.
struct number_bound {
  std::int64_t value = 0;
  bool is_exclusive = false;
};

/// JSON numbers v within the bounds, written without an exponent.
gexpr bounded_number(std::optional<number_bound> lo, std::optional<number_bound> hi);

/// A string `format` this compiler writes: the regex of its strings (exact, or a subset of
/// the format where the format is wider, see docs/structured-outputs.md) and their lengths
/// in code points.
struct string_format_info {
  std::string_view regex;
  std::uint32_t min_length = 0;
  std::optional<std::uint32_t> max_length;
};

/// The string `format` named, or nullopt.
std::optional<string_format_info> string_format(std::string_view format);

/// An e-mail address regex (a subset of format "email") whose every match has between
/// `min_length` and `max_length` characters; nullopt when no address of the subset fits.
std::optional<std::string> bounded_email(std::uint32_t min_length, std::optional<std::uint32_t> max_length);

/// x{lo,hi} for any counts: past a few hundred, written as repetitions of a block of
/// copies (a named rule), so that a count of a million costs a few thousand elements.
gexpr counted(grammar_builder& b, const gexpr& x, std::uint32_t lo, std::optional<std::uint32_t> hi,
              const std::string& name);

/// `content` (a sequence over UTF-8 bytes) cut to [min_length, max_length] code points:
/// as it is when every match already fits; else when at most one of its parts has a
/// variable length and that part repeats one code point, its count narrowed. nullopt for
/// other contents; alt{} when no length fits.
std::optional<gexpr> fit_length(grammar_builder& b, const gexpr& content, std::uint32_t min_length,
                                std::optional<std::uint32_t> max_length);

/// Non-negative multiples of k with at most `max_digits` digits, and their negations.
gexpr integer_multiples(grammar_builder& b, std::uint32_t k, std::uint32_t max_digits);

}  // namespace inflight::json_text
