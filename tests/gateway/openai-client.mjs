// Drives `inflight serve` with the official openai npm client: completions and chat
// completions, streamed and not, greedy, embeddings (base64, the client's default, and
// float), and errors.
//   node openai-client.mjs BASE_URL EXPECTED_TEXT_FILE
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';

const [baseURL, expectedFile] = process.argv.slice(2);
const expected = readFileSync(expectedFile, 'utf8');  // greedy text for the prompt, 20 tokens
const prompt = 'Once upon a time';
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0 });

const models = await client.models.list();
const model = models.data[0].id;
assert.equal(model, 'stories260K');

const completion = await client.completions.create({ model, prompt, max_tokens: 20, temperature: 0 });
assert.equal(completion.object, 'text_completion');
assert.equal(completion.choices[0].text, expected);
assert.equal(completion.choices[0].finish_reason, 'length');
assert.deepEqual(completion.usage, {
  prompt_tokens: 5, completion_tokens: 20, total_tokens: 25, prompt_tokens_details: { cached_tokens: 0 },
});

const stream = await client.completions.create({
  model, prompt, max_tokens: 20, temperature: 0, stream: true, stream_options: { include_usage: true },
});
let streamed = '';
let finish = null;
let usage = null;
for await (const chunk of stream) {
  for (const choice of chunk.choices) {
    streamed += choice.text;
    if (choice.finish_reason) finish = choice.finish_reason;
  }
  if (chunk.usage) usage = chunk.usage;
}
assert.equal(streamed, expected);
assert.equal(finish, 'length');
assert.equal(usage.completion_tokens, 20);

const messages = [{ role: 'user', content: 'Tell me a story' }];
const chat = await client.chat.completions.create({ model, messages, max_tokens: 16, temperature: 0 });
assert.equal(chat.object, 'chat.completion');
assert.equal(chat.choices[0].message.role, 'assistant');
const chatText = chat.choices[0].message.content;
assert.ok(chatText.length > 0);

const chatStream = await client.chat.completions.create({ model, messages, max_tokens: 16, temperature: 0, stream: true });
let chatStreamed = '';
let role = null;
for await (const chunk of chatStream) {
  const delta = chunk.choices[0]?.delta ?? {};
  if (delta.role) role = delta.role;
  chatStreamed += delta.content ?? '';
}
assert.equal(role, 'assistant');
assert.equal(chatStreamed, chatText);

const many = await client.completions.create({ model, prompt, max_tokens: 4, n: 3, seed: 1 });
assert.deepEqual(many.choices.map((c) => c.index).sort(), [0, 1, 2]);

await assert.rejects(
  client.completions.create({ model, prompt, max_tokens: -1 }),
  (err) => err instanceof OpenAI.APIError && err.status === 400 && err.param === 'max_tokens',
);
await assert.rejects(
  client.completions.create({ model: 'gpt-4', prompt }),
  (err) => err instanceof OpenAI.NotFoundError,
);
// Embeddings, called as an application would: the client asks for base64 unless told
// otherwise and decodes it to numbers itself.
const inputs = ['Once upon a time', 'The little dog ran to the park', 'Lily'];
const embedded = await client.embeddings.create({ model, input: inputs });
assert.equal(embedded.object, 'list');
assert.equal(embedded.model, model);
assert.equal(embedded.data.length, inputs.length);
const norm = (v) => Math.sqrt(v.reduce((sum, x) => sum + x * x, 0));
for (const [i, item] of embedded.data.entries()) {
  assert.equal(item.object, 'embedding');
  assert.equal(item.index, i);
  assert.equal(item.embedding.length, 64);  // stories260K's width
  assert.ok(Math.abs(norm(item.embedding) - 1) < 1e-5, `norm of embedding ${i}`);
}
assert.ok(embedded.usage.prompt_tokens >= inputs.length);
assert.equal(embedded.usage.total_tokens, embedded.usage.prompt_tokens);
const close = (a, b) => a.length === b.length && a.every((x, k) => Math.abs(x - b[k]) < 1e-5);
const asFloats = await client.embeddings.create({ model, input: inputs, encoding_format: 'float' });
for (const [i, item] of asFloats.data.entries()) assert.ok(close(item.embedding, embedded.data[i].embedding));
const single = await client.embeddings.create({ model, input: inputs[2] });
assert.equal(single.data.length, 1);
assert.ok(close(single.data[0].embedding, embedded.data[2].embedding));
assert.ok(!close(embedded.data[0].embedding, embedded.data[1].embedding));
await assert.rejects(
  client.embeddings.create({ model, input: [] }),
  (err) => err instanceof OpenAI.APIError && err.status === 400 && err.param === 'input',
);
await assert.rejects(
  client.embeddings.create({ model, input: 'x', dimensions: 8 }),
  (err) => err instanceof OpenAI.APIError && err.status === 400 && err.param === 'dimensions',
);

console.log('openai client: completions, chat, streaming, n, embeddings, errors: ok');
