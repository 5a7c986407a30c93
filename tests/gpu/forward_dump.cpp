// inflight_forward_dump: greedy generation on one backend, printed as JSON with every
// step's logits, for tests/gpu/hf_reference.py to compare with Hugging Face transformers.
//
//   inflight_forward_dump --model DIR --backend cpu|cuda --steps N --prompt-ids 1,2,3 [--prompt-ids ...]
//                         [--weight-dtype q8_0|q4_k_m|...] [--cuda-weights expand|file|fp8]
// DIR is a Hugging Face model folder; no tokenizer is needed (token ids in). With
// --weight-dtype the matrices are converted after loading (model.weight_dtype's recipes).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backends/cpu_backend.hpp"
#include "core/model/convert.hpp"
#include "core/model/formats/hf_model.hpp"
#ifdef INFLIGHT_HAS_CUDA
#include "backends/cuda_backend.hpp"
#endif

using namespace inflight;

namespace {

struct options {
  std::string model, backend = "cpu", prefill_attention = "mma", decode_attention = "grouped";
  std::string weight_dtype, cuda_weights = "expand";
  int steps = 8;
  std::vector<std::vector<token_id>> prompts;
};

std::vector<token_id> parse_ids(const std::string& text) {
  std::vector<token_id> ids;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) ids.push_back(token_id(std::stol(item)));
  return ids;
}

bool parse(int argc, char** argv, options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--model") o.model = value;
    else if (key == "--backend") o.backend = value;
    else if (key == "--steps") o.steps = std::stoi(value);
    else if (key == "--prefill-attention" && (value == "tiled" || value == "mma")) o.prefill_attention = value;
    else if (key == "--decode-attention" && (value == "grouped" || value == "mma" || value == "per_head")) o.decode_attention = value;
    else if (key == "--prompt-ids") o.prompts.push_back(parse_ids(value));
    else if (key == "--weight-dtype") o.weight_dtype = value;
    else if (key == "--cuda-weights" && (value == "expand" || value == "file" || value == "fp8")) o.cuda_weights = value;
    else return false;
  }
  return !o.model.empty() && !o.prompts.empty() && argc % 2 == 1;
}

using forward_fn = std::function<result<std::span<const float>>(const step_plan&)>;

result<forward_fn> make_forward(const options& o, std::shared_ptr<const model_weights> w, int num_blocks) {
  if (o.backend == "cpu") {
    auto be = cpu_backend::create(std::move(w), kv_cache_config{16, num_blocks, 0});
    if (!be) return std::unexpected(be.error());
    std::shared_ptr<cpu_backend> shared(std::move(*be));
    return forward_fn([shared](const step_plan& p) { return shared->forward(p); });
  }
#ifdef INFLIGHT_HAS_CUDA
  if (o.backend == "cuda") {
    cuda_backend_options co;
    co.num_kv_blocks = num_blocks;
    co.prefill_attention = o.prefill_attention == "mma" ? kernels::cuda::prefill_kernel::mma
                                                        : kernels::cuda::prefill_kernel::tiled;
    co.decode_attention = o.decode_attention == "mma"        ? kernels::cuda::decode_kernel::mma
                          : o.decode_attention == "per_head" ? kernels::cuda::decode_kernel::per_head
                                                             : kernels::cuda::decode_kernel::grouped;
    co.weights = o.cuda_weights == "file"  ? kernels::cuda::weight_format::file
                 : o.cuda_weights == "fp8" ? kernels::cuda::weight_format::fp8
                                           : kernels::cuda::weight_format::expand;
    auto be = cuda_backend::create(std::move(w), co);
    if (!be) return std::unexpected(be.error());
    std::shared_ptr<cuda_backend> shared(std::move(*be));
    return forward_fn([shared](const step_plan& p) { return shared->forward(p); });
  }
#endif
  return make_error(errc::unsupported, "backend '" + o.backend + "' is not in this build");
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse(argc, argv, o)) {
    std::cerr << "usage: inflight_forward_dump --model PATH --backend cpu|cuda --steps N [--prefill-attention mma|tiled] "
                 "[--decode-attention grouped|mma|per_head] [--weight-dtype TYPE] [--cuda-weights expand|file|fp8] "
                 "--prompt-ids 1,2,3 ...\n";
    return 2;
  }
  // Token ids in, logits out: the weights alone, no tokenizer (a folder written by
  // `inflight make-model --format hf` has none).
  auto folder = try_load_hf_model(o.model);
  if (!folder) {
    std::cerr << "error: " << folder.error().message << "\n";
    return 1;
  }
  if (!o.weight_dtype.empty()) {
    auto recipe = try_parse_recipe(o.weight_dtype);
    const result<void> converted =
        recipe ? try_quantize_weights(folder->weights, *recipe) : result<void>(std::unexpected(recipe.error()));
    if (!converted) {
      std::cerr << "error: " << converted.error().message << "\n";
      return 1;
    }
  }
  const auto weights = std::make_shared<const model_weights>(std::move(folder->weights));
  std::size_t longest = 0;
  for (const auto& p : o.prompts) longest = std::max(longest, p.size());
  const int blocks_per_seq = int((longest + std::size_t(o.steps) + 15) / 16);
  auto forward = make_forward(o, weights, blocks_per_seq);
  if (!forward) {
    std::cerr << "error: " << forward.error().message << "\n";
    return 1;
  }
  const int vocab = weights->config.vocab_size;
  nlohmann::json out{{"backend", o.backend}, {"results", nlohmann::json::array()}};
  for (const auto& prompt : o.prompts) {
    std::vector<token_id> tokens = prompt;
    nlohmann::json step_logits = nlohmann::json::array();
    int computed = 0;
    for (int step = 0; step < o.steps; ++step) {
      step_plan plan;
      seq_step st;
      st.tokens.assign(tokens.begin() + computed, tokens.end());
      st.start_position = computed;
      for (int b = 0; b < blocks_per_seq; ++b) st.block_table.push_back(b);
      st.do_sample = true;
      plan.seqs.push_back(st);
      auto logits = (*forward)(plan);
      if (!logits) {
        std::cerr << "error: " << logits.error().message << "\n";
        return 1;
      }
      computed = int(tokens.size());
      const auto row = logits->subspan(0, std::size_t(vocab));
      step_logits.push_back(std::vector<float>(row.begin(), row.end()));
      tokens.push_back(token_id(std::max_element(row.begin(), row.end()) - row.begin()));
    }
    out["results"].push_back({{"prompt", prompt},
                              {"tokens", std::vector<token_id>(tokens.begin() + std::ptrdiff_t(prompt.size()), tokens.end())},
                              {"logits", step_logits}});
  }
  std::cout << out.dump() << "\n";
  return 0;
}
