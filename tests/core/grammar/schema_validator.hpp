#pragma once
// A small JSON Schema validator for the tests, written from the specification and
// independent of the grammar compiler: the keywords the generation tests use, with
// their standard meaning (additionalProperties absent = allowed, patterns search).

#include <cctype>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

namespace inflight::grammar_test {

using json = nlohmann::json;

inline std::size_t num_codepoints(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

inline bool has_type(const json& v, const std::string& t) {
  if (t == "string") return v.is_string();
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "number") return v.is_number();
  if (t == "integer") return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  return false;
}

/// `text` with every exponent outside strings that a double cannot hold set to 0: JSON
/// numbers are unbounded but nlohmann refuses those that overflow a double. Only numbers
/// under schemas without bounds can have exponents, so validation is unaffected.
inline std::string clamp_exponents(const std::string& text) {
  std::string out;
  bool is_in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    out += c;
    if (is_in_string) {
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') is_in_string = false;
      continue;
    }
    if (c == '"') {
      is_in_string = true;
    } else if ((c == 'e' || c == 'E') && i > 0 && std::isdigit(static_cast<unsigned char>(text[i - 1]))) {
      std::size_t j = i + 1;
      if (j < text.size() && (text[j] == '+' || text[j] == '-')) out += text[j++];
      const std::size_t digits_begin = j;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
      const std::string digits = text.substr(digits_begin, j - digits_begin);
      out += digits.size() > 2 ? std::string("0") : digits;
      i = j - 1;
    }
  }
  return out;
}

class schema_validator {
 public:
  explicit schema_validator(json root) : root_(std::move(root)) {}

  bool valid(const json& v) const { return valid(v, root_); }

 private:
  const json& resolve(const std::string& ref) const {
    if (ref == "#") return root_;
    return root_.at(json::json_pointer(ref.substr(1)));
  }

  bool valid(const json& v, const json& s) const {
    if (s.is_boolean()) return s.get<bool>();
    if (s.contains("$ref") && !valid(v, resolve(s["$ref"].get<std::string>()))) return false;
    if (s.contains("type")) {
      bool ok = false;
      if (s["type"].is_string()) ok = has_type(v, s["type"].get<std::string>());
      else
        for (const auto& t : s["type"]) ok = ok || has_type(v, t.get<std::string>());
      if (!ok) return false;
    }
    if (s.contains("enum")) {
      bool ok = false;
      for (const auto& e : s["enum"]) ok = ok || e == v;
      if (!ok) return false;
    }
    if (s.contains("const") && s["const"] != v) return false;
    if (s.contains("anyOf")) {
      bool ok = false;
      for (const auto& sub : s["anyOf"]) ok = ok || valid(v, sub);
      if (!ok) return false;
    }
    if (s.contains("oneOf")) {
      int n = 0;
      for (const auto& sub : s["oneOf"]) n += valid(v, sub);
      if (n == 0) return false;  // exclusivity is not what the grammar promises
    }
    if (s.contains("allOf"))
      for (const auto& sub : s["allOf"])
        if (!valid(v, sub)) return false;
    if (v.is_string() && !valid_string(v.get<std::string>(), s)) return false;
    if (v.is_number() && !valid_number(v.get<double>(), s)) return false;
    if (v.is_object() && !valid_object(v, s)) return false;
    if (v.is_array() && !valid_array(v, s)) return false;
    return true;
  }

  bool valid_string(const std::string& str, const json& s) const {
    const std::size_t n = num_codepoints(str);
    if (s.contains("minLength") && n < s["minLength"].get<std::size_t>()) return false;
    if (s.contains("maxLength") && n > s["maxLength"].get<std::size_t>()) return false;
    if (s.contains("pattern") && !std::regex_search(str, std::regex(s["pattern"].get<std::string>()))) return false;
    if (s.contains("format")) {
      static const std::map<std::string, std::string> formats{
          {"date", R"(^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$)"},
          {"uuid", R"(^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$)"},
          {"ipv4", R"(^((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$)"},
          {"email", R"(^[^@\s]+@[^@\s]+\.[^@\s]+$)"},
          {"date-time", R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$)"},
          {"time", R"(^\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$)"}};
      if (!std::regex_match(str, std::regex(formats.at(s["format"].get<std::string>())))) return false;
    }
    return true;
  }

  bool valid_number(double x, const json& s) const {
    if (s.contains("minimum") && x < s["minimum"].get<double>()) return false;
    if (s.contains("maximum") && x > s["maximum"].get<double>()) return false;
    if (s.contains("exclusiveMinimum") && x <= s["exclusiveMinimum"].get<double>()) return false;
    if (s.contains("exclusiveMaximum") && x >= s["exclusiveMaximum"].get<double>()) return false;
    return true;
  }

  bool valid_object(const json& v, const json& s) const {
    if (s.contains("required"))
      for (const auto& r : s["required"])
        if (!v.contains(r.get<std::string>())) return false;
    for (const auto& [key, value] : v.items()) {
      if (s.contains("properties") && s["properties"].contains(key)) {
        if (!valid(value, s["properties"][key])) return false;
      } else if (s.contains("additionalProperties")) {
        if (!valid(value, s["additionalProperties"])) return false;
      }
    }
    return true;
  }

  bool valid_array(const json& v, const json& s) const {
    if (s.contains("minItems") && v.size() < s["minItems"].get<std::size_t>()) return false;
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<std::size_t>()) return false;
    std::size_t k = 0;
    if (s.contains("prefixItems")) {
      k = s["prefixItems"].size();
      for (std::size_t i = 0; i < k && i < v.size(); ++i)
        if (!valid(v[i], s["prefixItems"][i])) return false;
    }
    if (s.contains("items"))
      for (std::size_t i = k; i < v.size(); ++i)
        if (!valid(v[i], s["items"])) return false;
    return true;
  }

  json root_;
};

}  // namespace inflight::grammar_test
