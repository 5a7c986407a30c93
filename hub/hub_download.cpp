#include "hub/hub_download.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "hub/hub_cache.hpp"
#include "hub/hub_http.hpp"
#include "hub/hub_select.hpp"

namespace inflight::hub {

namespace fs = std::filesystem;

namespace {

std::string trimmed(std::string s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

bool is_truthy(std::string v) {
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return v == "1" || v == "on" || v == "yes" || v == "true";
}

bool is_hex(const std::string& s, std::size_t n) {
  return s.size() == n && std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

/// A path's segments percent-encoded, its slashes kept (or encoded too: a revision).
std::string url_escape(const std::string& s, bool keep_slash) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += char(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

/// `"abc"`, `W/"abc"` -> abc.
std::string normalized_etag(std::string etag) {
  if (etag.starts_with("W/")) etag.erase(0, 2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return etag;
}

std::string human_bytes(std::int64_t n) {
  char buf[32];
  if (n >= (1ll << 30)) std::snprintf(buf, sizeof buf, "%.2f GB", double(n) / 1e9);
  else if (n >= (1 << 20)) std::snprintf(buf, sizeof buf, "%.1f MB", double(n) / 1e6);
  else std::snprintf(buf, sizeof buf, "%.1f kB", double(n) / 1e3);
  return buf;
}

/// What one fetch shares between its workers.
struct fetch_job {
  fetch_job(const hub_name& n, const hub_options& o)
      : name(&n), options(&o), cache(o.cache_dir.empty() ? default_cache_dir() : o.cache_dir, n.repo) {}
  const hub_name* name;
  const hub_options* options;
  repo_cache cache;
  std::string commit;
  std::mutex mutex;  // guards the counters below
  std::int64_t num_downloaded_bytes = 0;
  int num_downloaded_files = 0;

  void log(const std::string& line) const {
    if (options->log) options->log(line);
  }
  std::vector<std::string> auth_for(const std::string& url) const {
    if (options->token.empty() || origin_of(url) != origin_of(options->endpoint)) return {};
    return {"Authorization: Bearer " + options->token};  // never to a CDN the Hub redirects to
  }
};

/// A clear error for an HTTP answer that is not the file or the listing.
error http_error(const fetch_job& job, const http_response& r, const std::string& what) {
  const auto code = r.header("x-error-code");
  std::string server_says = r.header("x-error-message");
  if (server_says.empty() && !r.body.empty()) {
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (j.is_object() && j.contains("error") && j["error"].is_string()) server_says = j["error"].get<std::string>();
  }
  const std::string repo = job.name->repo;
  const std::string tail = server_says.empty() ? "" : " (the Hub says: " + server_says + ")";
  const std::string token_hint =
      job.options->token.empty() ? "set HF_TOKEN (or model.hf_token_file) to a token with access"
                                 : "the token given has no access to it";
  if (code == "GatedRepo" || ((r.status == 401 || r.status == 403) && code.empty()))
    return {errc::invalid_argument, what + ": " + std::to_string(r.status) + ": " + repo +
                                        " is gated or private: accept its conditions on its Hub page and " + token_hint + tail};
  if (code == "RepoNotFound")
    return {errc::not_found, what + ": no repository " + repo + " on " + job.options->endpoint +
                                 " (or it is private: " + token_hint + ")" + tail};
  if (code == "RevisionNotFound")
    return {errc::not_found, what + ": " + repo + " has no revision '" + job.name->revision + "'" + tail};
  if (r.status == 404) return {errc::not_found, what + ": 404 not found" + tail};
  if (r.status == 429 || r.status >= 500)
    return {errc::unavailable, what + ": the Hub answered " + std::to_string(r.status) + "; try again later" + tail};
  return {errc::io_error, what + ": the Hub answered " + std::to_string(r.status) + tail};
}

struct repo_listing {
  std::string commit;
  std::vector<std::string> files;
};

result<repo_listing> try_list_repo(const fetch_job& job) {
  const auto& o = *job.options;
  http_request req;
  req.url = o.endpoint + "/api/models/" + job.name->repo + "/revision/" + url_escape(job.name->revision, false);
  req.headers = job.auth_for(req.url);
  req.headers.push_back("Accept: application/json");
  req.follow_redirects = true;  // a renamed repository answers with a redirect to its new name
  req.connect_timeout_s = o.connect_timeout_s;
  auto r = try_http(req);
  if (!r) return std::unexpected(r.error());
  if (r->status != 200) return std::unexpected(http_error(job, *r, "listing " + job.name->repo));
  auto j = nlohmann::json::parse(r->body, nullptr, false);
  if (!j.is_object() || !j.contains("sha") || !j["sha"].is_string() || !is_commit_hash(j["sha"].get<std::string>()))
    return make_error(errc::io_error, "listing " + job.name->repo + ": the Hub's answer has no commit (sha)");
  repo_listing out{j["sha"].get<std::string>(), {}};
  if (j.contains("siblings") && j["siblings"].is_array())
    for (const auto& s : j["siblings"])
      if (s.is_object() && s.contains("rfilename") && s["rfilename"].is_string()) out.files.push_back(s["rfilename"]);
  return out;
}

/// Where a file's bytes are, its ETag and its size, from a HEAD of its resolve URL.
struct file_source {
  std::string url;
  std::string etag;
  std::int64_t size = -1;
};

result<file_source> try_head_file(const fetch_job& job, const std::string& file) {
  const std::string what = job.name->repo + " " + file;
  std::string url = job.options->endpoint + "/" + job.name->repo + "/resolve/" + job.commit + "/" + url_escape(file, true);
  for (int hop = 0; hop < 5; ++hop) {
    http_request req;
    req.method = "HEAD";
    req.url = url;
    req.headers = job.auth_for(url);
    req.headers.push_back("Accept-Encoding: identity");  // the size of the bytes, not of a compressed form
    req.connect_timeout_s = job.options->connect_timeout_s;
    auto r = try_http(req);
    if (!r) return std::unexpected(r.error());
    const bool is_redirect = r->status >= 300 && r->status < 400;
    if (r->status != 200 && !is_redirect) return std::unexpected(http_error(job, *r, what));
    file_source s;
    s.etag = normalized_etag(r->header("x-linked-etag").empty() ? r->header("etag") : r->header("x-linked-etag"));
    const auto size = r->header("x-linked-size").empty() ? r->header("content-length") : r->header("x-linked-size");
    if (!size.empty()) s.size = std::atoll(size.c_str());
    s.url = url;
    if (is_redirect) {
      auto next = try_join_url(url, r->header("location"));
      if (!next) return std::unexpected(next.error());
      s.url = *next;
      // A redirect within the Hub without an ETag is a renamed repository: ask again there.
      if (s.etag.empty() && origin_of(*next) == origin_of(job.options->endpoint)) {
        url = *next;
        continue;
      }
    }
    if (s.etag.empty()) return make_error(errc::io_error, what + ": the Hub's answer has no ETag");
    if (s.etag.find('/') != std::string::npos || s.etag.find("..") != std::string::npos)
      return make_error(errc::io_error, what + ": an ETag that is not a file name: " + s.etag);
    return s;
  }
  return make_error(errc::io_error, what + ": too many redirects");
}

/// An exclusive flock on the blob's lock file (huggingface_hub's place for it), held
/// while the blob is written: two processes never write one blob.
class blob_lock {
 public:
  static result<blob_lock> try_take(const fs::path& path) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return make_error(errc::io_error, path.string() + ": cannot open the lock file");
    if (::flock(fd, LOCK_EX) != 0) {
      ::close(fd);
      return make_error(errc::io_error, path.string() + ": cannot lock");
    }
    return blob_lock(fd);
  }
  blob_lock(blob_lock&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  blob_lock& operator=(blob_lock&&) = delete;
  ~blob_lock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the flock
  }

 private:
  explicit blob_lock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

std::int64_t file_size_or(const fs::path& p, std::int64_t otherwise) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? otherwise : std::int64_t(n);
}

/// One GET of the bytes from where the .incomplete file ends; false = try again.
result<bool> try_download_once(fetch_job& job, const file_source& src, const fs::path& part, const std::string& what) {
  const int fd = ::open(part.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return make_error(errc::io_error, part.string() + ": cannot open for writing");
  std::int64_t have = file_size_or(part, 0);
  if (src.size >= 0 && have > src.size) {
    (void)::ftruncate(fd, 0);  // longer than the file: not a part of it
    have = 0;
  }
  if (src.size >= 0 && have == src.size) {
    ::close(fd);
    return true;
  }
  http_request req;
  req.url = src.url;
  req.headers = job.auth_for(src.url);
  req.follow_redirects = true;
  req.range_from = have;
  req.body_fd = fd;
  req.connect_timeout_s = job.options->connect_timeout_s;
  if (auto* p = job.options->progress) req.on_bytes = [p](std::size_t n) { p->num_done_bytes += std::int64_t(n); };
  auto r = try_http(req);
  ::close(fd);
  if (!r) {
    job.log("inflight: " + what + ": " + r.error().message);
    return false;  // broke off: the bytes written stay, the next attempt resumes
  }
  if (r->status == 416) {
    fs::remove(part);  // the part does not fit the file the Hub has now
    return false;
  }
  if (r->status < 200 || r->status >= 300) {
    auto e = http_error(job, *r, what);
    if (e.code == errc::unavailable) return false;
    return std::unexpected(e);
  }
  return src.size < 0 || file_size_or(part, 0) == src.size;
}

/// Checks a finished download against its ETag (an LFS file's SHA-256) and moves it
/// into blobs/; a mismatch deletes it.
result<void> try_admit_blob(const fetch_job& job, const file_source& src, const fs::path& part, const std::string& what) {
  const auto size = file_size_or(part, -1);
  if (src.size >= 0 && size != src.size) {
    fs::remove(part);
    return make_error(errc::corrupt_file, what + ": downloaded " + std::to_string(size) + " bytes, the Hub states " +
                                              std::to_string(src.size) + " (deleted; try again)");
  }
  if (is_hex(src.etag, 64)) {
    auto sha = try_sha256_file(part);
    if (!sha) return std::unexpected(sha.error());
    if (*sha != src.etag) {
      fs::remove(part);
      return make_error(errc::corrupt_file, what + ": the downloaded bytes have SHA-256 " + *sha + ", the Hub states " +
                                                src.etag + " (deleted; try again)");
    }
  }
  std::error_code ec;
  fs::rename(part, job.cache.blob(src.etag), ec);
  if (ec) return make_error(errc::io_error, job.cache.blob(src.etag).string() + ": " + ec.message());
  return {};
}

/// The blob of `src`, downloaded (resuming, retrying) unless some client already did.
result<std::int64_t> try_fetch_blob(fetch_job& job, const file_source& src, const std::string& what) {
  const auto blob = job.cache.blob(src.etag);
  if (fs::exists(blob) && (src.size < 0 || file_size_or(blob, -1) == src.size)) return 0;
  auto lock = blob_lock::try_take(job.cache.lock_file(src.etag));
  if (!lock) return std::unexpected(lock.error());
  if (fs::exists(blob) && (src.size < 0 || file_size_or(blob, -1) == src.size)) return 0;  // written while we waited
  std::error_code ec;
  fs::create_directories(blob.parent_path(), ec);
  const auto part = job.cache.incomplete(src.etag);
  const auto had = file_size_or(part, 0);
  if (auto* p = job.options->progress) {
    p->num_total_bytes += std::max<std::int64_t>(src.size, 0);
    p->num_done_bytes += had;
    p->num_files += 1;
  }
  job.log("inflight: downloading " + what + " (" + (src.size >= 0 ? human_bytes(src.size) : "size unknown") +
          (had > 0 ? ", resuming at " + human_bytes(had) : "") + ")");
  const auto start = std::chrono::steady_clock::now();
  double delay = job.options->retry_delay_s;
  for (int attempt = 1;; ++attempt) {
    auto done = try_download_once(job, src, part, what);
    if (!done) return std::unexpected(done.error());
    if (*done) break;
    if (attempt >= job.options->max_attempts)
      return make_error(errc::unavailable, what + ": not complete after " + std::to_string(attempt) +
                                               " attempts; what arrived is kept and the next run resumes from it");
    std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    delay *= 2;
  }
  if (auto ok = try_admit_blob(job, src, part, what); !ok) return std::unexpected(ok.error());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto got = std::max<std::int64_t>(src.size - had, 0);
  char rate[64];
  std::snprintf(rate, sizeof rate, "%.1f s, %.1f MB/s", s, s > 0 ? double(got) / s / 1e6 : 0.0);
  job.log("inflight: downloaded " + what + " (" + human_bytes(got) + " in " + rate + ")");
  if (auto* p = job.options->progress) p->num_files_done += 1;
  return got;
}

result<void> try_fetch_file(fetch_job& job, const std::string& file) {
  if (job.cache.has_file(job.commit, file)) return {};
  const std::string what = job.name->repo + " " + file;
  auto src = try_head_file(job, file);
  if (!src) return std::unexpected(src.error());
  auto got = try_fetch_blob(job, *src, what);
  if (!got) return std::unexpected(got.error());
  if (auto ok = job.cache.link(job.commit, file, src->etag); !ok) return ok;
  std::lock_guard lock(job.mutex);
  if (*got > 0) {
    job.num_downloaded_bytes += *got;
    job.num_downloaded_files += 1;
  }
  return {};
}

/// Every file through a few workers; the first error (by file order) is the answer.
result<void> try_fetch_files(fetch_job& job, const std::vector<std::string>& files) {
  std::vector<std::optional<error>> errors(files.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < files.size(); i = next++) {
      auto ok = try_fetch_file(job, files[i]);
      if (!ok) errors[i] = ok.error();
    }
  };
  const int num_workers = std::clamp(job.options->max_parallel, 1, std::max(1, int(files.size())));
  std::vector<std::thread> workers;
  for (int w = 1; w < num_workers; ++w) workers.emplace_back(work);
  work();
  for (auto& t : workers) t.join();
  for (auto& e : errors)
    if (e) return std::unexpected(*e);
  return {};
}

fetched_model result_of(const fetch_job& job, const hub_selection& sel) {
  fetched_model m;
  m.commit = job.commit;
  m.files = sel.files;
  m.path = sel.model_file.empty() ? job.cache.snapshot(job.commit) : job.cache.pointer(job.commit, sel.model_file);
  for (const auto& f : sel.files) m.num_bytes += file_size_or(job.cache.pointer(job.commit, f), 0);
  m.num_downloaded_bytes = job.num_downloaded_bytes;
  m.num_downloaded_files = job.num_downloaded_files;
  return m;
}

/// From the cache alone: the snapshot the revision's ref names, if it holds every file.
result<fetched_model> try_from_cache(fetch_job& job, const std::string& why) {
  const auto what = to_string(*job.name);
  auto commit = job.cache.commit_of(job.name->revision);
  if (!commit || !fs::is_directory(job.cache.snapshot(*commit)))
    return make_error(errc::not_found, what + ": " + why + ", and the cache (" + job.cache.folder().string() +
                                           ") holds no snapshot of revision " + job.name->revision);
  job.commit = *commit;
  const auto files = job.cache.snapshot_files(job.commit);
  auto sel = try_select_files(*job.name, files);
  if (!sel) return make_error(sel.error().code, what + ": " + why + ", and in the cached snapshot: " + sel.error().message);
  for (const auto& f : sel->files)
    if (!job.cache.has_file(job.commit, f))
      return make_error(errc::not_found, what + ": " + why + ", and the cached snapshot lacks " + f);
  auto m = result_of(job, *sel);
  m.is_cache_only = true;
  return m;
}

}  // namespace

result<std::string> try_sha256_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(errc::io_error, path.string() + ": cannot open");
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) return make_error(errc::internal, "SHA-256: no context");
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), std::streamsize(buf.size()));
    if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf.data(), std::size_t(in.gcount()));
  }
  if (in.bad()) return make_error(errc::io_error, path.string() + ": read error");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &n);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < n; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

result<hub_options> hub_options_from_env(const std::string& token_file) {
  hub_options o;
  if (auto e = env_value("HF_ENDPOINT"); !e.empty()) o.endpoint = e;
  while (o.endpoint.ends_with("/")) o.endpoint.pop_back();
  o.cache_dir = default_cache_dir();
  o.is_offline = is_truthy(env_value("HF_HUB_OFFLINE"));
  o.token = trimmed(env_value("HF_TOKEN"));
  if (o.token.empty()) o.token = trimmed(env_value("HUGGING_FACE_HUB_TOKEN"));
  if (o.token.empty() && !token_file.empty()) {
    std::ifstream in(token_file);
    if (!in) return make_error(errc::io_error, token_file + ": cannot read the Hugging Face token file (model.hf_token_file)");
    std::getline(in, o.token);
    o.token = trimmed(o.token);
  }
  if (o.token.empty()) {
    fs::path path = env_value("HF_TOKEN_PATH");
    if (path.empty()) path = env_value("HF_HOME").empty() ? fs::path(env_value("HOME")) / ".cache" / "huggingface" / "token"
                                                     : fs::path(env_value("HF_HOME")) / "token";
    std::ifstream in(path);
    if (in) std::getline(in, o.token);
    o.token = trimmed(o.token);
  }
  return o;
}

result<fetched_model> try_fetch(const hub_name& name, const hub_options& options) {
  fetch_job job(name, options);
  if (options.is_offline) return try_from_cache(job, "offline (HF_HUB_OFFLINE)");
  // A commit hash never moves: a complete snapshot of it needs no question to the Hub.
  if (is_commit_hash(name.revision) && fs::is_directory(job.cache.snapshot(name.revision))) {
    auto cached = try_from_cache(job, "");
    if (cached) {
      cached->is_cache_only = false;
      return cached;
    }
  }
  auto listing = try_list_repo(job);
  if (!listing) {
    if (listing.error().code != errc::unavailable) return std::unexpected(listing.error());
    job.log("inflight: " + listing.error().message + "; looking in the cache");
    auto cached = try_from_cache(job, listing.error().message);
    if (!cached) return make_error(errc::unavailable, cached.error().message);  // the Hub's absence is the cause
    return cached;
  }
  job.commit = listing->commit;
  auto sel = try_select_files(name, listing->files);
  if (!sel) return std::unexpected(sel.error());
  if (auto ok = try_fetch_files(job, sel->files); !ok) return std::unexpected(ok.error());
  if (auto ok = job.cache.write_ref(name.revision, job.commit); !ok) return std::unexpected(ok.error());
  return result_of(job, *sel);
}

}  // namespace inflight::hub
