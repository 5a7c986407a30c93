#pragma once
/// Dict keys that are not strings (`{0: 0, 512: 128}`, as ByteDance-Seed-OSS's template
/// writes): a dict stores every key as a string, a number, bool or none one encoded
/// behind a byte no text key starts with, and decoded wherever a template sees the key.

#include <optional>
#include <string>

namespace inflight::jinja {

class value;  // value.hpp, whose value.cpp defines these (a dict stores its keys so)

/// The stored key of a dict key value; nullopt for a type that cannot be a key (list, dict, ...).
std::optional<std::string> encode_dict_key(const value& key);
/// The key value a stored key stands for: the string itself, or the decoded number, bool or none.
value decode_dict_key(const std::string& stored);
/// json.dumps's text of a key: a string as it is, 512 as "512", True as "true", None as "null".
std::string json_dict_key(const std::string& stored);

}  // namespace inflight::jinja
