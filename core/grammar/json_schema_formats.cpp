// JSON Schema formats, large counts and multiples for the JSON Schema front-end (see
// json_schema_internal.hpp).
#include <algorithm>
#include <map>
#include <string>

#include "core/grammar/json_schema_internal.hpp"

namespace inflight::json_text {
namespace {

// Days as each month has them, February 29 only in leap years (divisible by 4, and
// centuries only when divisible by 400). Seconds stop at 59: RFC 3339's leap second
// is valid only at 23:59:60 UTC, which no fixed pattern of local times can say.
#define INFLIGHT_LEAP_YEAR R"((\d\d(0[48]|[2468][048]|[13579][26])|(00|0[48]|[2468][048]|[13579][26])00))"
#define INFLIGHT_DATE                                                                                         \
  R"((\d{4}-((0[13578]|1[02])-(0[1-9]|[12]\d|3[01])|(0[469]|11)-(0[1-9]|[12]\d|30)|02-(0[1-9]|1\d|2[0-8]))|)" \
  INFLIGHT_LEAP_YEAR R"(-02-29))"
#define INFLIGHT_TIME R"(([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d))"
static constexpr std::string_view date = INFLIGHT_DATE;
static constexpr std::string_view time = INFLIGHT_TIME;
static constexpr std::string_view date_time = INFLIGHT_DATE "T" INFLIGHT_TIME;
#undef INFLIGHT_LEAP_YEAR
#undef INFLIGHT_DATE
#undef INFLIGHT_TIME
static constexpr std::string_view uuid =
    R"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})";
static constexpr std::string_view email =
    R"([A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+)";
constexpr std::string_view ipv4 = R"((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})";
// The full form only (eight groups): a subset of RFC 4291's spellings.
constexpr std::string_view ipv6 = R"([0-9a-f]{1,4}(:[0-9a-f]{1,4}){7})";
// At most four labels of at most 61 characters: within RFC 1123's 253.
constexpr std::string_view hostname =
    R"([A-Za-z0-9]([A-Za-z0-9-]{0,59}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,59}[A-Za-z0-9])?){0,3})";
// RFC 3986 subsets: scheme "://" host, port, path, query and fragment of unreserved and
// sub-delimiter characters and %-escapes (no "'", which URI templates exclude).
#define INFLIGHT_PCHAR R"(([A-Za-z0-9._~!$&*+,;=:@-]|%[0-9A-Fa-f]{2}))"
#define INFLIGHT_QCHAR R"(([A-Za-z0-9._~!$&*+,;=:@/?-]|%[0-9A-Fa-f]{2}))"
#define INFLIGHT_TAIL "(/" INFLIGHT_PCHAR "*)*(\\?" INFLIGHT_QCHAR "*)?(#" INFLIGHT_QCHAR "*)?"
constexpr std::string_view uri =
    R"([A-Za-z][A-Za-z0-9+.-]*://[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:[0-9]{1,5})?)" INFLIGHT_TAIL;
// A URI, or a relative reference whose first segment has no ':'.
constexpr std::string_view uri_reference =
    R"([A-Za-z][A-Za-z0-9+.-]*://[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:[0-9]{1,5})?)" INFLIGHT_TAIL
    R"(|/?([A-Za-z0-9._~!$&*+,;=@-]|%[0-9A-Fa-f]{2})+)" INFLIGHT_TAIL;
#undef INFLIGHT_PCHAR
#undef INFLIGHT_QCHAR
#undef INFLIGHT_TAIL
// http(s) with a domain name: what ajv-formats' "url" takes.
constexpr std::string_view url =
    R"(https?://[a-z0-9]+(-[a-z0-9]+)*(\.[a-z0-9]+(-[a-z0-9]+)*)*\.[a-z]{2,}(:[0-9]{2,5})?(/[A-Za-z0-9._~-]*)*)";
constexpr std::string_view byte = R"(([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)";
// ISO 8601 durations in RFC 3339's order: date part, time part, or weeks.
constexpr std::string_view duration =
    R"(P((\d+Y(\d+M)?(\d+D)?|\d+M(\d+D)?|\d+D)(T(\d+H(\d+M)?(\d+S)?|\d+M(\d+S)?|\d+S))?|T(\d+H(\d+M)?(\d+S)?|\d+M(\d+S)?|\d+S)|\d+W))";
// Letters, digits, space, '_' and '-': regular expressions that match themselves.
constexpr std::string_view regex = R"([A-Za-z0-9 _-]*)";
constexpr std::string_view json_pointer = R"((/([^~/]|~[01])*)*)";
constexpr std::string_view relative_json_pointer = R"((0|[1-9][0-9]*)(#|(/([^~/]|~[01])*)*))";

}  // namespace

std::optional<string_format_info> string_format(std::string_view format) {
  static const std::map<std::string_view, string_format_info, std::less<>> formats{
      {"date", {date, 10, 10}},
      {"time", {time, 9, std::nullopt}},
      {"iso-time", {time, 9, std::nullopt}},
      {"date-time", {date_time, 20, std::nullopt}},
      {"iso-date-time", {date_time, 20, std::nullopt}},
      {"uuid", {uuid, 36, 36}},
      {"email", {email, 5, std::nullopt}},
      {"idn-email", {email, 5, std::nullopt}},
      {"ipv4", {ipv4, 7, 15}},
      {"ipv6", {ipv6, 15, 39}},
      {"hostname", {hostname, 1, 247}},
      {"idn-hostname", {hostname, 1, 247}},
      {"uri", {uri, 4, std::nullopt}},
      {"iri", {uri, 4, std::nullopt}},
      {"uri-reference", {uri_reference, 1, std::nullopt}},
      {"iri-reference", {uri_reference, 1, std::nullopt}},
      {"uri-template", {uri, 4, std::nullopt}},
      {"url", {url, 11, std::nullopt}},
      {"byte", {byte, 0, std::nullopt}},
      {"duration", {duration, 3, std::nullopt}},
      {"regex", {regex, 0, std::nullopt}},
      {"json-pointer", {json_pointer, 0, std::nullopt}},
      {"relative-json-pointer", {relative_json_pointer, 1, std::nullopt}},
  };
  auto it = formats.find(format);
  if (it == formats.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> bounded_email(std::uint32_t min_length, std::optional<std::uint32_t> max_length) {
  // local "@" label "." label: a local part of [lo_local, hi_local] characters carries the
  // minimum; the domain's two labels share what the maximum leaves (each at most 63).
  const std::uint32_t lo_local = std::max<std::uint32_t>(1, min_length > 4 ? min_length - 4 : 1);
  if (lo_local > 64) return std::nullopt;
  const std::uint32_t hi = max_length.value_or(64 + 2 + 63 + 63);
  if (hi < lo_local + 4) return std::nullopt;
  const std::uint32_t budget = hi - 2;  // less "@" and "."
  const std::uint32_t hi_local = std::clamp<std::uint32_t>(budget / 2, lo_local, 64);
  const std::uint32_t rest = budget - hi_local;  // >= 2
  const std::uint32_t hi_top = std::clamp<std::uint32_t>(rest / 2, 1, 63);
  const std::uint32_t hi_label = std::min<std::uint32_t>(rest - hi_top, 63);
  return "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]{" + std::to_string(lo_local) + "," + std::to_string(hi_local) + "}@[A-Za-z0-9]{1," +
         std::to_string(hi_label) + "}\\.[A-Za-z]{1," + std::to_string(hi_top) + "}";
}

gexpr counted(grammar_builder& b, const gexpr& x, std::uint32_t lo, std::optional<std::uint32_t> hi,
              const std::string& name) {
  constexpr std::uint32_t block = 256;
  constexpr std::uint32_t threshold = 2 * block;
  if (hi ? *hi <= threshold : lo <= threshold) return g_repeat(x, lo, hi);
  const std::uint32_t block_rule = b.declare(name + "#block");
  b.define(block_rule, g_repeat(x, block, block));
  const gexpr blocks = g_ref(block_rule);
  // x{n}: n / block blocks, then the rest.
  const auto exactly = [&](std::uint32_t n) {
    return g_seq({counted(b, blocks, n / block, n / block, name + "^"), g_repeat(x, n % block, n % block)});
  };
  if (!hi) return g_seq({exactly(lo), g_star(x)});
  // x{0,m}, m = q * block + r: fewer than q blocks and a partial one, or q blocks and at
  // most r more (one way to write each length).
  const std::uint32_t m = *hi - lo;
  const std::uint32_t q = m / block;
  const std::uint32_t r = m % block;
  gexpr up_to = q == 0 ? g_repeat(x, 0, r)
                       : g_alt({g_seq({counted(b, blocks, 0, q - 1, name + "^"), g_repeat(x, 0, block - 1)}),
                                g_seq({counted(b, blocks, q, q, name + "^"), g_repeat(x, 0, r)})});
  return lo == 0 ? up_to : g_seq({exactly(lo), std::move(up_to)});
}

namespace {

constexpr std::uint64_t unbounded_length = UINT64_MAX;

// The least and most code points `e` matches (a continuation byte adds none).
std::pair<std::uint64_t, std::uint64_t> length_range(const gexpr& e) {
  switch (e.kind) {
    case gexpr_kind::bytes: {
      bool is_continuation = true;
      for (int b = 0; b < 256 && is_continuation; ++b)
        if (e.bytes.contains(static_cast<std::uint8_t>(b)) && (b < 0x80 || b > 0xBF)) is_continuation = false;
      return is_continuation ? std::pair<std::uint64_t, std::uint64_t>{0, 0} : std::pair<std::uint64_t, std::uint64_t>{1, 1};
    }
    case gexpr_kind::ref: return {0, unbounded_length};
    case gexpr_kind::seq: {
      std::uint64_t lo = 0, hi = 0;
      for (const auto& x : e.items) {
        auto [a, b] = length_range(x);
        lo += a;
        hi = hi == unbounded_length || b == unbounded_length ? unbounded_length : hi + b;
      }
      return {lo, hi};
    }
    case gexpr_kind::alt: {
      if (e.items.empty()) return {0, 0};
      std::uint64_t lo = unbounded_length, hi = 0;
      for (const auto& x : e.items) {
        auto [a, b] = length_range(x);
        lo = std::min(lo, a);
        hi = std::max(hi, b);
      }
      return {lo, hi};
    }
    case gexpr_kind::repeat: {
      auto [a, b] = length_range(e.items[0]);
      const std::uint64_t hi = !e.max_count || b == unbounded_length ? (b == 0 ? 0 : unbounded_length) : b * *e.max_count;
      return {a * e.min_count, hi};
    }
  }
  return {0, unbounded_length};
}

void flatten(const gexpr& e, std::vector<gexpr>& out) {
  if (e.kind != gexpr_kind::seq) {
    out.push_back(e);
    return;
  }
  for (const auto& x : e.items) flatten(x, out);
}

}  // namespace

std::optional<gexpr> fit_length(grammar_builder& b, const gexpr& content, std::uint32_t min_length,
                                std::optional<std::uint32_t> max_length) {
  const std::uint64_t hi = max_length ? *max_length : unbounded_length;
  // Bounds that every match already keeps say nothing more.
  if (const auto [lo_all, hi_all] = length_range(content); lo_all >= min_length && hi_all <= hi) return content;
  std::vector<gexpr> parts;
  flatten(content, parts);
  std::uint64_t fixed = 0;
  std::optional<std::size_t> variable;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    auto [lo, hi] = length_range(parts[i]);
    if (lo == hi) {
      fixed += lo;
      continue;
    }
    if (variable || parts[i].kind != gexpr_kind::repeat || length_range(parts[i].items[0]) != std::pair<std::uint64_t, std::uint64_t>{1, 1})
      return std::nullopt;
    variable = i;
  }
  if (!variable) {
    if (fixed < min_length || fixed > hi) return g_alt({});
    return g_seq(std::move(parts));
  }
  const gexpr& r = parts[*variable];
  const std::uint64_t lo_count = std::max<std::uint64_t>(r.min_count, min_length > fixed ? min_length - fixed : 0);
  std::optional<std::uint64_t> hi_count;
  if (r.max_count) hi_count = *r.max_count;
  if (max_length) {
    if (*max_length < fixed) return g_alt({});
    hi_count = std::min<std::uint64_t>(hi_count.value_or(unbounded_length), *max_length - fixed);
  }
  if (hi_count && *hi_count < lo_count) return g_alt({});
  std::optional<std::uint32_t> hi32;
  if (hi_count) hi32 = static_cast<std::uint32_t>(*hi_count);
  parts[*variable] = counted(b, r.items[0], static_cast<std::uint32_t>(lo_count), hi32, "pattern_chars");
  return g_seq(std::move(parts));
}

gexpr integer_multiples(grammar_builder& b, std::uint32_t k, std::uint32_t max_digits) {
  // rest(r, d): the digits that take a remainder r to 0 mod k, at most d of them; a rule
  // for each (r, d).
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> rules;
  const auto rest = [&](auto& self, std::uint32_t r, std::uint32_t d) -> gexpr {
    if (auto it = rules.find({r, d}); it != rules.end()) return g_ref(it->second);
    const std::uint32_t id = b.declare("multiple:" + std::to_string(k) + "#" + std::to_string(r) + "." + std::to_string(d));
    rules[{r, d}] = id;
    std::vector<gexpr> alts;
    if (r == 0) alts.push_back(g_seq({}));
    if (d > 0) {
      for (std::uint32_t c = 0; c < 10; ++c)
        alts.push_back(g_seq({g_byte(static_cast<std::uint8_t>('0' + c)), self(self, (10 * r + c) % k, d - 1)}));
    }
    gexpr e;
    e.kind = gexpr_kind::alt;
    e.items = std::move(alts);
    b.define(id, std::move(e));
    return g_ref(id);
  };
  std::vector<gexpr> positive;
  for (std::uint32_t c = 1; c < 10; ++c)
    positive.push_back(g_seq({g_byte(static_cast<std::uint8_t>('0' + c)), rest(rest, c % k, max_digits - 1)}));
  const std::uint32_t nonzero = b.declare("multiple:" + std::to_string(k));
  b.define(nonzero, g_alt(std::move(positive)));
  return g_alt({g_byte('0'), g_ref(nonzero), g_seq({g_byte('-'), g_ref(nonzero)})});
}

}  // namespace inflight::json_text
