// The Messages API (/v1/messages) through Anthropic's official npm client: messages.create
// and messages.stream (the SDK's own event parsing is the schema check: it throws on
// events it cannot read), a forced tool call and its tool_result round trip, a thinking
// block, stop reasons, count_tokens, x-api-key, and errors in Anthropic's shape.
//   node anthropic-client.mjs BASE_URL API_KEY
// The server runs stories260K (2048-token context) with model.reasoning_parser=think.
// `seed` and `guided_regex` are inflight's own fields, which the SDK sends as given.
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';

const [baseURL, apiKey] = process.argv.slice(2);
const client = new Anthropic({ baseURL, apiKey, maxRetries: 0 });
const models = await (await fetch(`${baseURL}/v1/models`, { headers: { 'x-api-key': apiKey } })).json();
const model = models.data[0].id;

// --- text: create and stream agree with the chat route ----------------------------------
const messages = [{ role: 'user', content: 'Once upon a time' }];
const created = await client.messages.create({ model, max_tokens: 24, temperature: 0, messages });
assert.match(created.id, /^msg_/);
assert.equal(created.type, 'message');
assert.equal(created.role, 'assistant');
assert.equal(created.model, model);
assert.equal(created.content.length, 1);
assert.equal(created.content[0].type, 'text');
const text = created.content[0].text;
assert.ok(text.length > 0);
assert.ok(['end_turn', 'max_tokens'].includes(created.stop_reason), created.stop_reason);
assert.equal(created.stop_sequence, null);
assert.ok(created.usage.output_tokens > 0 && created.usage.output_tokens <= 24);
assert.ok(created.usage.input_tokens + created.usage.cache_read_input_tokens > 0);
const chat = await (await fetch(`${baseURL}/v1/chat/completions`, {
  method: 'POST',
  headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
  body: JSON.stringify({ model, max_tokens: 24, temperature: 0, messages }),
})).json();
assert.equal(text, chat.choices[0].message.content);
assert.equal(created.stop_reason, chat.choices[0].finish_reason === 'length' ? 'max_tokens' : 'end_turn');

const stream = client.messages.stream({ model, max_tokens: 24, temperature: 0, messages });
const eventTypes = [];
let streamedText = '';
stream.on('streamEvent', (event) => eventTypes.push(event.type));
stream.on('text', (delta) => { streamedText += delta; });
const streamed = await stream.finalMessage();
assert.equal(streamedText, text);
assert.deepEqual(streamed.content, created.content);
assert.equal(streamed.stop_reason, created.stop_reason);
assert.equal(streamed.usage.output_tokens, created.usage.output_tokens);
assert.equal(eventTypes[0], 'message_start');
assert.equal(eventTypes[1], 'content_block_start');
assert.deepEqual(eventTypes.slice(-3), ['content_block_stop', 'message_delta', 'message_stop']);

// max_tokens cuts the answer.
const short = await client.messages.create({ model, max_tokens: 3, temperature: 0, messages });
assert.equal(short.stop_reason, 'max_tokens');
assert.equal(short.usage.output_tokens, 3);
assert.ok(text.startsWith(short.content[0].text), `${short.content[0].text} | ${text}`);

// A stop sequence from the greedy answer: the text ends before it.
const words = text.trim().split(/\s+/);
const stopWord = words.find((w, i) => i >= 2 && /^[a-z]{3,}$/.test(w) && text.indexOf(w) > 0);
assert.ok(stopWord, text);
const stopped = await client.messages.create({ model, max_tokens: 24, temperature: 0, messages, stop_sequences: [stopWord] });
assert.equal(stopped.stop_reason, 'stop_sequence');
assert.equal(stopped.stop_sequence, stopWord);
assert.equal(stopped.content[0].text, text.slice(0, text.indexOf(stopWord)));

// --- a forced tool call, then its result -------------------------------------------------
const tools = [{
  name: 'get_weather',
  description: 'Weather in a city',
  input_schema: {
    type: 'object',
    properties: { city: { type: 'string', minLength: 1, maxLength: 8 }, unit: { enum: ['c', 'f'] } },
    required: ['city', 'unit'],
    additionalProperties: false,
  },
}];
const ask = [{ role: 'user', content: 'What is the weather in Oslo?' }];
const toolChoice = { type: 'tool', name: 'get_weather' };
const called = await client.messages.create({
  model, max_tokens: 100, temperature: 1, seed: 7, messages: ask, tools, tool_choice: toolChoice,
});
assert.equal(called.stop_reason, 'tool_use');
const use = called.content.find((b) => b.type === 'tool_use');
assert.ok(use, JSON.stringify(called.content));
assert.match(use.id, /^toolu_/);
assert.equal(use.name, 'get_weather');
assert.equal(typeof use.input.city, 'string');
assert.ok(use.input.city.length >= 1 && use.input.city.length <= 8, use.input.city);
assert.ok(['c', 'f'].includes(use.input.unit), JSON.stringify(use.input));

const toolStream = client.messages.stream({
  model, max_tokens: 100, temperature: 1, messages: ask, tools, tool_choice: toolChoice,
});
let inputJson = '';
toolStream.on('inputJson', (partial) => { inputJson += partial; });
const streamedCall = await toolStream.finalMessage();
assert.equal(streamedCall.stop_reason, 'tool_use');
const streamedUse = streamedCall.content.find((b) => b.type === 'tool_use');
assert.ok(streamedUse, JSON.stringify(streamedCall.content));
assert.deepEqual(streamedUse.input, JSON.parse(inputJson));
assert.ok(['c', 'f'].includes(streamedUse.input.unit));

const answer = await client.messages.create({
  model, max_tokens: 16, temperature: 0, tools,
  messages: [
    ...ask,
    { role: 'assistant', content: called.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'Sunny, 20 degrees' }] },
  ],
});
assert.ok(['end_turn', 'max_tokens'].includes(answer.stop_reason), answer.stop_reason);
assert.equal(answer.content[0].type, 'text');
assert.ok(answer.content[0].text.length > 0);

// --- a thinking block (the grammar writes the reasoning markers) --------------------------
const thinkingBody = {
  model, max_tokens: 80, temperature: 1, seed: 5, messages,
  guided_regex: '<think>[a-z ]{1,20}</think>[A-Za-z ]{1,20}',
};
const thought = await client.messages.create(thinkingBody);
assert.deepEqual(thought.content.map((b) => b.type), ['thinking', 'text'], JSON.stringify(thought.content));
assert.match(thought.content[0].thinking, /^[a-z ]{1,20}$/);
assert.equal(thought.content[0].signature, '');
assert.match(thought.content[1].text, /^[A-Za-z ]{1,20}$/);
const thinkStream = client.messages.stream(thinkingBody);
let thinking = '';
thinkStream.on('thinking', (delta) => { thinking += delta; });
const streamedThought = await thinkStream.finalMessage();
assert.deepEqual(streamedThought.content.map((b) => b.type), ['thinking', 'text']);
assert.equal(streamedThought.content[0].thinking, thinking);
assert.match(thinking, /^[a-z ]{1,20}$/);

// --- count_tokens: the prompt /v1/messages renders ----------------------------------------
const counted = await client.messages.countTokens({ model, messages: ask, tools });
const forCount = await client.messages.create({ model, max_tokens: 1, messages: ask, tools });
assert.equal(counted.input_tokens, forCount.usage.input_tokens + forCount.usage.cache_read_input_tokens);
const plain = await client.messages.countTokens({ model, messages: ask });
assert.ok(counted.input_tokens > plain.input_tokens, 'the tools are in the prompt');

// --- errors in Anthropic's shape ----------------------------------------------------------
async function refused(body, status, type, text) {
  try {
    await client.messages.create(body);
  } catch (e) {
    assert.ok(e instanceof Anthropic.APIError, String(e));
    assert.equal(e.status, status, e.message);
    assert.equal(e.error.type, 'error');
    assert.equal(e.error.error.type, type);
    if (text) assert.ok(e.error.error.message.includes(text), e.error.error.message);
    return;
  }
  assert.fail(`accepted: ${JSON.stringify(body)}`);
}
await refused({ model, messages }, 400, 'invalid_request_error', 'max_tokens is required');
await refused({
  model, max_tokens: 5,
  messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AA==' } }] }],
}, 400, 'invalid_request_error', 'messages[0].content[0].type');
await refused({ model, max_tokens: 5, messages, tools: [{ type: 'web_search_20250305', name: 'web_search' }] },
  400, 'invalid_request_error', 'tools[0].type');
await refused({ model: 'claude-nonexistent', max_tokens: 5, messages }, 404, 'not_found_error');
const stranger = new Anthropic({ baseURL, apiKey: 'sk-wrong', maxRetries: 0 });
try {
  await stranger.messages.create({ model, max_tokens: 5, messages });
  assert.fail('a wrong key was accepted');
} catch (e) {
  assert.ok(e instanceof Anthropic.AuthenticationError, String(e));
  assert.equal(e.error.error.type, 'authentication_error');
}
console.log('anthropic client: ok');
