#pragma once
/// The filters' shared declarations: filters.cpp holds the table and the scalar and
/// string filters, filters_seq.cpp the ones over lists and dicts,
/// filters_aggregate.cpp the ones that reduce or reorder a whole collection.

#include <string_view>

#include "core/model/template/builtins.hpp"

namespace inflight::jinja {

using filter_fn = result<value> (*)(renderer& r, const value& subject, const call_args& args);

std::unexpected<error> filter_error(std::string_view filter, std::string_view what);

/// What a filter iterates: a list's items, a dict's keys, a string's characters (none for
/// an undefined value); anything else is `filter`'s error.
result<std::vector<value>> sequence_of(const value& v, std::string_view filter);

/// The items of (sort key, item) pairs in key order, stable (Python's sorted), reversed
/// when asked; keys that do not compare with each other are `filter`'s error naming `what`.
result<value> sorted_by_key(std::vector<std::pair<value, value>> keyed, bool is_reverse, std::string_view filter,
                            std::string_view what);

result<value> join_filter(renderer& r, const value& v, const call_args& args);
result<value> first_filter(renderer& r, const value& v, const call_args& args);
result<value> last_filter(renderer& r, const value& v, const call_args& args);
result<value> items_filter(renderer& r, const value& v, const call_args& args);
result<value> list_filter(renderer& r, const value& v, const call_args& args);
result<value> select_filter(renderer& r, const value& v, const call_args& args);
result<value> reject_filter(renderer& r, const value& v, const call_args& args);
result<value> selectattr_filter(renderer& r, const value& v, const call_args& args);
result<value> rejectattr_filter(renderer& r, const value& v, const call_args& args);
result<value> map_filter(renderer& r, const value& v, const call_args& args);
result<value> unique_filter(renderer& r, const value& v, const call_args& args);
result<value> sort_filter(renderer& r, const value& v, const call_args& args);
result<value> reverse_filter(renderer& r, const value& v, const call_args& args);
// filters_aggregate.cpp
result<value> dictsort_filter(renderer& r, const value& v, const call_args& args);
result<value> min_filter(renderer& r, const value& v, const call_args& args);
result<value> max_filter(renderer& r, const value& v, const call_args& args);
result<value> sum_filter(renderer& r, const value& v, const call_args& args);
result<value> attr_filter(renderer& r, const value& v, const call_args& args);

}  // namespace inflight::jinja
