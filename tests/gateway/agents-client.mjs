// A small agent of the OpenAI Agents SDK (@openai/agents) with one function tool, run
// against `inflight serve` through the Responses API, not streamed and streamed: the
// model is forced to call the tool (toolChoice; the SDK resets it to auto after the
// call), the SDK runs the tool and sends its output back, and the model's answer is the
// final output. The same agent then runs over chat completions.
//   node agents-client.mjs BASE_URL
import assert from 'node:assert/strict';
import { Agent, OpenAIProvider, Runner, setTracingDisabled, tool } from '@openai/agents';
import { z } from 'zod';

const [baseURL] = process.argv.slice(2);
setTracingDisabled(true);  // nothing leaves the machine
const model = (await (await fetch(`${baseURL}/models`)).json()).data[0].id;

const cities = [];
const getWeather = tool({
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: z.object({ city: z.enum(['Oslo', 'Paris', 'Lima']) }),
  execute: async ({ city }) => {
    cities.push(city);
    return `It is 12 degrees in ${city}`;
  },
});

function makeAgent() {
  return new Agent({
    name: 'weather',
    instructions: 'Answer questions about the weather.',
    model,
    tools: [getWeather],
    // stop: inflight's extension field, sent as it is: the answer ends at its first '.'.
    modelSettings: { toolChoice: 'get_weather', temperature: 0, maxTokens: 200, providerData: { stop: ['.'] } },
  });
}

/// What a finished run must show: one tool call, its output, then a text answer.
function checkRun(result, what) {
  const kinds = result.newItems.map((item) => item.type);
  assert.deepEqual(kinds.slice(0, 2), ['tool_call_item', 'tool_call_output_item'], `${what}: ${kinds}`);
  assert.equal(kinds.at(-1), 'message_output_item', `${what}: ${kinds}`);
  assert.equal(result.newItems[0].rawItem.name, 'get_weather');
  assert.equal(result.newItems[1].output, `It is 12 degrees in ${cities.at(-1)}`);
  assert.equal(typeof result.finalOutput, 'string');
  assert.ok(result.finalOutput.length > 0, `${what}: an empty final output`);
  assert.equal(result.rawResponses.length, 2, `${what}: two model calls`);
}

for (const useResponses of [true, false]) {
  const api = useResponses ? 'responses' : 'chat completions';
  const runner = new Runner({ modelProvider: new OpenAIProvider({ apiKey: 'unused', baseURL, useResponses }) });
  const before = cities.length;
  const result = await runner.run(makeAgent(), 'What is the weather in Oslo?');
  checkRun(result, `${api}, not streamed`);
  assert.equal(cities.length, before + 1);
  if (useResponses) assert.match(result.lastResponseId, /^resp_/);

  const streamed = await runner.run(makeAgent(), 'What is the weather in Paris?', { stream: true });
  let numTextDeltas = 0;
  for await (const event of streamed) {
    if (event.type === 'raw_model_stream_event' && event.data.type === 'output_text_delta') ++numTextDeltas;
  }
  await streamed.completed;
  checkRun(streamed, `${api}, streamed`);
  assert.ok(numTextDeltas > 0, `${api}: the answer streamed as text deltas`);
  console.log(`agents sdk over ${api}: called get_weather(${cities.at(-1)}), answered ${JSON.stringify(streamed.finalOutput)}`);
}
assert.equal(cities.length, 4);
console.log('openai agents sdk: forced tool call, tool output, final answer over /v1/responses and chat completions: ok');
