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

// For tests and the console: what the page has seen and drawn.
window.inflightUi = { socket, playground, view, load };
