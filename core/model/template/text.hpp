#pragma once
/// Python's str operations on UTF-8 text, as templates use them: by code point where
/// Python counts characters; case mapping is ASCII only (other letters are kept).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace inflight::jinja {

/// Python's str.isspace() for one code point.
bool is_python_space(char32_t cp);

/// Each UTF-8 character of `s` as its own string (invalid bytes one by one).
std::vector<std::string> split_characters(std::string_view s);
/// Number of characters (code points) of `s`.
std::size_t count_characters(std::string_view s);

/// str.strip / lstrip / rstrip: `chars` none strips Unicode white space, else any of its characters.
std::string python_strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
/// str.split: `sep` none splits on runs of white space; `max_split` < 0 means no limit.
std::vector<std::string> python_split(std::string_view s, const std::optional<std::string>& sep, long long max_split);
/// str.replace with an optional count (< 0: all); empty `old` inserts between characters.
/// Stops and returns nullopt once the result would pass `max_bytes`.
std::optional<std::string> python_replace(std::string_view s, std::string_view old, std::string_view with,
                                          long long count, std::size_t max_bytes);
/// Number of non-overlapping occurrences of `sub` (str.count); empty `sub`: characters + 1.
std::size_t python_count(std::string_view s, std::string_view sub);
/// str.find in characters, -1 when absent.
long long python_find(std::string_view s, std::string_view sub);

std::string ascii_upper(std::string_view s);
std::string ascii_lower(std::string_view s);
/// str.capitalize: the first character upper case, the rest lower case.
std::string python_capitalize(std::string_view s);
/// str.title: a letter after a non-letter is upper case, other letters lower case.
std::string python_title(std::string_view s);
/// Jinja's `title` filter: words start after white space, '-', '(', '{', '[' or '<'.
std::string jinja_title(std::string_view s);

}  // namespace inflight::jinja
