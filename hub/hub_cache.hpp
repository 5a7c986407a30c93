#pragma once
/// The Hugging Face cache, laid out as the Hub's own clients lay it (huggingface_hub,
/// huggingface.js), so each finds what the others fetched:
///
///   $HF_HUB_CACHE/models--ORG--REPO/
///     blobs/<etag>                    each file's bytes once, named by its ETag
///                                     (the SHA-256 of an LFS file, the git blob id of a small one)
///     blobs/<etag>.incomplete         a download under way: it resumes from its length
///     snapshots/<commit>/<path>       relative symlinks to ../../blobs/<etag> (one more ../ per folder)
///     refs/<revision>                 the commit a branch or tag pointed to when last asked
///   $HF_HUB_CACHE/.locks/models--ORG--REPO/<etag>.lock   one writer per blob across processes

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/base/error.hpp"

namespace inflight::hub {

/// HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else
/// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
std::filesystem::path default_cache_dir();

/// An environment variable's value, "" when unset (the Hub's settings come from there).
std::string env_value(const char* name);

class repo_cache {
 public:
  repo_cache(std::filesystem::path cache_dir, const std::string& repo);

  const std::filesystem::path& folder() const { return folder_; }
  std::filesystem::path blob(const std::string& etag) const { return folder_ / "blobs" / etag; }
  std::filesystem::path incomplete(const std::string& etag) const { return blob(etag).string() + ".incomplete"; }
  std::filesystem::path snapshot(const std::string& commit) const { return folder_ / "snapshots" / commit; }
  std::filesystem::path pointer(const std::string& commit, const std::string& file) const { return snapshot(commit) / file; }
  std::filesystem::path lock_file(const std::string& etag) const;

  /// The commit `revision` resolves to here: itself when it is a commit hash, else what
  /// refs/<revision> holds; none when the cache never saw it.
  std::optional<std::string> commit_of(const std::string& revision) const;
  result<void> write_ref(const std::string& revision, const std::string& commit) const;
  /// snapshots/<commit>/<file> -> the blob, relative, replacing what was there.
  result<void> link(const std::string& commit, const std::string& file, const std::string& etag) const;
  /// Whether the snapshot's `file` resolves to a readable file.
  bool has_file(const std::string& commit, const std::string& file) const;
  /// Every file of a snapshot that resolves to a blob, as repository paths, sorted.
  std::vector<std::string> snapshot_files(const std::string& commit) const;

 private:
  std::filesystem::path cache_dir_;
  std::filesystem::path folder_;
};

/// models--ORG--REPO.
std::string repo_folder_name(const std::string& repo);

}  // namespace inflight::hub
