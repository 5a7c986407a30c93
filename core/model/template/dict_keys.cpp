#include "core/model/template/dict_keys.hpp"

#include <charconv>

namespace inflight::jinja {
namespace {

constexpr char marker = '\x1f';  // a control character: no key of a JSON context or template starts with it

}  // namespace

std::optional<std::string> encode_dict_key(const value& key) {
  if (key.is_string()) return key.as_string();
  if (key.is_int()) return std::string{marker, 'i'} + std::to_string(key.as_int());
  if (key.is_bool()) return std::string{marker, 'b'} + (key.as_bool() ? "1" : "0");
  if (key.is_none()) return std::string{marker, 'n'};
  if (key.is_float()) return std::string{marker, 'f'} + python_float_repr(key.as_double());
  return std::nullopt;
}

value decode_dict_key(const std::string& stored) {
  if (stored.size() < 2 || stored[0] != marker) return value(stored);
  const std::string body = stored.substr(2);
  switch (stored[1]) {
    case 'i': {
      std::int64_t i = 0;
      std::from_chars(body.data(), body.data() + body.size(), i);
      return value(i);
    }
    case 'b': return value(body == "1");
    case 'n': return value(none_t{});
    case 'f': {
      double d = 0;
      std::from_chars(body.data(), body.data() + body.size(), d);
      return value(d);
    }
    default: return value(stored);
  }
}

std::string json_dict_key(const std::string& stored) {
  const value key = decode_dict_key(stored);
  if (key.is_string()) return key.as_string();
  if (key.is_bool()) return key.as_bool() ? "true" : "false";
  if (key.is_none()) return "null";
  return to_text(key);
}

}  // namespace inflight::jinja
