// /v1/responses through the official openai npm client, every body and stream event
// validated with ajv against OpenAI's Responses schemas (responses-schemas.mjs):
// responses.create streamed and not (the same text as the chat completion it becomes),
// the SDK's stream helper, a forced function call, its output sent back with
// previous_response_id, retrieve and delete, a reasoning item (stories260K under a
// guided_regex that writes <think>...</think>, with model.reasoning_parser=think) and
// the 400 / 404 error bodies.
//   node responses-client.mjs BASE_URL
import assert from 'node:assert/strict';
import Ajv from 'ajv';
import OpenAI from 'openai';
import * as schemas from './responses-schemas.mjs';
import { error as errorSchema } from './openai-schemas.mjs';

const [baseURL] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0 });
const ajv = new Ajv({ allErrors: true, strict: true });
const validResponse = ajv.compile(schemas.response);
const validDeleted = ajv.compile(schemas.deletedResponse);
const validError = ajv.compile(errorSchema);
const validEvent = Object.fromEntries(Object.entries(schemas.events).map(([type, s]) => [type, ajv.compile(s)]));
let numValidated = 0;

function check(validate, body, what) {
  if (!validate(body)) {
    throw new Error(`${what}: does not match OpenAI's schema: ${ajv.errorsText(validate.errors)}\n` +
      JSON.stringify(body).slice(0, 2000));
  }
  ++numValidated;
}

/// Every event of a stream checked: its schema, sequence numbers 0, 1, 2, ..., created first.
function checkEvents(events, what) {
  assert.ok(events.length >= 3, `${what}: ${events.length} events`);
  events.forEach((e, i) => {
    assert.ok(validEvent[e.type], `${what}: unexpected event type ${e.type}`);
    check(validEvent[e.type], e, `${what} event ${i} (${e.type})`);
    assert.equal(e.sequence_number, i, `${what}: sequence numbers count up from 0`);
  });
  assert.equal(events[0].type, 'response.created');
  assert.equal(events[1].type, 'response.in_progress');
  return events.at(-1);
}

/// The raw bytes of a stream: each event is `event: <type>` then `data: <json>`.
async function rawEvents(body) {
  const res = await fetch(`${baseURL}/responses`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...body, stream: true }),
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type'), /^text\/event-stream/);
  const text = await res.text();
  return text.split('\n\n').filter((b) => b.length > 0).map((block) => {
    const m = /^event: ([a-z_.]+)\ndata: (.*)$/s.exec(block);
    assert.ok(m, `an event block is "event: T\\ndata: {...}": ${block}`);
    const data = JSON.parse(m[2]);
    assert.equal(data.type, m[1]);
    return data;
  });
}

const textOf = (response) => response.output.filter((o) => o.type === 'message')
  .flatMap((o) => o.content.map((c) => c.text)).join('');

const model = (await client.models.list()).data[0].id;

// --- plain text, not streamed and streamed: the chat completion's tokens --------------
const chat = await client.chat.completions.create({
  model, messages: [{ role: 'system', content: 'Be kind.' }, { role: 'user', content: 'Tell me a story' }],
  max_tokens: 16, temperature: 0,
});
const request = { model, input: 'Tell me a story', instructions: 'Be kind.', max_output_tokens: 16, temperature: 0 };
const plain = await client.responses.create(request);
check(validResponse, plain, 'responses.create');
assert.match(plain.id, /^resp_/);
assert.equal(plain.output_text, chat.choices[0].message.content);
assert.equal(plain.usage.input_tokens, chat.usage.prompt_tokens);
assert.equal(plain.status, chat.choices[0].finish_reason === 'length' ? 'incomplete' : 'completed');

const streamedEvents = [];
for await (const e of await client.responses.create({ ...request, stream: true })) streamedEvents.push(e);
const last = checkEvents(streamedEvents, 'responses.create stream');
assert.equal(streamedEvents.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join(''),
  plain.output_text);
assert.equal(textOf(last.response), plain.output_text);
checkEvents(await rawEvents(request), 'raw stream');
// The SDK's stream helper rebuilds the response from the events.
const helper = client.responses.stream(request);
const final = await helper.finalResponse();
assert.equal(textOf(final), plain.output_text);  // this SDK's helper leaves output_text out

// --- a forced function call, then its output through previous_response_id -------------
const tools = [{
  type: 'function', name: 'get_weather', description: 'Weather in a city', strict: true,
  parameters: {
    type: 'object', properties: { city: { type: 'string', minLength: 1, maxLength: 10 }, unit: { enum: ['c', 'f'] } },
    required: ['city', 'unit'], additionalProperties: false,
  },
}];
const validArgs = new Ajv({ strict: false }).compile(tools[0].parameters);
const forced = await client.responses.create({
  model, input: 'What is the weather in Oslo?', tools, tool_choice: { type: 'function', name: 'get_weather' },
  temperature: 1, seed: 11, max_output_tokens: 200,
});
check(validResponse, forced, 'forced call');
assert.equal(forced.status, 'completed');
const calls = forced.output.filter((o) => o.type === 'function_call');
assert.equal(calls.length, 1);
assert.equal(calls[0].name, 'get_weather');
assert.match(calls[0].call_id, /^call_/);
assert.ok(validArgs(JSON.parse(calls[0].arguments)), calls[0].arguments);

const streamedCall = [];
for await (const e of await client.responses.create({
  model, input: 'What is the weather in Oslo?', tools, tool_choice: 'required', parallel_tool_calls: false,
  temperature: 1, seed: 12, max_output_tokens: 200, stream: true,
})) streamedCall.push(e);
const callDone = checkEvents(streamedCall, 'streamed call');
const argsDone = streamedCall.find((e) => e.type === 'response.function_call_arguments.done');
assert.ok(argsDone, 'function_call_arguments.done');
assert.equal(streamedCall.filter((e) => e.type === 'response.function_call_arguments.delta').map((e) => e.delta).join(''),
  argsDone.arguments);
assert.ok(validArgs(JSON.parse(argsDone.arguments)), argsDone.arguments);
assert.equal(callDone.response.parallel_tool_calls, false);
assert.deepEqual(callDone.response.output.filter((o) => o.type === 'function_call').map((o) => o.arguments),
  [argsDone.arguments], 'parallel_tool_calls false: one call');

const answer = await client.responses.create({
  model, previous_response_id: forced.id, tools, temperature: 0, max_output_tokens: 16,
  input: [{ type: 'function_call_output', call_id: calls[0].call_id, output: JSON.stringify({ temperature: 12 }) }],
});
check(validResponse, answer, 'answer after the call');
assert.equal(answer.previous_response_id, forced.id);
assert.ok(answer.output_text.length > 0);
assert.equal(answer.output.filter((o) => o.type === 'function_call').length, 0);
assert.ok(answer.usage.input_tokens > forced.usage.input_tokens, 'the stored conversation is in the prompt');

// --- retrieve and delete ------------------------------------------------------------------
const retrieved = await client.responses.retrieve(answer.id);
check(validResponse, retrieved, 'responses.retrieve');
assert.equal(retrieved.id, answer.id);
assert.deepEqual(retrieved.output, answer.output);
const delRes = await fetch(`${baseURL}/responses/${forced.id}`, { method: 'DELETE' });
assert.equal(delRes.status, 200);
check(validDeleted, await delRes.json(), 'DELETE /v1/responses/{id}');
await assert.rejects(client.responses.retrieve(forced.id), (e) => e.status === 404);
const missing = await fetch(`${baseURL}/responses`, {
  method: 'POST', headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ model, input: 'x', previous_response_id: forced.id }),
});
assert.equal(missing.status, 404);
const missingBody = await missing.json();
check(validError, missingBody, 'unknown previous_response_id');
assert.equal(missingBody.error.param, 'previous_response_id');

// --- a reasoning item -------------------------------------------------------------------
const thinking = { model, input: 'Tell me a story', max_output_tokens: 60, seed: 5,
  guided_regex: '<think>[a-z ]{1,20}</think>[A-Za-z ]{1,20}' };
const reasoned = await client.responses.create(thinking);
check(validResponse, reasoned, 'reasoning');
assert.equal(reasoned.output[0].type, 'reasoning');
assert.ok(reasoned.output[0].content[0].text.length > 0);
assert.ok(!reasoned.output_text.includes('think>'), reasoned.output_text);
assert.ok(reasoned.usage.output_tokens_details.reasoning_tokens > 0);
const reasonedEvents = [];
for await (const e of await client.responses.create({ ...thinking, stream: true })) reasonedEvents.push(e);
checkEvents(reasonedEvents, 'reasoning stream');
assert.equal(reasonedEvents.filter((e) => e.type === 'response.reasoning_text.delta').map((e) => e.delta).join(''),
  reasoned.output[0].content[0].text);

// --- refusals -------------------------------------------------------------------------------
for (const [body, param] of [
  [{ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'https://example.com/a.png' }] }] },
    'input[0].content[0].type'],
  [{ input: 'x', tools: [{ type: 'web_search_preview' }] }, 'tools[0].type'],
  [{ input: 'x', max_output_tokens: 0 }, 'max_output_tokens'],
]) {
  const res = await fetch(`${baseURL}/responses`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, ...body }),
  });
  assert.equal(res.status, 400);
  const json = await res.json();
  check(validError, json, `400 for ${param}`);
  assert.equal(json.error.param, param);
}

console.log(`openai client /v1/responses: text, streams, tool round trip, stored conversation, reasoning, ` +
  `refusals: ok (${numValidated} bodies and events validated)`);
