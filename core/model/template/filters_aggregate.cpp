// Jinja's filters that reduce or reorder a whole collection: dictsort, min, max, sum, attr.
#include <algorithm>

#include "core/model/template/dict_keys.hpp"
#include "core/model/template/filters.hpp"
#include "core/model/template/operators.hpp"
#include "core/model/template/renderer.hpp"
#include "core/model/template/text.hpp"

namespace inflight::jinja {
namespace {

bool flag(const call_args& args, std::size_t i, std::string_view name) {
  const value* v = args.get(i, name);
  return v && v->truthy();
}


/// Jinja's ignore_case: strings compared in lower case unless case_sensitive.
value comparable(const value& v, bool case_sensitive) {
  return !case_sensitive && v.is_string() ? value(ascii_lower(v.as_string())) : v;
}

/// min / max: the first extreme item by Python's <, compared by `attribute` when given.
result<value> extreme(const value& v, const call_args& args, bool want_max) {
  const std::string_view name = want_max ? "max" : "min";
  auto items = sequence_of(v, name);
  if (!items) return std::unexpected(items.error());
  if (items->empty()) return value();  // jinja2: undefined ("No aggregated item, sequence was empty.")
  const bool case_sensitive = flag(args, 0, "case_sensitive");
  const value* attribute = args.get(1, "attribute");
  auto key = [&](const value& item) {
    const value k = attribute && attribute->is_string() ? get_attribute(item, attribute->as_string()) : item;
    return comparable(k, case_sensitive);
  };
  std::size_t best = 0;
  value best_key = key((*items)[0]);
  for (std::size_t i = 1; i < items->size(); ++i) {
    value k = key((*items)[i]);
    const auto c = compare(k, best_key);
    if (!c) return filter_error(name, "cannot compare " + std::string(k.type_name()) + " and " +
                                          std::string(best_key.type_name()));
    if (want_max ? *c > 0 : *c < 0) best = i, best_key = std::move(k);
  }
  return (*items)[best];
}

}  // namespace

result<value> dictsort_filter(renderer&, const value& v, const call_args& args) {
  if (!v.is_dict()) return filter_error("dictsort", "needs a dict, not a " + std::string(v.type_name()));
  const bool case_sensitive = flag(args, 0, "case_sensitive");
  const value* by = args.get(1, "by");
  const bool by_value = by && by->is_string() && by->as_string() == "value";
  if (by && !(by->is_string() && (by->as_string() == "key" || by->as_string() == "value"))) {
    return filter_error("dictsort", "You can only sort by either \"key\" or \"value\"");
  }
  const bool reverse = flag(args, 2, "reverse");
  std::vector<std::pair<value, value>> items;  // (sort key, [k, v])
  for (const auto& [k, item] : v.as_dict()->items) {
    const value key = decode_dict_key(k);
    items.emplace_back(comparable(by_value ? item : key, case_sensitive), value(std::vector<value>{key, item}));
  }
  return sorted_by_key(std::move(items), reverse, "dictsort", "values");
}

result<value> min_filter(renderer&, const value& v, const call_args& args) { return extreme(v, args, false); }
result<value> max_filter(renderer&, const value& v, const call_args& args) { return extreme(v, args, true); }

result<value> sum_filter(renderer& r, const value& v, const call_args& args) {
  auto items = sequence_of(v, "sum");
  if (!items) return std::unexpected(items.error());
  const value* attribute = args.get(0, "attribute");
  const value* start = args.get(1, "start");
  value total = start ? *start : value(0);
  for (const value& item : *items) {
    const value term = attribute && attribute->is_string() ? get_attribute(item, attribute->as_string()) : item;
    auto next = binary_operation(r, "+", total, term);
    if (!next) return filter_error("sum", next.error().message);
    total = std::move(*next);
  }
  return total;
}

result<value> attr_filter(renderer&, const value& v, const call_args& args) {
  const value* name = args.get(0, "name");
  if (!name || !name->is_string()) return filter_error("attr", "needs an attribute name");
  return get_attribute(v, name->as_string());
}

}  // namespace inflight::jinja
