// The strings both tokenizers encode: hand-written cases plus seeded combinations of
// fragments (scripts, code, emoji, white space runs, numbers, special-token look-alikes).
// Only characters assigned by Unicode 14 are used: newer ones classify differently
// across regex engines.

const handWritten = [
  "", " ", "  ", "\t", "\n", "\n\n", "\r\n", " \n ", "   leading", "trailing   ", "a  b   c    d",
  "Hello world", "Hello, world!", "hello world", "HELLO WORLD", "The quick brown fox jumps over the lazy dog.",
  "I'm, you're, they've, we'll, he'd, it's", "I'M YOU'RE THEY'VE WE'LL HE'D IT'S", "don't can't won't",
  "'s 't 're 've 'm 'll 'd", "''quoted''", "\"double\" `back`",
  "int main() { return 0; }", "def f(x):\n    return x * 2\n", "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}",
  "<div class=\"x\">&amp;</div>", "SELECT * FROM users WHERE id = 42;", "a->b::c<d>(e) && f || !g",
  "x = [1, 2, 3]\ny = {'k': \"v\"}", "#include <vector>\n#define MAX 100", "    indented\n        more\n",
  "你好，世界！", "我爱自然语言处理。", "中文和English混合text", "日本語のテキストです。", "カタカナとひらがな",
  "東京は日本の首都です", "한국어 텍스트", "안녕하세요", "Привет, мир!", "Ελληνικά γράμματα", "مرحبا بالعالم",
  "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก", "Tiếng Việt có dấu", "Ça va? Où est l'hôtel? Über Straße",
  "😀", "😀😃😄", "👍🏽", "👨‍👩‍👧‍👦", "🇺🇸🇫🇷", "❤️", "emoji 🤖 in text", "🎉🎉🎉 party",
  "0", "7", "42", "123", "1234", "12345678901234567890", "3.14159", "1,000,000", "-273.15", "1e-10", "0x1F",
  "2024-01-15T10:30:00Z", "v1.2.3", "٣٤٥", "ⅫⅣ", "①②③", "１２３",
  "<s>", "</s>", "<unk>", "<s>hello</s>", "a</s>b", "<s> <s>", "<|begin_of_text|>", "<|end_of_text|>",
  "<|eot_id|>", "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>", "<|im_start|>", "<|im_end|>",
  "<|im_start|>user\nhello<|im_end|>\n", "<|endoftext|>", "<think>\nreasoning\n</think>\n\nanswer",
  "<tool_call>{}</tool_call>", "<|im_start", "im_start|>", "<|", "|>", "<|im_start|", "<|eot_id", "<|reserved_special_token_5|>",
  "<0x41>", "<0x0A>", "<0xZZ>", "<0x>", "<0x4", "▁", "▁▁", "▁hello", "Ġ", "Ċ", "ĠĠ", "<<SYS>>", "[INST]", "[/INST]",
  "e\u0301", "é", "A\u030A", "Å", "\u1100\u1161\u11A8", "n\u0303o", "o\u0308\u0301", "\u0041\u0323\u0307", "ﬁ", "Ω", "Å",
  "\u00a0", "a\u00a0b", "\u3000x", "\u2009thin", "x\u200by", "\u200d", "\ufeffbom", "\u0085nel", "a\u180eb", "\u2028\u2029",
  "\u0000", "\u0001\u0002", "\u007f", "tab\there", "mixed \t\n \r\n\t spaces",
  "A".repeat(300), "ab".repeat(200), " ".repeat(50), "\n".repeat(20), "😀".repeat(40), "中".repeat(100),
  "word ".repeat(400), "0123456789".repeat(30),
];

const fragments = [
  "hello", "world", "The", " cat", "sat", " on the mat", "token", "ization", "GPU", "inference",
  "HTTP/1.1 200 OK", "std::vector<int>", "fn main() {}", "console.log(x);", "i++", "a==b", "#!/bin/sh", "$HOME",
  "你好", "世界", "自然语言", "日本語", "こんにちは", "テスト", "한국", "Привет", "مرحبا", "שלום", "नमस्ते", "ไทย",
  "😀", "👍🏽", "👨‍👩‍👧", "🇯🇵", "✨", "🔥", "∑", "∞", "≠", "→", "©", "°C", "€100", "£5", "¥",
  " ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", " \n", "\n ", " \t ", "\u00a0", "\u3000", "\ufeff",
  "0", "12", "345", "6789", "3.5", "1,234", "99%", "2^10", "-1",
  "'s", "'T", "'re", "'VE", "'m", "'ll", "'D", "n't", "'",
  "<s>", "</s>", "<unk>", "<|begin_of_text|>", "<|eot_id|>", "<|end_header_id|>", "<|im_start|>", "<|im_end|>",
  "<|endoftext|>", "<think>", "</think>", "<|im_start", "<|", "|>", "<0x41>", "<0xE4>", "▁", "Ġ",
  "é", "e\u0301", "ö", "o\u0308", "ß", "ñ", "Å", "A\u030A", "ǅ", "ﬀ",
  ".", ",", "!", "?", "...", "—", "-", "_", "/", "\\", "(", ")", "[", "]", "{", "}", "\"", "`", "*", "&", "|", "~",
];

// Small deterministic generator (mulberry32) so both sides see the same corpus every run.
function rng(seed) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function buildCorpus(numGenerated = 700) {
  const random = rng(20240611);
  const pick = (list) => list[Math.floor(random() * list.length)];
  const generated = [];
  for (let i = 0; i < numGenerated; ++i) {
    const parts = 1 + Math.floor(random() * 7);
    let text = "";
    for (let p = 0; p < parts; ++p) {
      text += pick(fragments);
      if (random() < 0.35) text += pick([" ", "", "\n", "  ", "\t"]);
    }
    generated.push(text);
  }
  return [...handWritten, ...generated];
}
