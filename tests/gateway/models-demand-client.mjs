// Models loaded on demand: server.max_loaded_models = 1 over `stories` (stories260K),
// `noise` (random weights) and `broken` (a stories260K copy whose file is deleted once the
// server runs), with an API key. A request for an unloaded model loads it, unloading the
// idle one; a stream on the loaded model is never cut by another model's load (that load
// waits for it); a load that fails is a 503 naming the cause while the others serve.
//   node models-demand-client.mjs PORT KEY
import assert from 'node:assert/strict';

const [port, key] = [Number(process.argv[2]), process.argv[3]];
const base = `http://127.0.0.1:${port}`;
const headers = { 'Content-Type': 'application/json', Authorization: `Bearer ${key}` };
const post = (path, body) => fetch(base + path, { method: 'POST', headers, body: JSON.stringify(body) });
const get = async (path) => (await fetch(base + path, { headers })).json();
const states = async () => Object.fromEntries((await get('/v1/models')).data.map((m) => [m.id, m.state]));
const complete = async (model, extra = {}) => {
  const r = await post('/v1/completions', { model, prompt: 'Once upon a time', max_tokens: 10, temperature: 0, ...extra });
  return { status: r.status, body: await r.json(), at: performance.now() };
};

// At start the first model is loaded, the others wait with their estimated sizes.
assert.deepEqual(await states(), { stories: 'loaded', noise: 'unloaded', broken: 'unloaded' });
for (const m of (await get('/v1/models')).data) assert.ok(m.size_bytes > 0, `${m.id}: no size`);

// A request for noise loads it and unloads stories; then back.
const noise1 = await complete('noise');
assert.equal(noise1.status, 200, JSON.stringify(noise1.body));
assert.deepEqual(await states(), { stories: 'unloaded', noise: 'loaded', broken: 'unloaded' });
const stories1 = await complete('stories');
assert.equal(stories1.status, 200);
assert.deepEqual(await states(), { stories: 'loaded', noise: 'unloaded', broken: 'unloaded' });
assert.notEqual(stories1.body.choices[0].text, noise1.body.choices[0].text);

// A stream on stories while noise is asked for: the stream runs to its length, and noise
// answers after it (the limit holds one model; stories is busy, so noise's load waits).
let noiseDuring;
const stream = await (async () => {
  const r = await post('/v1/completions', { model: 'stories', prompt: 'Once upon a time', max_tokens: 300,
    temperature: 0, ignore_eos: true, stream: true });
  assert.equal(r.status, 200);
  const reader = r.body.getReader();
  const decoder = new TextDecoder();
  let raw = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    raw += decoder.decode(value, { stream: true });
    if (!noiseDuring && raw.includes('data: {')) noiseDuring = complete('noise');  // stories streams now
  }
  const chunks = raw.split('\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)));
  return { finish: chunks.map((c) => c.choices[0]?.finish_reason).find((f) => f), at: performance.now() };
})();
const noise2 = await noiseDuring;
assert.equal(stream.finish, 'length', 'the stories stream was cut');
assert.equal(noise2.status, 200);
assert.equal(noise2.body.choices[0].text, noise1.body.choices[0].text, 'noise, loaded again, writes as before');
assert.ok(noise2.at >= stream.at, 'noise answered before the stream it had to wait for ended');

// broken's file is gone: its load fails, naming the cause; the others serve on.
const broken = await complete('broken');
assert.equal(broken.status, 503, JSON.stringify(broken.body));
assert.match(broken.body.error.message, /model `broken` could not be loaded/);
assert.match(broken.body.error.message, /broken-stories\.bin/);
const brokenEntry = await get('/v1/models/broken');
assert.equal(brokenEntry.state, 'failed');
assert.match(brokenEntry.error, /broken-stories\.bin/);
const health = await (await fetch(base + '/health')).json();
assert.equal(health.status, 'degraded');
assert.equal(health.models.broken.state, 'failed');
assert.equal((await complete('stories')).status, 200);

// POST /v1/models/{name}/load and /unload, behind the API key.
assert.equal((await fetch(base + '/v1/models/noise/load', { method: 'POST' })).status, 401);
const load = await post('/v1/models/noise/load', {});
assert.equal(load.status, 200);
assert.equal((await load.json()).state, 'loaded');
assert.deepEqual(await states(), { stories: 'unloaded', noise: 'loaded', broken: 'failed' });
const unload = await post('/v1/models/noise/unload', {});
assert.equal((await unload.json()).state, 'unloaded');
assert.equal((await states()).noise, 'unloaded');

// Each model's metrics count on over its loads.
const metrics = await (await fetch(base + '/metrics', { headers })).text();
const m = metrics.match(/inflight:request_success_total\{model_name="noise",finished_reason="length"\} (\d+)/);
assert.ok(m && Number(m[1]) >= 2, 'noise counted fewer than its two requests over two loads');
console.log('ok: loaded on demand under max_loaded_models = 1, evicted and reloaded, a stream not cut by a waiting load, a failed load with its cause, load/unload behind the key');
