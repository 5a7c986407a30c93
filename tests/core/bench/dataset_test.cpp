#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>

#include "core/bench/arrival.hpp"
#include "core/bench/dataset.hpp"

using namespace inflight::bench;

namespace {

std::pair<double, double> mean_and_cv(const std::vector<double>& times) {
  std::vector<double> gaps;
  for (std::size_t i = 1; i < times.size(); ++i) gaps.push_back(times[i] - times[i - 1]);
  const double mean = std::accumulate(gaps.begin(), gaps.end(), 0.0) / double(gaps.size());
  double var = 0.0;
  for (double g : gaps) var += (g - mean) * (g - mean);
  return {mean, std::sqrt(var / double(gaps.size())) / mean};
}

}  // namespace

TEST_CASE("bench arrival: gamma gaps have mean 1/rate and CV 1/sqrt(burstiness)", "[core][bench]") {
  std::mt19937_64 rng(1);
  for (double rate : {0.5, 4.0, 100.0}) {
    for (double burstiness : {0.25, 1.0, 4.0}) {
      auto t = arrival_times(40000, {rate, burstiness}, rng);
      REQUIRE(t.has_value());
      CHECK(t->front() == 0.0);
      CHECK(std::is_sorted(t->begin(), t->end()));
      const auto [mean, cv] = mean_and_cv(*t);
      CHECK(mean == Approx(1.0 / rate).epsilon(0.03));
      CHECK(cv == Approx(1.0 / std::sqrt(burstiness)).epsilon(0.04));
    }
  }
}

TEST_CASE("bench arrival: infinite rate sends everything at once, bad options are refused", "[core][bench]") {
  std::mt19937_64 rng(2);
  auto t = arrival_times(10, {}, rng);
  REQUIRE(t.has_value());
  CHECK(std::all_of(t->begin(), t->end(), [](double x) { return x == 0.0; }));
  CHECK_FALSE(arrival_times(10, {0.0, 1.0}, rng).has_value());
  CHECK_FALSE(arrival_times(10, {1.0, 0.0}, rng).has_value());
  CHECK_FALSE(arrival_times(-1, {1.0, 1.0}, rng).has_value());
}

TEST_CASE("bench dataset: random lengths stay in [L(1-r), L(1+r)] and cover it", "[core][bench]") {
  CHECK(length_bounds(100, 0.5) == std::pair{50, 150});
  CHECK(length_bounds(10, 0.25) == std::pair{7, 13});
  CHECK(length_bounds(1, 0.9) == std::pair{1, 2});
  random_options o;
  o.num_prompts = 3000;
  o.input_len = 40;
  o.output_len = 20;
  o.range_ratio = 0.5;
  o.vocab_size = 500;
  std::mt19937_64 rng(3);
  auto d = random_dataset(o, rng);
  REQUIRE(d.has_value());
  int in_min = 1 << 30, in_max = 0, out_min = 1 << 30, out_max = 0;
  for (const auto& p : *d) {
    REQUIRE(int(p.prompt_ids.size()) == p.input_len);
    for (auto id : p.prompt_ids) REQUIRE((id >= 3 && id < 500));
    in_min = std::min(in_min, p.input_len), in_max = std::max(in_max, p.input_len);
    out_min = std::min(out_min, p.output_len), out_max = std::max(out_max, p.output_len);
  }
  CHECK(in_min == 20);
  CHECK(in_max == 60);
  CHECK(out_min == 10);
  CHECK(out_max == 30);
  o.range_ratio = 1.0;
  CHECK_FALSE(random_dataset(o, rng).has_value());
}

TEST_CASE("bench dataset: text prompts have the requested byte length", "[core][bench]") {
  random_options o;
  o.num_prompts = 50;
  o.input_len = 64;
  o.range_ratio = 0.3;
  o.format = prompt_format::text;
  std::mt19937_64 rng(4);
  auto d = random_dataset(o, rng);
  REQUIRE(d.has_value());
  for (const auto& p : *d) {
    CHECK(p.prompt_ids.empty());
    CHECK(int(p.prompt_text.size()) == p.input_len);
    CHECK(p.prompt_text.find("  ") == std::string::npos);
  }
}

TEST_CASE("bench dataset: exponential output lengths have the mean and respect the cap", "[core][bench]") {
  std::mt19937_64 rng(5);
  double sum = 0.0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) sum += draw_exponential_length(128.0, 1536, rng);
  // ceil of an exponential with mean m has mean 1 / (1 - exp(-1/m)) ~ m + 0.5.
  CHECK(sum / n == Approx(1.0 / (1.0 - std::exp(-1.0 / 128.0))).epsilon(0.01));
  for (int cap : {8, 32, 128, 384}) {
    workload_options o{"variance", workload_size::small, cap};
    std::mt19937_64 r(0);
    auto d = workload_dataset(o, r);
    REQUIRE(d.has_value());
    REQUIRE(d->size() == 200);
    int max_out = 0;
    for (const auto& p : *d) {
      CHECK(p.input_len == 64);
      CHECK((p.output_len >= 1 && p.output_len <= cap));
      CHECK(p.arrival_s == 0.0);
      max_out = std::max(max_out, p.output_len);
    }
    CHECK(max_out > cap / 2);  // the cap binds: the longest draw is near it
  }
  workload_options bad{"variance", workload_size::small, 100};
  CHECK_FALSE(workload_dataset(bad, rng).has_value());
}

TEST_CASE("bench dataset: the same seed gives the same workload", "[core][bench]") {
  for (const auto& name : workload_names()) {
    workload_options o{name, workload_size::small};
    std::mt19937_64 a(0), b(0), c(1);
    auto x = workload_dataset(o, a), y = workload_dataset(o, b), z = workload_dataset(o, c);
    REQUIRE(x.has_value());
    REQUIRE(y.has_value());
    REQUIRE(x->size() == y->size());
    bool any_diff = false;
    for (std::size_t i = 0; i < x->size(); ++i) {
      CHECK((*x)[i].prompt_ids == (*y)[i].prompt_ids);
      CHECK((*x)[i].prompt_text == (*y)[i].prompt_text);
      CHECK((*x)[i].output_len == (*y)[i].output_len);
      any_diff = any_diff || (*x)[i].prompt_ids != (*z)[i].prompt_ids || (*x)[i].prompt_text != (*z)[i].prompt_text;
    }
    CHECK(any_diff);
  }
}

TEST_CASE("bench dataset: copy prompts are a passage, then its start again", "[core][bench]") {
  std::mt19937_64 rng(3);
  for (const auto size : {workload_size::small, workload_size::full}) {
    auto copy = workload_dataset({"copy", size}, rng);
    REQUIRE(copy.has_value());
    CHECK(copy->size() == (size == workload_size::full ? 64u : 16u));
    for (const auto& p : *copy) {
      const auto cut = p.prompt_text.find("\n\n");
      REQUIRE(cut != std::string::npos);
      const std::string passage = p.prompt_text.substr(0, cut), again = p.prompt_text.substr(cut + 2);
      CHECK(again.size() * 5 > passage.size() / 2);  // about a quarter of it
      CHECK(again.size() < passage.size() / 3);
      CHECK(passage.rfind(again, 0) == 0);  // what follows `again` in the passage is the answer to copy
      CHECK(p.output_len == (size == workload_size::full ? 128 : 64));
    }
  }
}

TEST_CASE("bench dataset: workload shapes follow the workload README", "[core][bench]") {
  std::mt19937_64 rng(0);
  auto lat = workload_dataset({"latency", workload_size::small}, rng);
  REQUIRE(lat.has_value());
  for (const auto& p : *lat) CHECK((p.input_len >= 16 && p.input_len <= 48 && p.output_len <= 384));
  auto proc = workload_dataset({"procurement", workload_size::full, 0, 10}, rng);
  REQUIRE(proc->size() == 10);
  for (const auto& p : *proc) CHECK((p.input_len >= 1500 && p.input_len <= 2000 && p.output_len == 500));
  auto itf = workload_dataset({"interference", workload_size::small}, rng);
  REQUIRE(itf.has_value());
  int num_decode = 0, num_long = 0;
  for (const auto& p : *itf) {
    if (p.tag == "decode") {
      ++num_decode;
      CHECK((p.input_len == 64 && p.output_len == 256 && p.arrival_s == 0.0));
    } else if (p.tag == "long") {
      ++num_long;
      CHECK((p.input_len == 1024 && p.output_len == 16));
    }
  }
  CHECK(num_decode == 32);
  CHECK(num_long == 8);
  CHECK(itf->back().arrival_s == Approx(4.0));
  CHECK_FALSE(workload_dataset({"nope", workload_size::small}, rng).has_value());
  CHECK(parse_workload_size("full").value() == workload_size::full);
  CHECK_FALSE(parse_workload_size("medium").has_value());
}

TEST_CASE("bench dataset: prefix groups share 256 leading tokens and nothing else", "[core][bench][prefix]") {
  std::mt19937_64 rng(0);
  auto w = workload_dataset({"prefix", workload_size::small, 0, 0, 32000}, rng);
  REQUIRE(w.has_value());
  REQUIRE(w->size() == 64);
  std::map<std::string, std::vector<const bench_prompt*>> groups;
  for (const auto& p : *w) {
    CHECK((p.input_len == 272 && p.prompt_ids.size() == 272 && p.output_len == 8 && p.arrival_s < 0));
    groups[p.tag].push_back(&p);
  }
  REQUIRE(groups.size() == 8);
  auto common = [](const bench_prompt& a, const bench_prompt& b) {
    return std::size_t(std::mismatch(a.prompt_ids.begin(), a.prompt_ids.end(), b.prompt_ids.begin()).first -
                       a.prompt_ids.begin());
  };
  for (const auto& [tag, members] : groups) {
    REQUIRE(members.size() == 8);
    for (std::size_t i = 1; i < members.size(); ++i) {
      CHECK(common(*members[0], *members[i]) >= 256);
      CHECK(common(*members[0], *members[i]) < 262);  // the suffixes differ (random ids from 32000)
    }
    if (tag != groups.begin()->first) CHECK(common(*members[0], *groups.begin()->second[0]) < 8);
  }
  // shuffled: the first 8 requests are not one group
  CHECK(std::any_of(w->begin(), w->begin() + 8, [&](const auto& p) { return p.tag != w->front().tag; }));
  // text format: the members of a group share the prefix text
  auto text = workload_dataset({"prefix", workload_size::small, 0, 16, 32000, prompt_format::text}, rng);
  REQUIRE(text.has_value());
  REQUIRE(text->size() == 16);
  for (const auto& p : *text) {
    const auto& first = *std::find_if(text->begin(), text->end(), [&](const auto& q) { return q.tag == p.tag; });
    CHECK(p.prompt_text.size() == 272);
    CHECK(p.prompt_text.substr(0, 256) == first.prompt_text.substr(0, 256));
  }
  CHECK_FALSE(workload_dataset({"prefix", workload_size::small, 0, 7}, rng).has_value());
}

TEST_CASE("bench dataset: each chat turn resends the previous turn and its reply", "[core][bench][prefix]") {
  std::mt19937_64 rng(0);
  auto w = workload_dataset({"prefix-chat", workload_size::full, 0, 0, 32000}, rng);
  REQUIRE(w.has_value());
  REQUIRE(w->size() == 16 * 6);
  for (std::size_t i = 0; i < w->size(); ++i) {
    const auto& p = (*w)[i];
    const int turn = int(i % 6);
    CHECK(p.tag == "turn" + std::to_string(turn));
    CHECK(p.input_len == 64 + turn * 128);
    CHECK(p.output_len == 64);
    CHECK(p.arrival_s == Approx((turn + double(i / 6) / 16) * 4.0));
    if (turn == 0) continue;
    const auto& prev = (*w)[i - 1];
    CHECK(std::equal(prev.prompt_ids.begin(), prev.prompt_ids.end(), p.prompt_ids.begin()));
  }
  CHECK((*w)[0].prompt_ids[0] != (*w)[6].prompt_ids[0]);  // conversations differ
}

TEST_CASE("bench dataset: JSONL prompts as text or token ids, with optional lengths", "[core][bench]") {
  const auto path = std::filesystem::temp_directory_path() / "inflight_bench_dataset_test.jsonl";
  {
    std::ofstream out(path);
    out << R"({"prompt": "hello there", "output_len": 7})" << "\n\n"
        << R"({"prompt": [5, 6, 7], "max_tokens": 3})" << "\n"
        << R"({"prompt": "no length"})" << "\n";
  }
  auto d = load_jsonl_dataset(path);
  REQUIRE(d.has_value());
  REQUIRE(d->size() == 3);
  CHECK((*d)[0].prompt_text == "hello there");
  CHECK((*d)[0].output_len == 7);
  CHECK((*d)[1].prompt_ids == std::vector<inflight::token_id>{5, 6, 7});
  CHECK((*d)[1].output_len == 3);
  CHECK((*d)[2].output_len == 0);
  {
    std::ofstream out(path);
    out << R"({"prompt": 5})" << "\n";
  }
  auto bad = load_jsonl_dataset(path);
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message.find(":1") != std::string::npos);
  std::filesystem::remove(path);
  CHECK_FALSE(load_jsonl_dataset(path).has_value());
}

TEST_CASE("bench dataset: a JSONL trace with arrival times and lengths only", "[core][bench]") {
  const auto path = std::filesystem::temp_directory_path() / "inflight_bench_trace_test.jsonl";
  {
    std::ofstream out(path);
    out << R"({"prompt": [5, 6, 7], "output_len": 4, "arrival_s": 0.5})" << "\n"
        << R"({"input_len": 40, "output_len": 6, "arrival_s": 0.1})" << "\n"
        << R"({"input_len": 12, "max_tokens": 2})" << "\n";
  }
  auto raw = load_jsonl_dataset(path);
  REQUIRE(raw.has_value());
  CHECK((*raw)[0].arrival_s == 0.5);
  CHECK((*raw)[1].arrival_s == 0.1);
  CHECK((*raw)[2].arrival_s < 0);  // none: the arrival process's
  CHECK((*raw)[1].prompt_ids.empty());
  CHECK((*raw)[1].input_len == 40);
  std::mt19937_64 rng(3);
  auto trace = load_trace(path, 0, 100, prompt_format::ids, true, rng);
  REQUIRE(trace.has_value());
  REQUIRE(trace->size() == 3);
  CHECK((*trace)[0].prompt_ids == std::vector<inflight::token_id>{5, 6, 7});  // given ids stay
  REQUIRE((*trace)[1].prompt_ids.size() == 40);                              // drawn to its length
  for (auto t : (*trace)[1].prompt_ids) CHECK((t >= 3 && t < 100));
  CHECK((*trace)[1].output_len == 6);
  CHECK((*trace)[1].arrival_s == 0.1);
  CHECK((*trace)[2].prompt_ids.size() == 12);
  CHECK((*trace)[2].output_len == 2);
  CHECK(load_trace(path, 2, 100, prompt_format::ids, true, rng)->size() == 2);
  // As text, for a server that tokenizes.
  auto text = load_trace(path, 0, 100, prompt_format::text, false, rng);
  REQUIRE(text.has_value());
  CHECK_FALSE((*text)[1].prompt_text.empty());
  const auto refused = [&](const char* line) {
    {
      std::ofstream out(path);
      out << line << "\n";
    }
    std::mt19937_64 r(0);
    auto got = load_trace(path, 0, 100, prompt_format::ids, true, r);
    INFO(line);
    REQUIRE_FALSE(got.has_value());
    return got.error().message;
  };
  CHECK_THAT(refused(R"({"input_len": 4, "arrival_s": -1})"), Catch::Contains("arrival_s"));
  CHECK_THAT(refused(R"({"input_len": 4, "arrival_s": "soon"})"), Catch::Contains("arrival_s"));
  CHECK_THAT(refused(R"({"input_len": 0})"), Catch::Contains("input_len"));
  CHECK_THAT(refused(R"({"output_len": 4})"), Catch::Contains("no \"prompt\""));
  CHECK_THAT(refused(R"({"prompt": "some text"})"), Catch::Contains("token ids"));
  CHECK_THAT(refused(R"({"input_len": 4, "output_len": 2, "max_tokens": 8, "stop": 1})"), Catch::Contains("\"stop\""));
  CHECK_THAT(refused(R"({"input_len": 4, "output_len": 2, "stop": true})"), Catch::Contains("needs \"max_tokens\""));
  CHECK_THAT(refused(R"({"input_len": 4, "cancel_after_s": -2})"), Catch::Contains("cancel_after_s"));
  CHECK_THAT(refused(R"({"input_len": 4, "max_tokens": 0})"), Catch::Contains("max_tokens"));
  std::filesystem::remove(path);
}

TEST_CASE("bench dataset: a trace says how each request ends: its limit, a stop string, a cancel", "[core][bench]") {
  const auto path = std::filesystem::temp_directory_path() / "inflight_bench_endings_test.jsonl";
  {
    std::ofstream out(path);
    out << R"({"input_len": 8, "output_len": 4, "max_tokens": 100})" << "\n"
        << R"({"input_len": 8, "output_len": 4, "max_tokens": 100, "stop": true, "cancel_after_s": 2.5})" << "\n"
        << R"({"input_len": 8, "output_len": 40, "max_tokens": 10})" << "\n"
        << R"({"input_len": 8, "max_tokens": 6})" << "\n";
  }
  std::mt19937_64 rng(1);
  auto t = load_trace(path, 0, 100, prompt_format::ids, true, rng);
  REQUIRE(t.has_value());
  REQUIRE(t->size() == 4);
  // Generates output_len under a higher limit: ends on its own (EOS, or a stop string).
  CHECK((*t)[0].output_len == 4);
  CHECK((*t)[0].max_tokens == 100);
  CHECK_FALSE((*t)[0].ends_by_stop_string);
  CHECK((*t)[0].cancel_after_s < 0);
  CHECK((*t)[1].ends_by_stop_string);
  CHECK((*t)[1].cancel_after_s == 2.5);
  CHECK((*t)[1].prompt_ids.size() == 8);  // the drawn prompt kept the trace's fields
  CHECK((*t)[1].max_tokens == 100);
  // A limit below the output cuts it there; max_tokens alone is the output length.
  CHECK((*t)[2].output_len == 10);
  CHECK((*t)[2].max_tokens == 0);
  CHECK((*t)[3].output_len == 6);
  CHECK((*t)[3].max_tokens == 0);
  std::filesystem::remove(path);
}
