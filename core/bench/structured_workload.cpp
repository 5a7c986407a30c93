#include "core/bench/structured_workload.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace inflight::bench {

const std::vector<named_schema>& builtin_schemas() {
  static const std::vector<named_schema> schemas = {
      {"person", R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 40},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "email": {"type": "string", "format": "email"},
    "role": {"enum": ["admin", "editor", "viewer"]},
    "languages": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 4}
  },
  "required": ["name", "age", "role"],
  "additionalProperties": false
})"},
      {"order", R"({
  "type": "object",
  "properties": {
    "order_id": {"type": "string", "pattern": "^ORD-[0-9]{6}$"},
    "customer": {
      "type": "object",
      "properties": {"id": {"type": "integer", "minimum": 1}, "name": {"type": "string"}},
      "required": ["id", "name"],
      "additionalProperties": false
    },
    "items": {
      "type": "array",
      "items": {
        "type": "object",
        "properties": {"sku": {"type": "string"}, "quantity": {"type": "integer", "minimum": 1, "maximum": 99}},
        "required": ["sku", "quantity"],
        "additionalProperties": false
      },
      "minItems": 1,
      "maxItems": 5
    },
    "status": {"enum": ["pending", "paid", "shipped", "cancelled"]}
  },
  "required": ["order_id", "customer", "items", "status"],
  "additionalProperties": false
})"},
      {"event", R"({
  "$defs": {
    "place": {
      "type": "object",
      "properties": {"city": {"type": "string"}, "country": {"type": "string", "pattern": "^[A-Z]{2}$"}},
      "required": ["city", "country"],
      "additionalProperties": false
    }
  },
  "type": "object",
  "properties": {
    "title": {"type": "string", "maxLength": 80},
    "starts": {"type": "string", "format": "date-time"},
    "venue": {"$ref": "#/$defs/place"},
    "backup_venue": {"$ref": "#/$defs/place"},
    "capacity": {"type": "integer", "minimum": 1}
  },
  "required": ["title", "starts", "venue"],
  "additionalProperties": false
})"},
      {"review", R"({
  "type": "object",
  "properties": {
    "rating": {"type": "integer", "minimum": 1, "maximum": 5},
    "summary": {"type": "string"},
    "pros": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
    "cons": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
    "verdict": {"enum": ["buy", "wait", "avoid"]},
    "verified": {"type": "boolean"}
  },
  "required": ["rating", "summary", "verdict"],
  "additionalProperties": false
})"},
      {"weather_call", R"({
  "type": "object",
  "properties": {
    "city": {"type": "string"},
    "unit": {"enum": ["celsius", "fahrenheit"]},
    "days": {"type": "integer", "minimum": 1, "maximum": 14},
    "include": {"type": "array", "items": {"enum": ["wind", "rain", "uv", "humidity"]}, "maxItems": 4}
  },
  "required": ["city", "unit"],
  "additionalProperties": false
})"},
      {"invoice", R"({
  "$defs": {
    "money": {
      "type": "object",
      "properties": {"amount": {"type": "number", "minimum": 0}, "currency": {"enum": ["EUR", "USD", "GBP"]}},
      "required": ["amount", "currency"],
      "additionalProperties": false
    }
  },
  "type": "object",
  "properties": {
    "number": {"type": "integer", "minimum": 1},
    "issued": {"type": "string", "format": "date"},
    "seller": {"type": "object", "properties": {"name": {"type": "string"}, "vat_id": {"type": "string"}},
               "required": ["name"], "additionalProperties": false},
    "lines": {"type": "array", "maxItems": 10, "items": {"type": "object",
              "properties": {"text": {"type": "string"}, "price": {"$ref": "#/$defs/money"}},
              "required": ["text", "price"], "additionalProperties": false}},
    "total": {"$ref": "#/$defs/money"},
    "paid": {"type": "boolean"},
    "note": {"anyOf": [{"type": "string"}, {"type": "null"}]}
  },
  "required": ["number", "issued", "seller", "lines", "total"],
  "additionalProperties": false
})"},
  };
  return schemas;
}

namespace {

named_schema schema_of(const nlohmann::json& j, std::string name) { return {std::move(name), j.dump()}; }

result<std::vector<named_schema>> schemas_of_document(const nlohmann::json& doc, const std::string& where) {
  std::vector<named_schema> out;
  if (doc.is_array()) {
    for (std::size_t i = 0; i < doc.size(); ++i) {
      if (!doc[i].is_object()) return make_error(errc::invalid_argument, where + ": element " + std::to_string(i) + " is not a schema (an object)");
      out.push_back(schema_of(doc[i], "schema" + std::to_string(i)));
    }
  } else if (doc.is_object() && !doc.empty() &&
             std::all_of(doc.begin(), doc.end(), [](const auto& v) { return v.is_object(); }) &&
             !doc.contains("type") && !doc.contains("properties") && !doc.contains("$ref")) {
    for (const auto& [name, schema] : doc.items()) out.push_back(schema_of(schema, name));
  } else if (doc.is_object()) {
    out.push_back(schema_of(doc, "schema0"));
  } else {
    return make_error(errc::invalid_argument, where + ": expected a JSON array of schemas, an object of schemas, or JSONL");
  }
  return out;
}

}  // namespace

result<std::vector<named_schema>> load_schema_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return make_error(errc::io_error, path.string() + ": cannot open");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  auto doc = nlohmann::json::parse(text, nullptr, false);
  result<std::vector<named_schema>> out = std::vector<named_schema>{};
  if (!doc.is_discarded()) {
    out = schemas_of_document(doc, path.string());
  } else {  // JSONL: one schema per line
    std::istringstream lines(text);
    std::string line;
    for (int number = 1; std::getline(lines, line); ++number) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) {
        return make_error(errc::invalid_argument, path.string() + ":" + std::to_string(number) + ": not a JSON object");
      }
      out->push_back(schema_of(j, "schema" + std::to_string(out->size())));
    }
  }
  if (out && out->empty()) return make_error(errc::invalid_argument, path.string() + ": no schemas");
  return out;
}

result<std::vector<named_schema>> load_schemas(const std::string& source) {
  if (source == "builtin") return builtin_schemas();
  return load_schema_file(source);
}

}  // namespace inflight::bench
