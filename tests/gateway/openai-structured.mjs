// Structured outputs and tool calling through the official openai npm client, with
// sampling (temperature 1) so that only the grammar keeps the output valid: ajv checks
// every JSON answer and every call's arguments against the schema that was sent.
//   node openai-structured.mjs BASE_URL
// Needs the engine to apply the request's grammar (sampling_params.grammar).
import assert from 'node:assert/strict';
import Ajv from 'ajv';
import OpenAI from 'openai';

const [baseURL] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0 });
const ajv = new Ajv({ strict: false });
const model = (await client.models.list()).data[0].id;
const seeds = [1, 2, 3, 4, 5];

// --- response_format: json_schema ---------------------------------------------------
const person = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 12 },
    age: { type: 'integer', minimum: 0, maximum: 120 },
    pet: { enum: ['cat', 'dog', null] },
  },
  required: ['name', 'age', 'pet'],
  additionalProperties: false,
};
const validPerson = ajv.compile(person);
const messages = [{ role: 'user', content: 'Tell me about Lily.' }];
const responseFormat = { type: 'json_schema', json_schema: { name: 'person', schema: person, strict: true } };
for (const seed of seeds) {
  const r = await client.chat.completions.create({
    model, messages, temperature: 1, seed, max_tokens: 200, response_format: responseFormat,
  });
  const { content, refusal } = r.choices[0].message;
  assert.equal(refusal, null);
  assert.equal(r.choices[0].finish_reason, 'stop', `seed ${seed}: ${content}`);
  const value = JSON.parse(content);
  assert.ok(validPerson(value), `seed ${seed}: ${content}: ${ajv.errorsText(validPerson.errors)}`);
}
// Streamed, and on /v1/completions.
const streamed = await client.chat.completions.create({
  model, messages, temperature: 1, seed: 9, max_tokens: 200, response_format: responseFormat, stream: true,
});
let streamedText = '';
for await (const chunk of streamed) streamedText += chunk.choices[0]?.delta?.content ?? '';
assert.ok(validPerson(JSON.parse(streamedText)), streamedText);
const completion = await client.completions.create({
  model, prompt: 'Once upon a time', temperature: 1, seed: 3, max_tokens: 200, response_format: responseFormat,
});
assert.ok(validPerson(JSON.parse(completion.choices[0].text)), completion.choices[0].text);
// vLLM's field, passed through the client as an extra body field.
const choice = await client.chat.completions.create({
  model, messages, temperature: 1, seed: 4, max_tokens: 20, structured_outputs: { choice: ['yes', 'no'] },
});
assert.ok(['yes', 'no'].includes(choice.choices[0].message.content), choice.choices[0].message.content);

// --- tool_choice "required": always a valid call ----------------------------------------
const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather in a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', minLength: 1, maxLength: 10 }, unit: { enum: ['c', 'f'] } },
        required: ['city', 'unit'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'get_time',
      parameters: { type: 'object', properties: { zone: { type: 'integer', minimum: -12, maximum: 14 } },
        required: ['zone'], additionalProperties: false },
    },
  },
];
const validArgs = Object.fromEntries(tools.map((t) => [t.function.name, ajv.compile(t.function.parameters)]));
const question = [{ role: 'user', content: 'What is the weather in Oslo?' }];
const ids = new Set();
for (const seed of seeds) {
  const r = await client.chat.completions.create({
    model, messages: question, tools, tool_choice: 'required', parallel_tool_calls: false,
    temperature: 1, seed, max_tokens: 200,
  });
  const choice0 = r.choices[0];
  assert.equal(choice0.finish_reason, 'tool_calls', JSON.stringify(choice0));
  assert.equal(choice0.message.content, null);
  assert.equal(choice0.message.tool_calls.length, 1);
  for (const call of choice0.message.tool_calls) {
    assert.equal(call.type, 'function');
    assert.match(call.id, /^call_/);
    assert.ok(!ids.has(call.id), 'call ids are unique');
    ids.add(call.id);
    const valid = validArgs[call.function.name];
    assert.ok(valid, `unknown function ${call.function.name}`);
    assert.ok(valid(JSON.parse(call.function.arguments)), `${call.function.arguments}: ${ajv.errorsText(valid.errors)}`);
  }
}

// --- a streamed round trip: call, tool result, final answer ------------------------------
const first = await client.chat.completions.create({
  model, messages: question, tools, tool_choice: { type: 'function', function: { name: 'get_weather' } },
  temperature: 1, seed: 11, max_tokens: 200, stream: true,
});
const calls = [];
let firstFinish = null;
let firstContent = '';
for await (const chunk of first) {
  const c = chunk.choices[0];
  if (!c) continue;
  firstContent += c.delta?.content ?? '';
  for (const piece of c.delta?.tool_calls ?? []) {
    if (piece.id) {
      assert.equal(piece.index, calls.length);
      assert.equal(piece.type, 'function');
      calls.push({ id: piece.id, type: 'function', function: { name: piece.function.name, arguments: '' } });
    }
    calls[piece.index].function.arguments += piece.function?.arguments ?? '';
  }
  if (c.finish_reason) firstFinish = c.finish_reason;
}
assert.equal(firstFinish, 'tool_calls');
assert.equal(firstContent, '');
assert.equal(calls.length, 1);
assert.equal(calls[0].function.name, 'get_weather');
const args = JSON.parse(calls[0].function.arguments);
assert.ok(validArgs.get_weather(args), calls[0].function.arguments);

const followUp = [
  ...question,
  { role: 'assistant', content: null, tool_calls: calls },
  { role: 'tool', tool_call_id: calls[0].id, content: JSON.stringify({ temperature: 12, unit: args.unit }) },
];
const answer = await client.chat.completions.create({
  model, messages: followUp, tools, temperature: 0, max_tokens: 16, stream: true,
});
let answerText = '';
let answerFinish = null;
for await (const chunk of answer) {
  const c = chunk.choices[0];
  if (!c) continue;
  answerText += c.delta?.content ?? '';
  assert.equal(c.delta?.tool_calls, undefined);
  if (c.finish_reason) answerFinish = c.finish_reason;
}
assert.ok(answerText.length > 0);
assert.ok(['length', 'stop'].includes(answerFinish), answerFinish);

console.log('openai client: response_format json_schema, structured_outputs, tool_choice required, streamed tool round trip: ok');
