#pragma once
/// The schemas of the `structured` workload (core/bench/dataset.hpp): the variance
/// workload's requests, each asking for JSON that follows one of a small rotating set of
/// realistic JSON Schemas (objects with required string / integer / enum / array fields,
/// nested objects, a $ref). Benchmarks run it once with the constraint and once without
/// and compare.

#include <filesystem>
#include <string>
#include <vector>

#include "core/base/error.hpp"

namespace inflight::bench {

/// A JSON Schema with a short name for reports.
struct named_schema {
  std::string name;
  std::string text;  ///< the schema as JSON text
};

/// The built-in schemas, in rotation order.
const std::vector<named_schema>& builtin_schemas();

/// Schemas from a file: a JSON array of schemas, an object of name -> schema, or one
/// schema per line (JSONL). Names are "schema<i>" where the file gives none.
result<std::vector<named_schema>> load_schema_file(const std::filesystem::path& path);

/// "builtin" or a file (load_schema_file).
result<std::vector<named_schema>> load_schemas(const std::string& source);

}  // namespace inflight::bench
