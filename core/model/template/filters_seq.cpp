// Jinja's filters over lists, dicts and the characters of strings.
#include <algorithm>
#include <charconv>
#include <unordered_set>

#include "core/model/template/dict_keys.hpp"
#include "core/model/template/filters.hpp"
#include "core/model/template/renderer.hpp"
#include "core/model/template/text.hpp"

namespace inflight::jinja {
namespace {


/// `attribute="a.b.0"`: dotted dict keys and list indices.
value get_path(const value& v, const std::string& path) {
  value current = v;
  std::size_t begin = 0;
  while (begin <= path.size()) {
    std::size_t end = path.find('.', begin);
    if (end == std::string::npos) end = path.size();
    const std::string part = path.substr(begin, end - begin);
    std::int64_t index = 0;
    const auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), index);
    const bool is_index = ec == std::errc() && p == part.data() + part.size() && !part.empty();
    current = is_index && current.is_list() ? get_item(current, value(index)) : get_attribute(current, part);
    begin = end + 1;
  }
  return current;
}

/// The `attribute` argument (keyword, or positional at `i`), or nullopt.
std::optional<std::string> attribute_arg(const call_args& args, std::size_t i) {
  const value* a = args.get(i, "attribute");
  if (!a || a->is_none()) return std::nullopt;
  return a->is_string() ? a->as_string() : to_text(*a);
}

/// Arguments for the test of select / selectattr: those from `first` on.
call_args test_args(const call_args& args, std::size_t first) {
  call_args out;
  for (std::size_t i = first; i < args.positional.size(); ++i) out.positional.push_back(args.positional[i]);
  return out;
}

result<value> select_items(const value& v, const call_args& args, bool by_attribute, bool keep) {
  const std::string_view name = by_attribute ? (keep ? "selectattr" : "rejectattr") : (keep ? "select" : "reject");
  if (!v.truthy()) return value(std::vector<value>{});  // jinja2 iterates only a true value: none yields nothing
  auto items = sequence_of(v, name);
  if (!items) return std::unexpected(items.error());
  std::optional<std::string> attribute;
  if (by_attribute) {
    attribute = attribute_arg(args, 0);
    if (!attribute) return filter_error(name, "needs an attribute name");
  }
  const std::size_t test_at = by_attribute ? 1 : 0;
  const value* test = args.get(test_at, "");
  if (test && !test->is_string()) return filter_error(name, "the test must be named by a string");
  const call_args rest = test_args(args, test_at + 1);
  std::vector<value> out;
  for (const value& item : *items) {
    const value subject = attribute ? get_path(item, *attribute) : item;
    bool passes = subject.truthy();
    if (test) {
      auto r = apply_test(test->as_string(), subject, rest);
      if (!r) return std::unexpected(r.error());
      passes = *r;
    }
    if (passes == keep) out.push_back(item);
  }
  return value(std::move(out));
}

/// The key sort and unique compare: the attribute's value, lower case unless case-sensitive.
value sort_key(const value& item, const std::optional<std::string>& attribute, bool case_sensitive) {
  value key = attribute ? get_path(item, *attribute) : item;
  if (!case_sensitive && key.is_string()) return value(ascii_lower(key.as_string()));
  return key;
}

}  // namespace

result<value> join_filter(renderer& r, const value& v, const call_args& args) {
  auto items = sequence_of(v, "join");
  if (!items) return std::unexpected(items.error());
  const value* sep = args.get(0, "d");
  const std::string separator = sep ? to_text(*sep) : "";
  const auto attribute = attribute_arg(args, 1);
  std::string out;
  for (std::size_t i = 0; i < items->size(); ++i) {
    if (i > 0) out += separator;
    out += to_text(attribute ? get_path((*items)[i], *attribute) : (*items)[i]);
    if (auto ok = r.check_size(out.size()); !ok) return std::unexpected(ok.error());
  }
  return value(std::move(out));
}

result<value> first_filter(renderer&, const value& v, const call_args&) {
  auto items = sequence_of(v, "first");
  if (!items) return std::unexpected(items.error());
  return items->empty() ? value() : items->front();
}

result<value> last_filter(renderer&, const value& v, const call_args&) {
  auto items = sequence_of(v, "last");
  if (!items) return std::unexpected(items.error());
  return items->empty() ? value() : items->back();
}

result<value> items_filter(renderer&, const value& v, const call_args&) {
  if (v.is_undefined()) return value(std::vector<value>{});
  if (!v.is_dict()) return filter_error("items", "needs a dict, not a " + std::string(v.type_name()));
  std::vector<value> out;
  for (const auto& [k, item] : v.as_dict()->items) out.emplace_back(std::vector<value>{decode_dict_key(k), item});
  return value(std::move(out));
}

result<value> list_filter(renderer&, const value& v, const call_args&) {
  auto items = sequence_of(v, "list");
  if (!items) return std::unexpected(items.error());
  return value(std::move(*items));
}

result<value> select_filter(renderer&, const value& v, const call_args& args) { return select_items(v, args, false, true); }
result<value> reject_filter(renderer&, const value& v, const call_args& args) { return select_items(v, args, false, false); }
result<value> selectattr_filter(renderer&, const value& v, const call_args& args) {
  return select_items(v, args, true, true);
}
result<value> rejectattr_filter(renderer&, const value& v, const call_args& args) {
  return select_items(v, args, true, false);
}

result<value> map_filter(renderer& r, const value& v, const call_args& args) {
  if (!v.truthy()) return value(std::vector<value>{});  // as select: none yields nothing
  auto items = sequence_of(v, "map");
  if (!items) return std::unexpected(items.error());
  std::vector<value> out;
  if (const auto attribute = attribute_arg(args, 99)) {
    const value* fallback = args.get(99, "default");
    for (const value& item : *items) {
      value field = get_path(item, *attribute);
      out.push_back(field.is_undefined() && fallback ? *fallback : std::move(field));
    }
    return value(std::move(out));
  }
  if (args.positional.empty() || !args.positional[0].is_string()) {
    return filter_error("map", "needs attribute= or the name of a filter");
  }
  const call_args rest = test_args(args, 1);
  for (const value& item : *items) {
    auto mapped = apply_filter(r, args.positional[0].as_string(), item, rest);
    if (!mapped) return mapped;
    out.push_back(std::move(*mapped));
  }
  return value(std::move(out));
}

result<value> unique_filter(renderer&, const value& v, const call_args& args) {
  auto items = sequence_of(v, "unique");
  if (!items) return std::unexpected(items.error());
  const value* case_sensitive = args.get(0, "case_sensitive");
  const auto attribute = attribute_arg(args, 1);
  std::unordered_set<std::string> seen;
  std::vector<value> out;
  for (const value& item : *items) {
    const value key = sort_key(item, attribute, case_sensitive && case_sensitive->truthy());
    if (seen.insert(std::string(key.type_name()) + ":" + to_repr(key)).second) out.push_back(item);
  }
  return value(std::move(out));
}

result<value> sort_filter(renderer&, const value& v, const call_args& args) {
  auto items = sequence_of(v, "sort");
  if (!items) return std::unexpected(items.error());
  const value* reverse = args.get(0, "reverse");
  const value* case_sensitive = args.get(1, "case_sensitive");
  const auto attribute = attribute_arg(args, 2);
  const bool is_reverse = reverse && reverse->truthy();
  const bool is_case_sensitive = case_sensitive && case_sensitive->truthy();
  std::vector<std::pair<value, value>> keyed;
  for (value& item : *items) keyed.emplace_back(sort_key(item, attribute, is_case_sensitive), std::move(item));
  return sorted_by_key(std::move(keyed), is_reverse, "sort", "items");
}

result<value> reverse_filter(renderer&, const value& v, const call_args&) {
  auto items = sequence_of(v, "reverse");
  if (!items) return std::unexpected(items.error());
  std::reverse(items->begin(), items->end());
  if (!v.is_string()) return value(std::move(*items));
  std::string out;
  for (const value& c : *items) out += c.as_string();
  return value(std::move(out));
}

}  // namespace inflight::jinja
