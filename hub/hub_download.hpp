#pragma once
/// Fetches what a hub name needs into the Hugging Face cache (hub_cache.hpp) and says
/// where model.path should point. The Hub's protocol, as its own clients speak it:
///
///   GET  {endpoint}/api/models/ORG/REPO/revision/REV   -> the commit ("sha") and its files
///   HEAD {endpoint}/ORG/REPO/resolve/COMMIT/FILE        -> ETag / X-Linked-Etag, size,
///                                                          a redirect to the bytes (LFS)
///   GET  the bytes, from where a broken-off download stopped (Range: bytes=N-)
///
/// An LFS file's bytes are checked against the SHA-256 its ETag states before they
/// enter the cache. A file the snapshot already holds is not asked about at all; a blob
/// fetched by another client is linked, not downloaded again. Offline
/// (HF_HUB_OFFLINE=1), or when the Hub cannot be reached, the cache alone answers.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "hub/hub_name.hpp"

namespace inflight::hub {

/// Bytes and files of the fetch under way, for a progress display on another thread.
class hub_progress {
 public:
  std::atomic<std::int64_t> num_total_bytes{0};  ///< of the files being downloaded
  std::atomic<std::int64_t> num_done_bytes{0};
  std::atomic<int> num_files{0};                 ///< downloads started
  std::atomic<int> num_files_done{0};
};

struct hub_options {
  std::string endpoint = "https://huggingface.co";  ///< HF_ENDPOINT
  std::filesystem::path cache_dir;                  ///< HF_HUB_CACHE (empty: default_cache_dir())
  std::string token;                                ///< sent as Authorization: Bearer to the endpoint only
  bool is_offline = false;                          ///< HF_HUB_OFFLINE: the cache alone
  int max_parallel = 4;                             ///< files downloaded at once
  int max_attempts = 5;                             ///< per file; each resumes where the last stopped
  double retry_delay_s = 1.0;                       ///< before the second attempt, doubling after
  long connect_timeout_s = 15;
  hub_progress* progress = nullptr;
  std::function<void(const std::string&)> log;      ///< one line per event; none when empty
};

/// HF_ENDPOINT, HF_HUB_CACHE (and the variables it falls back on), HF_HUB_OFFLINE, and the
/// token: HF_TOKEN, else `token_file` (model.hf_token_file), else HF_TOKEN_PATH, else
/// $HF_HOME/token (where `huggingface-cli login` writes it). A token file that cannot be
/// read when named is an error.
result<hub_options> hub_options_from_env(const std::string& token_file);

struct fetched_model {
  std::filesystem::path path;      ///< for model.path: the snapshot folder, or the (first) GGUF file in it
  std::string commit;
  std::vector<std::string> files;  ///< repository paths, all present in the snapshot
  std::int64_t num_bytes = 0;      ///< of those files
  std::int64_t num_downloaded_bytes = 0;
  int num_downloaded_files = 0;
  bool is_cache_only = false;      ///< offline, or the Hub could not be reached
};

result<fetched_model> try_fetch(const hub_name& name, const hub_options& options);

/// The SHA-256 of a file as 64 lowercase hex digits.
result<std::string> try_sha256_file(const std::filesystem::path& path);

}  // namespace inflight::hub
