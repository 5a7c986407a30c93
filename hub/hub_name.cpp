#include "hub/hub_name.hpp"

#include <algorithm>

namespace inflight::hub {

namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
         c == '.';
}

/// An ORG or REPO part: the Hub's own rule (letters, digits, - _ .; no leading or trailing . or -).
bool is_repo_part(std::string_view s) {
  if (s.empty() || s.size() > 96 || !std::all_of(s.begin(), s.end(), is_name_char)) return false;
  return s.front() != '.' && s.front() != '-' && s.back() != '.' && s.back() != '-' && s.find("..") == s.npos;
}

/// A relative path without empty, "." or ".." segments: it stays inside the snapshot folder.
bool is_safe_path(std::string_view s) {
  if (s.empty() || s.front() == '/' || s.back() == '/') return false;
  std::size_t start = 0;
  while (start <= s.size()) {
    const auto end = std::min(s.find('/', start), s.size());
    const auto seg = s.substr(start, end - start);
    if (seg.empty() || seg == "." || seg == ".." || seg.find('\\') != seg.npos) return false;
    if (std::any_of(seg.begin(), seg.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; })) return false;
    start = end + 1;
  }
  return true;
}

}  // namespace

bool is_hub_name(std::string_view spec) { return spec.starts_with("hf:"); }

bool is_commit_hash(std::string_view revision) {
  return revision.size() == 40 &&
         std::all_of(revision.begin(), revision.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

result<hub_name> try_parse_hub_name(std::string_view spec) {
  const std::string whole(spec);
  auto bad = [&](const std::string& why) {
    return make_error(errc::invalid_argument,
                      "model name '" + whole + "': " + why + " (expected hf:ORG/REPO, hf:ORG/REPO:QUANT or hf:ORG/REPO/FILE.gguf, optionally @REVISION)");
  };
  if (!is_hub_name(spec)) return bad("it does not start with hf:");
  std::string_view rest = spec.substr(3);
  while (rest.starts_with("/")) rest.remove_prefix(1);  // hf://ORG/REPO reads the same
  hub_name n;
  if (const auto at = rest.rfind('@'); at != rest.npos) {
    n.revision = std::string(rest.substr(at + 1));
    rest = rest.substr(0, at);
    if (n.revision.empty() || n.revision.size() > 256 || n.revision.find("..") != std::string::npos ||
        !std::all_of(n.revision.begin(), n.revision.end(), [](char c) { return is_name_char(c) || c == '/'; }) ||
        !is_safe_path(n.revision))
      return bad("the revision after @ is not a branch, tag or commit");
  }
  if (const auto colon = rest.find(':'); colon != rest.npos) {
    n.tag = std::string(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
    if (n.tag.empty() || !std::all_of(n.tag.begin(), n.tag.end(), is_name_char))
      return bad("the quantization after : is empty or has characters other than letters, digits, - _ .");
  }
  const auto slash = rest.find('/');
  if (slash == rest.npos) return bad("no ORG/REPO");
  const auto slash2 = rest.find('/', slash + 1);
  const auto org = rest.substr(0, slash);
  const auto repo = rest.substr(slash + 1, slash2 == rest.npos ? rest.npos : slash2 - slash - 1);
  if (!is_repo_part(org) || !is_repo_part(repo)) return bad("ORG and REPO are letters, digits, - _ and .");
  n.repo = std::string(org) + "/" + std::string(repo);
  if (slash2 != rest.npos) {
    n.file = std::string(rest.substr(slash2 + 1));
    if (!is_safe_path(n.file)) return bad("the file path has an empty, . or .. part");
    if (!n.tag.empty()) return bad("name a file or a quantization, not both");
  }
  return n;
}

std::string served_name_of(const hub_name& name) {
  if (!name.file.empty()) return name.repo + "/" + name.file;
  return name.tag.empty() ? name.repo : name.repo + ":" + name.tag;
}

std::string to_string(const hub_name& name) {
  return "hf:" + served_name_of(name) + (name.revision == "main" ? "" : "@" + name.revision);
}

}  // namespace inflight::hub
