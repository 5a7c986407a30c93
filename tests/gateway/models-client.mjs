// Several models in one server ([[models]] and --model): `stories` (stories260K, alias
// `tiny`), `noise` (random weights) and `copy` (stories260K as GGUF, from --model).
// Requests for each, interleaved over HTTP, SSE and one WebSocket, must get their own
// model's text; an unknown name is a 404 naming the served ones; /v1/models, /metrics and
// /health cover every model.
//   node models-client.mjs PORT
import assert from 'node:assert/strict';
import { WsClient } from '../soak/ws_client.mjs';

const port = Number(process.argv[2]);
const base = `http://127.0.0.1:${port}`;
const prompt = 'Once upon a time';
const body = (model, extra = {}) => JSON.stringify({ model, prompt, max_tokens: 12, temperature: 0, ...extra });
const post = (path, text) => fetch(base + path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: text });

async function complete(model) {
  const r = await post('/v1/completions', body(model));
  assert.equal(r.status, 200, `${model}: ${r.status}`);
  const j = await r.json();
  return { model: j.model, text: j.choices[0].text };
}

async function stream(model) {
  const r = await post('/v1/completions', body(model, { stream: true }));
  assert.equal(r.status, 200);
  const raw = await r.text();
  let text = '';
  let name = '';
  for (const line of raw.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const chunk = JSON.parse(line.slice(6));
    name = chunk.model;
    text += chunk.choices[0]?.text ?? '';
  }
  assert.ok(raw.includes('data: [DONE]'));
  return { model: name, text };
}

async function overWebSocket(models) {
  const ws = await WsClient.connect(port);
  const texts = Object.fromEntries(models.map((m, i) => [i, '']));
  const done = new Promise((resolve) => {
    const results = {};
    ws.onmessage = (msg) => {
      const m = JSON.parse(msg);
      if (m.type === 'token') texts[m.id] += m.text;
      if (m.type === 'done' || m.type === 'error') {
        results[m.id] = m;
        if (Object.keys(results).length === models.length) resolve(results);
      }
    };
  });
  models.forEach((model, i) => ws.sendText(JSON.stringify({ type: 'generate', id: i, model, prompt, max_tokens: 12, temperature: 0 })));
  const results = await done;
  ws.close();
  assert.deepEqual(ws.errors, []);
  return models.map((_, i) => ({ result: results[i], text: texts[i] + (results[i].text ?? '') }));
}

// /v1/models: every model, an alias with its parent.
const list = await (await fetch(base + '/v1/models')).json();
assert.deepEqual(list.data.map((m) => m.id), ['stories', 'tiny', 'noise', 'copy']);
assert.equal(list.data[1].parent, 'stories');
assert.equal((await fetch(base + '/v1/models/noise')).status, 200);
assert.equal((await fetch(base + '/v1/models/nope')).status, 404);

// Interleaved: all at once, over HTTP and SSE.
const [a, b, c, d, e, f] = await Promise.all([
  complete('stories'), complete('noise'), stream('tiny'), stream('noise'), complete('copy'), stream('stories'),
]);
assert.equal(a.model, 'stories');
assert.equal(b.model, 'noise');
assert.ok(a.text.length > 0 && a.text !== b.text, `stories and noise wrote the same: ${a.text}`);
assert.equal(c.text, a.text, 'the alias serves the same model');
assert.equal(d.text, b.text, 'SSE and HTTP give noise the same greedy text');
assert.equal(e.text, a.text, 'the GGUF copy of stories writes as stories');
assert.equal(f.text, a.text);

// One WebSocket, three models at once, and an unknown one.
const ws = await overWebSocket(['noise', 'stories', 'copy', 'nope']);
assert.equal(ws[0].text, b.text);
assert.equal(ws[1].text, a.text);
assert.equal(ws[2].text, a.text);
assert.equal(ws[3].result.type, 'error');
assert.match(JSON.stringify(ws[3].result), /model_not_found/);

// An unknown model over HTTP: 404, naming the served ones.
const unknown = await post('/v1/chat/completions', JSON.stringify({ model: 'nope', messages: [{ role: 'user', content: 'hi' }] }));
assert.equal(unknown.status, 404);
const err = (await unknown.json()).error;
assert.equal(err.code, 'model_not_found');
assert.match(err.message, /`stories` \(alias `tiny`\), `noise`, `copy`/);
// Chat on the second model, by name.
const chat = await post('/v1/chat/completions', JSON.stringify({ model: 'noise', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }));
assert.equal(chat.status, 200);
assert.equal((await chat.json()).model, 'noise');

// /metrics: one page, each model's samples under its model_name.
const metrics = await (await fetch(base + '/metrics')).text();
for (const name of ['stories', 'noise', 'copy']) {
  const m = metrics.match(new RegExp(`inflight:generation_tokens_total\\{model_name="${name}"\\} (\\d+)`));
  assert.ok(m && Number(m[1]) > 0, `no generation tokens counted for ${name}`);
}
assert.equal(metrics.split('\n').filter((l) => l === '# TYPE inflight:generation_tokens_total counter').length, 1);
const health = await (await fetch(base + '/health')).json();
assert.deepEqual(Object.keys(health.models).sort(), ['copy', 'noise', 'stories']);
console.log('ok: three models (one by alias) over HTTP, SSE and one WebSocket, each its own text; 404 for an unknown one');

// Every model is loaded here (no limits): /v1/models says so, with sizes.
const states = await (await fetch(base + '/v1/models')).json();
for (const m of states.data) {
  assert.equal(m.state, 'loaded', `${m.id}: ${m.state}`);
  assert.ok(m.size_bytes > 0, `${m.id}: no size`);
}

// Unload one model while another streams: the stream is not cut, the unloaded one loads
// again on its next request.
async function streamUntilDone(model, maxTokens, onFirstChunk) {
  const r = await post('/v1/completions', body(model, { stream: true, max_tokens: maxTokens, ignore_eos: true }));
  assert.equal(r.status, 200);
  const reader = r.body.getReader();
  const decoder = new TextDecoder();
  let raw = '';
  let first = true;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    raw += decoder.decode(value, { stream: true });
    if (first && raw.includes('data: {')) {
      first = false;
      await onFirstChunk();
    }
  }
  const chunks = raw.split('\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)));
  return { finish: chunks.map((c) => c.choices[0]?.finish_reason).find((f) => f), chunks: chunks.length };
}
let unloaded;
const long = await streamUntilDone('stories', 300, async () => {  // ignore_eos: to its length
  const r = await post('/v1/models/noise/unload', '{}');
  unloaded = { status: r.status, body: await r.json() };
});
assert.equal(unloaded.status, 200, JSON.stringify(unloaded.body));
assert.equal(unloaded.body.state, 'unloaded');
assert.equal(long.finish, 'length', 'the stream of stories ended early');
const noiseState = async () => (await (await fetch(base + '/v1/models/noise')).json()).state;
assert.equal(await noiseState(), 'unloaded');
assert.equal((await complete('noise')).text, b.text, 'noise, loaded again, writes as before');
assert.equal(await noiseState(), 'loaded');

// keep_alive (Ollama's): 0 unloads the model once the request is done; a bad one is a 400.
const bad = await post('/v1/completions', body('copy', { keep_alive: 'soon' }));
assert.equal(bad.status, 400);
assert.match((await bad.json()).error.message, /keep_alive/);
assert.equal((await post('/v1/completions', body('copy', { keep_alive: 0 }))).status, 200);
let copyState = '';
for (let i = 0; i < 100 && copyState !== 'unloaded'; ++i) {
  copyState = (await (await fetch(base + '/v1/models/copy')).json()).state;
  if (copyState !== 'unloaded') await new Promise((r) => setTimeout(r, 100));
}
assert.equal(copyState, 'unloaded', 'keep_alive 0 left copy loaded');
const unknownAction = await post('/v1/models/nope/load', '{}');
assert.equal(unknownAction.status, 404);
console.log('ok: unload while another model streams (not cut), reload on use, keep_alive 0, sizes and states in /v1/models');
