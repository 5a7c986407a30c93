// Validates `inflight serve`'s responses against OpenAI's response schemas
// (openai-schemas.mjs) with ajv: completions and chat completions with n > 1 and
// logprobs, their stream chunks (logprobs, the usage chunk), embeddings, /v1/models and
// error bodies, including the 400s for refused fields and for requests the waiting queue
// could never hold.
//   node openai-schema.mjs BASE_URL
import assert from 'node:assert/strict';
import Ajv from 'ajv';
import * as schemas from './openai-schemas.mjs';

const [baseURL] = process.argv.slice(2);
const ajv = new Ajv({ allErrors: true, strict: true });
const validators = Object.fromEntries(Object.entries(schemas).map(([name, s]) => [name, ajv.compile(s)]));
let numValidated = 0;

function check(schema, body, what) {
  const validate = validators[schema];
  if (!validate(body)) {
    throw new Error(`${what}: does not match OpenAI's ${schema} schema: ${ajv.errorsText(validate.errors)}\n` +
                    JSON.stringify(body).slice(0, 2000));
  }
  ++numValidated;
}

async function post(path, body) {
  const res = await fetch(baseURL + path, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

/// The JSON events of an SSE body, [DONE] last.
function sseEvents(text) {
  const events = text.split('\n\n').filter((e) => e.length > 0).map((e) => {
    assert.ok(e.startsWith('data: '), `an SSE event starts with "data: ": ${e}`);
    return e.slice(6);
  });
  assert.equal(events.at(-1), '[DONE]');
  return events.slice(0, -1).map((e) => JSON.parse(e));
}

async function postJSON(path, body, schema, status = 200) {
  const r = await post(path, body);
  assert.equal(r.status, status, `${path} ${JSON.stringify(body)}: ${r.text}`);
  const json = JSON.parse(r.text);
  check(schema, json, `${path} ${JSON.stringify(body)}`);
  return json;
}

const list = await (await fetch(baseURL + '/models')).json();
check('models', list, 'GET /v1/models');
const model = list.data[0].id;
const prompt = 'Once upon a time';
const messages = [{ role: 'user', content: 'Tell me a story' }];

// Not streamed, n > 1, logprobs.
const completion = await postJSON('/completions', { model, prompt, max_tokens: 6, n: 2, logprobs: 2, seed: 3, ignore_eos: true },
  'completion');
assert.equal(completion.choices.length, 2);
assert.equal(completion.choices[1].logprobs.tokens.length, 6);
const chat = await postJSON('/chat/completions',
  { model, messages, max_tokens: 6, n: 2, logprobs: true, top_logprobs: 2, seed: 3 }, 'chatCompletion');
assert.equal(chat.choices.length, 2);
assert.equal(chat.choices[0].message.refusal, null);
assert.equal(chat.choices[0].logprobs.content[0].top_logprobs.length, 2);
const plainChat = await postJSON('/chat/completions', { model, messages, max_tokens: 3 }, 'chatCompletion');
assert.equal(plainChat.choices[0].logprobs, null);

// Streamed, n > 1, logprobs and the usage chunk.
for (const [path, body, schema] of [
  ['/completions', { model, prompt, max_tokens: 5, n: 2, logprobs: 1, echo: true, ignore_eos: true }, 'completionChunk'],
  ['/chat/completions', { model, messages, max_tokens: 5, n: 2, logprobs: true, top_logprobs: 1, ignore_eos: true },
    'chatChunk'],
]) {
  const r = await post(path, { ...body, stream: true, stream_options: { include_usage: true } });
  assert.equal(r.status, 200, r.text);
  const chunks = sseEvents(r.text);
  chunks.forEach((chunk, i) => check(schema, chunk, `${path} stream chunk ${i}`));
  const usage = chunks.at(-1);
  assert.deepEqual(usage.choices, []);
  assert.equal(usage.usage.completion_tokens, 10);
  const indexes = new Set(chunks.flatMap((c) => c.choices.map((choice) => choice.index)));
  assert.deepEqual([...indexes].sort(), [0, 1]);
  assert.ok(chunks.some((c) => c.choices.some((choice) => choice.logprobs !== null)), 'some chunk carries logprobs');
  assert.ok(chunks.some((c) => c.choices.some((choice) => choice.finish_reason === 'length')));
}

await postJSON('/embeddings', { model, input: ['a cat', 'a dog'] }, 'embeddings');

// Errors: a refused field, a request no queue could hold, an unknown model, bad JSON.
const suffix = await postJSON('/completions', { model, prompt, suffix: 'The end.' }, 'error', 400);
assert.equal(suffix.error.code, 'unsupported');
assert.equal(suffix.error.param, 'suffix');
const bestOf = await postJSON('/completions', { model, prompt, best_of: 3 }, 'error', 400);
assert.equal(bestOf.error.param, 'best_of');
const beam = await postJSON('/chat/completions', { model, messages, use_beam_search: true }, 'error', 400);
assert.equal(beam.error.param, 'use_beam_search');
const tooMany = await postJSON('/completions', { model, prompt, max_tokens: 2, n: 100 }, 'error', 400);
assert.equal(tooMany.error.code, 'exceeds_queue_capacity');
await postJSON('/chat/completions', { model: 'gpt-4o', messages }, 'error', 404);
const badJSON = await post('/completions', undefined);
assert.equal(badJSON.status, 400);
check('error', JSON.parse(badJSON.text), 'an empty body');
await postJSON('/completions', { model, prompt, max_tokens: 0 }, 'error', 400);

console.log(`openai schema: ${numValidated} responses match OpenAI's schemas`);
