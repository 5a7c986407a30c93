// The page: the playground (left) and the live engine view (right), one WebSocket for
// every request of the page and one SSE feed of engine steps.
import { EngineSocket } from './socket.js';
import { Playground } from './playground.js';
import { EngineView } from './engine_view.js';
import { LoadRunner } from './load.js';

const $ = (id) => document.getElementById(id);

const socket = new EngineSocket((state) => {
  const el = $('ws-status');
  el.dataset.state = state;
  el.textContent = { connecting: 'connecting…', open: 'connected', closed: 'disconnected: retrying…' }[state];
});

const playground = new Playground(socket);

let engineInfo = null;
const view = new EngineView((engine) => {
  engineInfo = engine;
  showEngineChoice(engine);
  $('model-name').textContent = engine.model;
  $('policy-name').textContent = engine.policy;
  $('budget').textContent = String(engine.budget);
  $('load').disabled = false;
});

const load = new LoadRunner(socket, () => {
  $('load').textContent = load.isRunning ? 'Stop load' : 'Start load';
  $('load-status').textContent = load.describe();
});
$('load').disabled = true;  // until the feed said what the engine is
$('load').onclick = () => {
  if (load.isRunning) load.stop();
  else load.start($('load-shape').value, engineInfo);
};

// Behind a router the feed shows one engine's steps at a time: a choice of them.
function showEngineChoice(engine) {
  const engines = engine.engines || [];
  $('feed-engine-label').hidden = engines.length < 2;
  const select = $('feed-engine');
  if (select.options.length !== engines.length || engines.some((e, i) => select.options[i].value !== e)) {
    select.replaceChildren(...engines.map((e) => new Option(e, e)));
  }
  select.value = engine.engine || '';
}
$('feed-engine').onchange = () => view.start(view.key, $('feed-engine').value);

// Several models: a choice of them, each with its state (loaded, unloaded, ...); the
// playground's requests and the engine view follow the one chosen.
let modelsTimer;
async function refreshModels(key) {
  let models;
  try {
    const res = await fetch('/v1/models', { headers: key ? { Authorization: `Bearer ${key}` } : {}, cache: 'no-store' });
    if (!res.ok) return;
    models = (await res.json()).data.filter((m) => !m.parent);
  } catch {
    return;  // the server is away or restarting: the next refresh tries again
  }
  const select = $('model-pick');
  select.hidden = models.length < 2;
  $('model-name').hidden = models.length >= 2;
  if (models.length < 2) return;
  const chosen = select.value || models[0].id;
  select.replaceChildren(...models.map((m) => new Option(m.state ? `${m.id} (${m.state})` : m.id, m.id)));
  select.value = chosen;
  playground.model = chosen;
}
$('model-pick').onchange = () => {
  playground.model = $('model-pick').value;
  view.start(view.key, view.engineAddress, playground.model);
};

// The API key, when the server wants one: kept in this browser (localStorage) and sent
// with the socket, the feed and every API call of the page.
const KEY_STORE = 'inflight.apiKey';

async function keyAccepted(key) {
  const res = await fetch('/v1/models', { headers: key ? { Authorization: `Bearer ${key}` } : {}, cache: 'no-store' });
  return res.status !== 401;
}

async function connect(key) {
  if (!(await keyAccepted(key))) {
    $('key-form').hidden = false;
    $('key-status').textContent = key ? 'that API key was refused' : 'this server needs an API key';
    $('ws-status').dataset.state = 'closed';
    $('ws-status').textContent = 'no API key';
    return;
  }
  $('key-form').hidden = true;
  if (key) localStorage.setItem(KEY_STORE, key);
  socket.start(key);
  view.start(key);
  await refreshModels(key);
  playground.onSettled = () => refreshModels(key);
  clearInterval(modelsTimer);
  modelsTimer = setInterval(() => refreshModels(key), 5000);
}

$('key-form').onsubmit = (ev) => {
  ev.preventDefault();
  connect($('api-key').value.trim());
};
connect(localStorage.getItem(KEY_STORE) || '');

// For tests and the console: what the page has seen and drawn.
window.inflightUi = { socket, playground, view, load };
