// `inflight pull NAME...`: models from the Hugging Face Hub into its cache, without serving.

#include "apps/inflight/commands.hpp"
#include "apps/inflight/hub_models.hpp"

namespace inflight::app {

void add_pull_command(CLI::App& app) {
  struct options {
    std::vector<std::string> names;
    std::string token_file;
  };
  auto o = std::make_shared<options>();
  auto* cmd = app.add_subcommand("pull", "Download models from the Hugging Face Hub into its cache, without serving them");
  cmd->add_option("names", o->names,
                  "hf:ORG/REPO (a Hugging Face folder), hf:ORG/REPO:Q4_K_M or hf:ORG/REPO/FILE.gguf, each with an "
                  "optional @REVISION")
      ->required();
  cmd->add_option("--token-file", o->token_file, "a file holding a Hugging Face token (else HF_TOKEN, else $HF_HOME/token)");
  cmd->callback([o] {
    for (const auto& spec : o->names) {
      auto m = try_fetch_named(spec, o->token_file);
      if (!m) fail(m.error().message);
      std::printf("%s %s\n", spec.c_str(), m->path.c_str());
      std::fflush(stdout);
      std::fprintf(stderr, "inflight: %s: %zu files, %.1f MB at commit %s (%d downloaded now, %.1f MB)\n", spec.c_str(),
                   m->files.size(), double(m->num_bytes) / 1e6, m->commit.c_str(), m->num_downloaded_files,
                   double(m->num_downloaded_bytes) / 1e6);
    }
  });
}

}  // namespace inflight::app
