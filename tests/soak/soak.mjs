// Soak test for `inflight serve`: many concurrent clients over HTTP (JSON and SSE) and
// WebSocket for a fixed time, with random prompt and output sizes, random cancels and
// abrupt disconnects, bursts over the queue limits and malformed requests. Every answer
// is checked for well-formed framing and content as it arrives. At the end the server
// must be idle (nothing running or waiting, every KV block free, from /metrics), still
// healthy, and its resident memory must not have grown past a stated bound after
// warm-up. No check depends on the machine's speed: the run lasts SOAK_SECONDS and at
// least SOAK_MIN_REQUESTS requests, whichever takes longer.
//
//   node soak.mjs --port PORT --pid SERVER_PID [--seconds 60] [--min-requests 2000]
//        [--seed 1] [--clients 16] [--rss-growth-mib 48] [--context 512]
import http from 'node:http';
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { WsClient } from './ws_client.mjs';

const args = parseArgs(process.argv.slice(2));
const port = Number(args.port);
const pid = Number(args.pid);
const seconds = Number(args.seconds ?? process.env.SOAK_SECONDS ?? 60);
const minRequests = Number(args['min-requests'] ?? process.env.SOAK_MIN_REQUESTS ?? 2000);
const numClients = Number(args.clients ?? 16);
const rssGrowthMiB = Number(args['rss-growth-mib'] ?? process.env.SOAK_RSS_GROWTH_MIB ?? 48);
const context = Number(args.context ?? 512);
const rand = mulberry32(Number(args.seed ?? process.env.SOAK_SEED ?? 1));
if (!port || !pid) throw new Error('usage: soak.mjs --port PORT --pid PID [...]');

const stats = {
  requests: 0, http: 0, sse: 0, ws: 0, invalid: 0, overLimit: 0, cancelled: 0, disconnects: 0,
  completed: 0, wsSockets: 0, statuses: {}, finishReasons: {},
};
const problems = [];
function problem(what) {
  if (problems.length < 50) problems.push(what);
  else if (problems.length === 50) problems.push('(more problems not shown)');
}

// ---------- random requests ----------

const words = ['Once', 'upon', 'a', 'time', 'there', 'was', 'little', 'girl', 'named', 'Lily', 'she', 'liked',
  'to', 'play', 'in', 'the', 'park', 'with', 'her', 'dog', 'sun', 'happy', 'big', 'tree', 'and', '.', ',', '!',
  'caf\u00e9', '\u{1F600}', '\u00fcber', '"quoted"', '\\', '\n'];
const pick = (list) => list[Math.floor(rand() * list.length)];
const between = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));

function randomText() {
  // Mostly short, sometimes long, rarely past the context (a 400 naming the prompt).
  const r = rand();
  const n = r < 0.6 ? between(1, 20) : r < 0.97 ? between(20, 150) : between(context, context + 200);
  return Array.from({ length: n }, () => pick(words)).join(' ');
}

function samplingFields() {
  const f = { max_tokens: rand() < 0.1 ? between(64, 200) : between(1, 48) };
  if (rand() < 0.5) f.temperature = rand() < 0.3 ? 0 : Math.round(rand() * 150) / 100;
  if (rand() < 0.2) f.top_p = 0.5 + rand() / 2;
  if (rand() < 0.2) f.top_k = between(1, 50);
  if (rand() < 0.2) f.seed = between(0, 1000);
  if (rand() < 0.1) f.stop = [pick(words)];
  if (rand() < 0.1) f.ignore_eos = true;
  return f;
}

function randomBody(isChat) {
  const body = samplingFields();
  if (isChat) {
    body.messages = [{ role: 'user', content: randomText() }];
    if (rand() < 0.3) body.messages.unshift({ role: 'system', content: 'Tell a story.' });
    if (rand() < 0.1) body.logprobs = true, body.top_logprobs = between(0, 3);
  } else {
    body.prompt = rand() < 0.1 ? [randomText(), randomText()] : randomText();
    if (rand() < 0.1) body.logprobs = between(0, 3);
    if (rand() < 0.05) body.echo = true;
  }
  if (rand() < 0.1) body.n = between(2, 3);
  return body;
}

// Bodies a client may get wrong; each must be refused with a 400 envelope.
const invalidBodies = [
  '{"prompt": "x", "max_tokens": "many"}', '{"prompt": "x", "temperature": -1}', 'not json', '[1, 2]',
  '{"prompt": [1, 2, 99999]}', '{"prompt": []}', '{"messages": []}', '{"prompt": "x", "n": 0}',
  '{"prompt": "x", "stop": [1]}', '{"prompt": "x", "logprobs": 99}', '{"prompt": "\\ud800"}',
  '{"prompt": "x", "max_tokens": 1e400}', '{"prompt": {"a": 1}}', '{"prompt": "x", "stream": "yes"}',
];

// ---------- checks of what comes back ----------

const finishReasons = new Set(['stop', 'length', 'abort']);

function checkEnvelope(status, text, where) {
  let body;
  try { body = JSON.parse(text); } catch { return problem(`${where}: ${status} body is not JSON: ${text.slice(0, 200)}`); }
  const e = body?.error;
  if (typeof e !== 'object' || e === null || typeof e.message !== 'string' || !e.message ||
      typeof e.type !== 'string' || !(e.param === null || typeof e.param === 'string') ||
      !(e.code === null || typeof e.code === 'string')) {
    problem(`${where}: ${status} is not an OpenAI error envelope: ${text.slice(0, 200)}`);
  }
  return e;
}

/// Queue full is 503 today and 429 once load shedding has its own status; either is fine
/// as long as the envelope is well formed.
function countStatus(status, text, where) {
  stats.statuses[status] = (stats.statuses[status] ?? 0) + 1;
  if (status === 200) return true;
  const e = checkEnvelope(status, text, where);
  if (status === 429 || (status === 503 && e?.code === 'queue_full')) refused();
  else if (status !== 400 || e?.code !== 'context_length_exceeded') problem(`${where}: unexpected ${status}: ${text.slice(0, 200)}`);
  return false;
}

function countFinish(reason, where) {
  stats.finishReasons[reason] = (stats.finishReasons[reason] ?? 0) + 1;
  if (!finishReasons.has(reason)) problem(`${where}: finish_reason ${JSON.stringify(reason)}`);
}

function checkCompletion(text, isChat, numChoices, where) {
  let body;
  try { body = JSON.parse(text); } catch { return problem(`${where}: 200 body is not JSON`); }
  const object = isChat ? 'chat.completion' : 'text_completion';
  if (body.object !== object || !Array.isArray(body.choices) || body.choices.length !== numChoices ||
      typeof body.usage?.completion_tokens !== 'number') {
    return problem(`${where}: malformed ${object}: ${text.slice(0, 300)}`);
  }
  for (const c of body.choices) {
    const content = isChat ? c.message?.content : c.text;
    if (typeof content !== 'string') problem(`${where}: choice without text`);
    countFinish(c.finish_reason, where);
  }
}

/// SSE: `data: <json>\n\n` events, one finish_reason per choice, then `data: [DONE]`.
function checkStream(text, isChat, numChoices, where) {
  if (!text.endsWith('data: [DONE]\n\n')) return problem(`${where}: stream does not end with [DONE]`);
  const events = text.split('\n\n');
  events.pop();
  events.pop();
  const finished = new Set();
  for (const ev of events) {
    if (!ev.startsWith('data: ') || ev.includes('\n')) return problem(`${where}: malformed SSE event: ${ev.slice(0, 200)}`);
    let chunk;
    try { chunk = JSON.parse(ev.slice(6)); } catch { return problem(`${where}: SSE data is not JSON: ${ev.slice(0, 200)}`); }
    if (chunk.error) { checkEnvelope(200, ev.slice(6), where); continue; }
    const object = isChat ? 'chat.completion.chunk' : 'text_completion';
    if (chunk.object !== object || !Array.isArray(chunk.choices)) return problem(`${where}: malformed chunk ${ev.slice(0, 200)}`);
    for (const c of chunk.choices) {
      if (c.finish_reason == null) continue;
      if (finished.has(c.index)) problem(`${where}: choice ${c.index} finished twice`);
      finished.add(c.index);
      countFinish(c.finish_reason, where);
    }
  }
  if (finished.size !== numChoices) problem(`${where}: ${finished.size} of ${numChoices} choices finished`);
}

/// A refusal for load: counted, and the client backs off a little before its next
/// request, as a client honouring Retry-After would (otherwise refusals crowd out the rest).
let backoffMs = 0;
function refused() {
  stats.overLimit++;
  backoffMs = between(5, 30);
}

// ---------- HTTP ----------

/// One HTTP request; `disconnectAfter` (bytes of response body, or 0 = before any) makes
/// the client drop the connection instead of reading to the end.
function httpRequest(method, path, body, { disconnectAfter = -1 } = {}) {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, agent: false,
      headers: body === undefined ? {} : { 'content-type': 'application/json' } }, (res) => {
      const chunks = [];
      let size = 0;
      res.on('data', (c) => {
        chunks.push(c);
        size += c.length;
        if (disconnectAfter >= 0 && size > disconnectAfter) {
          req.destroy();
          resolve({ status: res.statusCode, disconnected: true });
        }
      });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', () => resolve({ status: res.statusCode, disconnected: true }));
    });
    req.on('error', (err) => resolve({ error: err }));
    if (body !== undefined) req.write(body);
    req.end();
    if (disconnectAfter === 0 && rand() < 0.5) setImmediate(() => { req.destroy(); resolve({ disconnected: true }); });
  });
}

async function httpGenerate() {
  const isChat = rand() < 0.4;
  const stream = rand() < 0.6;
  const body = randomBody(isChat);
  body.stream = stream;
  if (stream && rand() < 0.3) body.stream_options = { include_usage: true };
  const numChoices = (Array.isArray(body.prompt) ? body.prompt.length : 1) * (body.n ?? 1);
  const disconnect = stream && rand() < 0.15;
  const path = isChat ? '/v1/chat/completions' : '/v1/completions';
  const where = `${path} ${stream ? 'stream' : 'json'} #${stats.requests}`;
  stats.requests++;
  stream ? stats.sse++ : stats.http++;
  const r = await httpRequest('POST', path, JSON.stringify(body), { disconnectAfter: disconnect ? between(0, 400) : -1 });
  if (r.error) return problem(`${where}: ${r.error.message}`);
  if (r.disconnected) return void stats.disconnects++;
  if (!countStatus(r.status, r.text, where)) return;
  if (stream && !String(r.headers['content-type']).startsWith('text/event-stream')) problem(`${where}: content-type ${r.headers['content-type']}`);
  stats.completed++;
  stream ? checkStream(r.text, isChat, numChoices, where) : checkCompletion(r.text, isChat, numChoices, where);
}

async function httpInvalid() {
  stats.requests++;
  stats.invalid++;
  const path = rand() < 0.5 ? '/v1/completions' : '/v1/chat/completions';
  const r = await httpRequest('POST', path, pick(invalidBodies));
  if (r.error) return problem(`invalid body: ${r.error.message}`);
  stats.statuses[r.status] = (stats.statuses[r.status] ?? 0) + 1;
  if (r.status !== 400) return problem(`invalid body: status ${r.status}: ${r.text?.slice(0, 200)}`);
  checkEnvelope(r.status, r.text, 'invalid body');
}

// ---------- WebSocket ----------

/// One socket with several concurrent requests; some are cancelled, and some sockets are
/// dropped without a close frame while requests run.
async function wsSession() {
  let ws;
  try { ws = await WsClient.connect(port); } catch (err) { return problem(`ws connect: ${err.message}`); }
  stats.wsSockets++;
  const live = new Map(); // key -> {index, resolve}
  // Now and then a burst of 40 long requests on one socket: more than max_num_seqs +
  // server.max_waiting_requests (32), so some are refused whatever the machine's speed.
  const isBurst = rand() < 0.015;
  const numRequests = isBurst ? 40 : between(1, 4);
  const dropSocket = !isBurst && rand() < 0.15;
  let pendingErrors = 0;
  ws.onmessage = (text) => {
    let m;
    try { m = JSON.parse(text); } catch { return problem(`ws: message is not JSON: ${text.slice(0, 200)}`); }
    if (m.type === 'error' && m.id === null) {
      checkEnvelope(400, JSON.stringify({ error: m.error }), 'ws error');
      pendingErrors--;
      return;
    }
    const r = live.get(JSON.stringify(m.id));
    if (!r) return problem(`ws: message for unknown id ${JSON.stringify(m.id)}: ${text.slice(0, 200)}`);
    if (m.type === 'token') {
      // The last message of a request may release held text with no token ids; its index
      // counts the stop token, which is not sent.
      const isInOrder = m.token_ids?.length ? m.index === r.index : m.index >= r.index;
      if (typeof m.text !== 'string' || !Array.isArray(m.token_ids) || !isInOrder) {
        problem(`ws: malformed or out-of-order token message (expected index ${r.index}): ${text.slice(0, 200)}`);
      }
      r.index += m.token_ids?.length ?? 0;
      r.numTokens++;
      if (r.cancelAfter >= 0 && r.numTokens === r.cancelAfter) { ws.sendText(JSON.stringify({ type: 'cancel', id: m.id })); stats.cancelled++; }
    } else if (m.type === 'done') {
      if (typeof m.usage?.completion_tokens !== 'number') problem(`ws: done without usage: ${text.slice(0, 200)}`);
      const reason = m.finish_reason === 'cancelled' ? 'abort' : m.finish_reason;
      countFinish(reason, 'ws');
      stats.completed++;
      live.delete(JSON.stringify(m.id));
      r.resolve();
    } else if (m.type === 'error') {
      const e = checkEnvelope(400, JSON.stringify({ error: m.error }), 'ws error');
      const key = `ws:${e?.code ?? e?.type}`;
      stats.statuses[key] = (stats.statuses[key] ?? 0) + 1;
      if (e?.code === 'queue_full' || e?.type === 'rate_limit_error') refused();
      else if (e?.code !== 'context_length_exceeded') problem(`ws: unexpected error: ${text.slice(0, 200)}`);
      live.delete(JSON.stringify(m.id));
      r.resolve();
    } else {
      problem(`ws: unknown message type: ${text.slice(0, 200)}`);
    }
  };
  const closed = new Promise((resolve) => { ws.onclose = resolve; });
  const done = [];
  for (let i = 0; i < numRequests; i++) {
    const id = rand() < 0.5 ? `r${i}` : i;
    const body = { type: 'generate', id, ...samplingFields() };
    if (isBurst) Object.assign(body, { max_tokens: between(32, 48), ignore_eos: true });
    if (rand() < 0.3) body.messages = [{ role: 'user', content: randomText() }];
    else body.prompt = randomText();
    const cancelAfter = rand() < 0.2 ? between(0, 10) : -1;
    done.push(new Promise((resolve) => live.set(JSON.stringify(id), { index: 0, numTokens: 0, cancelAfter, resolve })));
    stats.requests++;
    stats.ws++;
    ws.sendText(JSON.stringify(body));
    if (cancelAfter === 0) { ws.sendText(JSON.stringify({ type: 'cancel', id })); stats.cancelled++; }
  }
  if (rand() < 0.1) { pendingErrors++; ws.sendBinary([1, 2, 3]); }
  if (rand() < 0.1) { pendingErrors++; ws.sendText('{"type": "generate", "prompt": "no id"}'); }
  if (dropSocket) {
    await sleep(between(0, 50));
    ws.terminate();
    stats.disconnects++;
  } else {
    await Promise.all(done);
    while (pendingErrors > 0 && !ws.closed) await sleep(5);
    ws.close();
    await Promise.race([closed, sleep(10000)]);
    if (!ws.closed) { problem('ws: the server did not close after a close frame'); ws.terminate(); }
  }
  for (const e of ws.errors) problem(`ws framing: ${e}`);
}

// ---------- server state ----------

async function metrics() {
  const r = await httpRequest('GET', '/metrics');
  if (r.status !== 200) throw new Error(`/metrics: ${r.status ?? r.error?.message}`);
  const value = (name) => {
    const m = r.text.match(new RegExp(`^inflight:${name}\\{[^}]*\\} (\\S+)$`, 'm'));
    return m ? Number(m[1]) : NaN;
  };
  return { running: value('num_requests_running'), waiting: value('num_requests_waiting'), kvUsage: value('kv_cache_usage_perc') };
}

function rssKiB() {
  const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB/m);
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]);
}

// ---------- main ----------

async function client(deadline) {
  while (Date.now() < deadline || stats.requests < minRequests) {
    const r = rand();
    if (r < 0.55) await httpGenerate();
    else if (r < 0.6) await httpInvalid();
    else await wsSession();
    if (backoffMs) {
      const ms = backoffMs;
      backoffMs = 0;
      await sleep(ms);
    }
  }
}

const start = Date.now();
const deadline = start + seconds * 1000;
const warmupEnd = start + seconds * 250;
let warmRss = null;
const rssSamples = [];
// The gauges must be live for the end state to mean anything: seen busy during the run.
const busiest = { running: 0, waiting: 0, kvUsage: 0 };
const sampler = setInterval(async () => {
  const kib = rssKiB();
  rssSamples.push(kib);
  if (warmRss === null && Date.now() >= warmupEnd && stats.requests >= minRequests / 4) warmRss = kib;
  try {
    const m = await metrics();
    for (const k of Object.keys(busiest)) busiest[k] = Math.max(busiest[k], m[k]);
  } catch (err) {
    problem(`during the run: ${err.message}`);
  }
}, 500);

await Promise.all(Array.from({ length: numClients }, () => client(deadline)));
clearInterval(sampler);
const elapsed = (Date.now() - start) / 1000;

// Every client has its answers or has gone: the engine must drain to idle.
let state = await metrics();
for (let i = 0; i < 600 && (state.running !== 0 || state.waiting !== 0 || state.kvUsage !== 0); i++) {
  await sleep(100);
  state = await metrics();
}
const health = await httpRequest('GET', '/health');
const finalRss = rssKiB();
if (warmRss === null) warmRss = rssSamples[Math.floor(rssSamples.length / 4)] ?? finalRss;
const growthMiB = (finalRss - warmRss) / 1024;

console.log(`soak: ${stats.requests} requests in ${elapsed.toFixed(1)} s by ${numClients} clients: ` +
  `${stats.http} HTTP JSON, ${stats.sse} SSE, ${stats.ws} WebSocket (${stats.wsSockets} sockets), ${stats.invalid} malformed`);
console.log(`soak: ${stats.completed} completed, ${stats.overLimit} refused over the queue limit, ` +
  `${stats.cancelled} cancelled, ${stats.disconnects} client disconnects`);
console.log(`soak: statuses ${JSON.stringify(stats.statuses)}; finish reasons ${JSON.stringify(stats.finishReasons)}`);
console.log(`soak: busiest /metrics sample: running ${busiest.running}, waiting ${busiest.waiting}, kv_cache_usage ${busiest.kvUsage}`);
console.log(`soak: end state: running ${state.running}, waiting ${state.waiting}, kv_cache_usage ${state.kvUsage}, /health ${health.status}`);
console.log(`soak: VmRSS ${(warmRss / 1024).toFixed(1)} MiB after warm-up, ${(finalRss / 1024).toFixed(1)} MiB at the end ` +
  `(growth ${growthMiB.toFixed(1)} MiB, bound ${rssGrowthMiB} MiB; max ${(Math.max(...rssSamples) / 1024).toFixed(1)} MiB)`);

if (state.running !== 0 || state.waiting !== 0) problem(`the engine is not idle: ${state.running} running, ${state.waiting} waiting`);
if (state.kvUsage !== 0) problem(`KV blocks still in use: kv_cache_usage_perc ${state.kvUsage}`);
if (health.status !== 200) problem(`/health answers ${health.status}`);
if (growthMiB > rssGrowthMiB) problem(`resident memory grew ${growthMiB.toFixed(1)} MiB after warm-up (bound ${rssGrowthMiB} MiB)`);
if (!(busiest.running > 0 && busiest.kvUsage > 0)) problem('/metrics never showed a running request or a used KV block during the run');
if (stats.completed === 0 || stats.overLimit === 0) problem(`the run did not exercise both completion and refusal (${stats.completed} completed, ${stats.overLimit} refused)`);
if (problems.length) {
  console.log(`soak: FAILED, ${problems.length} problems:`);
  for (const p of problems) console.log(`  - ${p}`);
  process.exit(1);
}
console.log('soak: passed');

// ---------- helpers ----------

function parseArgs(list) {
  const out = {};
  for (let i = 0; i < list.length; i += 2) out[list[i].replace(/^--/, '')] = list[i + 1];
  return out;
}

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
