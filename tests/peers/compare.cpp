// Compares the C++ tokenizer.json implementation, the family chat templates and the
// Jinja interpreter with the output of peer.mjs (the npm port of Hugging Face
// tokenizers, and @huggingface/jinja):  compare PEER.json
// Exits non-zero on any disagreement and prints the agreement counts.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/template/chat_template.hpp"
#include "core/model/tokenizer/hf_tokenizer.hpp"

namespace {

using json = nlohmann::ordered_json;  // keeps the key order of tool schemas
using inflight::token_id;

std::string show_ids(const std::vector<token_id>& ids) {
  std::ostringstream s;
  s << "[";
  for (std::size_t i = 0; i < ids.size() && i < 40; ++i) s << (i ? " " : "") << ids[i];
  s << (ids.size() > 40 ? " ...]" : "]");
  return s.str();
}

/// Llama-2's normalizer turns spaces into "▁" and decoding cannot tell them apart; its
/// special tokens decode to text followed by the space the next section's "▁" adds.
bool can_round_trip(const std::string& name, const std::string& text) {
  if (name != "llama2") return true;
  for (const char* s : {"\xE2\x96\x81", "<s>", "</s>", "<unk>"}) {
    if (text.find(s) != std::string::npos) return false;
  }
  return true;
}

int compare_tokenizer(const json& peer, const json& corpus, const json& nfc) {
  const std::string name = peer["name"];
  auto tok = inflight::hf_tokenizer::try_load_files(peer["tokenizer_json"].get<std::string>(),
                                                    peer["tokenizer_config_json"].get<std::string>());
  if (!tok) {
    std::cout << name << ": load failed: " << tok.error().message << "\n";
    return 1;
  }
  int num_agree = 0, num_round_trip = 0, num_round_trip_checked = 0, num_shown = 0;
  for (std::size_t i = 0; i < corpus.size(); ++i) {
    const std::string text = corpus[i];
    const auto expected = peer["ids"][i].get<std::vector<token_id>>();
    const auto ids = (*tok)->encode(text, false);
    if (ids == expected) {
      ++num_agree;
    } else if (num_shown++ < 10) {
      std::cout << name << " MISMATCH " << json(text).dump() << "\n  peer " << show_ids(expected) << "\n  ours "
                << show_ids(ids) << "\n";
    }
    if (!can_round_trip(name, text)) continue;
    ++num_round_trip_checked;
    const std::string want = name == "qwen3" ? nfc[i].get<std::string>() : text;
    if ((*tok)->decode(ids, false) == want) {
      ++num_round_trip;
    } else if (num_shown++ < 10) {
      std::cout << name << " ROUND TRIP " << json(text).dump() << " -> " << json((*tok)->decode(ids, false)).dump() << "\n";
    }
  }
  std::cout << name << ": ids agree " << num_agree << "/" << corpus.size() << ", decode(encode(x)) == x "
            << num_round_trip << "/" << num_round_trip_checked << "\n";
  return num_agree == static_cast<int>(corpus.size()) && num_round_trip == num_round_trip_checked ? 0 : 1;
}

int compare_chats(const json& chats) {
  int num_agree = 0, num_checked = 0, num_peer_unparsed = 0;
  for (const json& chat : chats) {
    const std::string label = chat["tokenizer"].get<std::string>() + "/" + chat["template_name"].get<std::string>();
    if (chat.contains("peer_error") && chat["peer_error"].get<std::string>().starts_with("Parser Error")) {
      ++num_peer_unparsed;  // the peer's Jinja subset cannot read this template
      continue;
    }
    ++num_checked;
    std::vector<inflight::chat_message> messages;
    for (const json& m : chat["messages"]) messages.push_back({m["role"], m["content"]});
    auto tmpl = inflight::chat_template::try_detect(chat["template"].get<std::string>());
    if (!tmpl) {
      std::cout << label << ": not recognised: " << tmpl.error().message << "\n";
      continue;
    }
    auto rendered = tmpl->try_render(messages, chat["add_generation_prompt"], chat["bos"].get<std::string>(),
                                     chat["eos"].get<std::string>());
    if (chat.contains("peer_error")) {
      if (!rendered) ++num_agree;
      else std::cout << label << ": peer raised '" << chat["peer_error"].get<std::string>() << "', ours rendered\n";
      continue;
    }
    if (rendered && *rendered == chat["rendered"].get<std::string>()) {
      ++num_agree;
    } else {
      std::cout << label << " (" << tmpl->name() << ") CHAT MISMATCH\n  peer " << chat["rendered"].dump() << "\n  ours "
                << (rendered ? json(*rendered).dump() : "error: " + rendered.error().message) << "\n";
    }
  }
  std::cout << "chat templates: renderings agree " << num_agree << "/" << num_checked << " (" << num_peer_unparsed
            << " not comparable: the peer cannot parse the template)\n";
  return num_agree == num_checked ? 0 : 1;
}

/// Our rendering of a peer chat against the peer's: equal text, or both failing (with the
/// peer's raise_exception message in ours when it raised one).
bool agrees(const json& chat, const inflight::result<std::string>& rendered, const std::string& label) {
  if (chat.contains("peer_error")) {
    const std::string peer_error = chat["peer_error"];
    // Both failed: by the same raise_exception message, or (ours naming a template line)
    // on the same operation, which the two engines word differently.
    if (!rendered && (rendered.error().message.find(peer_error) != std::string::npos ||
                      rendered.error().message.find("template line") != std::string::npos)) {
      return true;
    }
    std::cout << label << ": peer raised '" << peer_error << "', ours "
              << (rendered ? "rendered " + json(*rendered).dump() : "failed: " + rendered.error().message) << "\n";
    return false;
  }
  if (rendered && *rendered == chat["rendered"].get<std::string>()) return true;
  std::cout << label << " JINJA MISMATCH\n  peer " << chat["rendered"].dump() << "\n  ours "
            << (rendered ? json(*rendered).dump() : "error: " + rendered.error().message) << "\n";
  return false;
}

/// The tokenizers' renderings (role + content conversations) with our Jinja interpreter.
int compare_chats_with_jinja(const json& chats) {
  int num_agree = 0, num_checked = 0;
  for (const json& chat : chats) {
    const std::string label = chat["tokenizer"].get<std::string>() + "/" + chat["template_name"].get<std::string>();
    if (chat.contains("peer_error") && chat["peer_error"].get<std::string>().starts_with("Parser Error")) continue;
    ++num_checked;
    auto tmpl = inflight::chat_template::try_from_jinja(chat["template"].get<std::string>());
    if (!tmpl) {
      std::cout << label << ": our Jinja parser refused it: " << tmpl.error().message << "\n";
      continue;
    }
    inflight::chat_input input;
    input.messages = chat["messages"];
    input.add_generation_prompt = chat["add_generation_prompt"];
    input.bos = chat["bos"];
    input.eos = chat["eos"];
    if (agrees(chat, tmpl->try_render(input), label)) ++num_agree;
  }
  std::cout << "chat templates through the Jinja interpreter: renderings agree " << num_agree << "/" << num_checked
            << "\n";
  return num_agree == num_checked ? 0 : 1;
}

/// Real templates (tools, tool calls, tool results, thinking) rendered by @huggingface/jinja.
int compare_jinja(const json& renderings) {
  int num_agree = 0, num_not_comparable = 0;
  std::map<std::string, std::pair<int, int>> per_template;  // agree, total
  for (const json& chat : renderings) {
    const std::string name = chat["template_name"];
    if (chat.contains("rendered") && chat["rendered"].get<std::string>().find("[object ") != std::string::npos) {
      ++num_not_comparable;  // the peer wrote a JavaScript object where Python's Jinja fails (str + dict)
      continue;
    }
    auto& [agree, total] = per_template[name];
    ++total;
    auto tmpl = inflight::chat_template::try_from_jinja(chat["template"].get<std::string>());
    if (!tmpl) {
      std::cout << name << ": our Jinja parser refused it: " << tmpl.error().message << "\n";
      continue;
    }
    const json& in = chat["input"];
    inflight::chat_input input;
    input.messages = in["messages"];
    input.tools = in["tools"];
    input.add_generation_prompt = in["add_generation_prompt"];
    input.bos = in["bos"];
    input.eos = in["eos"];
    input.extra = in["extra"];
    if (agrees(chat, tmpl->try_render(input), name + " #" + std::to_string(total))) ++agree, ++num_agree;
  }
  for (const auto& [name, counts] : per_template) {
    std::cout << "  jinja " << name << ": " << counts.first << "/" << counts.second << "\n";
  }
  const int num_checked = static_cast<int>(renderings.size()) - num_not_comparable;
  std::cout << "real templates with @huggingface/jinja: renderings agree " << num_agree << "/" << num_checked << " ("
            << num_not_comparable << " not comparable: the peer writes a JavaScript object as text)\n";
  return num_agree == num_checked ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " PEER.json\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::cerr << "cannot open " << argv[1] << "\n";
    return 2;
  }
  const json peer = json::parse(in);
  int failures = 0;
  for (const json& t : peer["tokenizers"]) failures += compare_tokenizer(t, peer["corpus"], peer["nfc"]);
  failures += compare_chats(peer["chats"]);
  failures += compare_chats_with_jinja(peer["chats"]);
  failures += compare_jinja(peer["jinja"]);
  std::cout << (failures == 0 ? "PASS" : "FAIL") << "\n";
  return failures == 0 ? 0 : 1;
}
