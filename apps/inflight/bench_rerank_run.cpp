#include "apps/inflight/bench_rerank_run.hpp"

#include <condition_variable>
#include <mutex>

#include "apps/inflight/bench_report.hpp"

namespace inflight::app {
namespace {

/// The run's shared state: scores arrive on engine threads, the main thread waits.
struct rerank_tracker {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<int> num_left;          // per request: documents without a score yet
  std::vector<double> end_s;
  rerank_run* run = nullptr;
  int num_done = 0;                   // requests with every document scored

  void on_document(int request, int document, const finish_event& ev) {
    std::lock_guard lock(mutex);
    run->num_prompt_tokens += ev.prompt_tokens;
    run->num_cached_tokens += ev.cached_tokens;
    if (ev.row_logits.size() == 2) {
      run->scores[std::size_t(request)][std::size_t(document)] = reranker::score(ev.row_logits[0], ev.row_logits[1]);
    } else {
      if (run->num_failed++ == 0) run->first_error = ev.cause ? ev.cause->message : "no score rows";
    }
    if (--num_left[std::size_t(request)] > 0) return;
    end_s[std::size_t(request)] = monotonic_seconds();
    ++num_done;
    cv.notify_all();
  }
};

class document_sink final : public request_sink {
 public:
  document_sink(rerank_tracker& tracker, int request, int document)
      : tracker_(&tracker), request_(request), document_(document) {}
  void on_token(const token_event&) override {}
  void on_finish(const finish_event& ev) override { tracker_->on_document(request_, document_, ev); }

 private:
  rerank_tracker* tracker_;
  int request_, document_;
};

}  // namespace

result<rerank_run> run_rerank_workload(const deployment& d, const loaded_model& model, const reranker& rerank,
                                       const std::vector<bench::rerank_case>& cases, int max_concurrency) {
  auto eng = engine::start(d, model);
  if (!eng) return std::unexpected(eng.error());
  rerank_run run;
  rerank_tracker tracker;
  tracker.run = &run;
  tracker.num_left.resize(cases.size());
  tracker.end_s.resize(cases.size());
  run.scores.resize(cases.size());
  std::vector<double> start_s(cases.size());
  const auto rows = rerank.score_rows();
  const double start = monotonic_seconds();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    {
      std::unique_lock lock(tracker.mutex);
      tracker.cv.wait(lock, [&] { return max_concurrency <= 0 || int(i) - tracker.num_done < max_concurrency; });
      tracker.num_left[i] = int(cases[i].documents.size());
      run.scores[i].assign(cases[i].documents.size(), 0.0);
    }
    // A call's documents go in together, as the gateway's /v1/rerank sends them: the
    // engine plans none of them into a step before all are queued.
    const auto prefix = rerank.encode_prefix(cases[i].query);
    std::vector<submission> documents;
    for (std::size_t j = 0; j < cases[i].documents.size(); ++j) {
      generate_request req;
      req.prompt = rerank.encode(prefix, cases[i].query, cases[i].documents[j]).tokens;
      req.score_rows.assign(rows.begin(), rows.end());
      documents.push_back({std::move(req), std::make_shared<document_sink>(tracker, int(i), int(j))});
    }
    start_s[i] = monotonic_seconds();
    if (auto ids = (*eng)->submit_all(std::move(documents)); !ids) {
      (*eng)->shutdown(0.0);
      return std::unexpected(ids.error());
    }
    run.num_documents += int(cases[i].documents.size());
  }
  {
    std::unique_lock lock(tracker.mutex);
    tracker.cv.wait(lock, [&] { return tracker.num_done == int(cases.size()); });
  }
  run.duration_s = monotonic_seconds() - start;
  run.snapshot = (*eng)->snapshot();
  (*eng)->shutdown(0.0);
  for (std::size_t i = 0; i < cases.size(); ++i) run.latency_s.push_back(tracker.end_s[i] - start_s[i]);
  return run;
}

}  // namespace inflight::app
