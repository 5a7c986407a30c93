// The playground: chat and completion over the WebSocket, the sampling parameters of
// the API, and per message: time to first token, tokens/s, token count, finish reason.
// While a message streams, Stop cancels it in the engine.

const $ = (id) => document.getElementById(id);

const NUMBER_PARAMS = ['max_tokens', 'temperature', 'top_p', 'top_k', 'min_p', 'repetition_penalty',
                       'presence_penalty', 'frequency_penalty', 'seed'];

export class Playground {
  constructor(socket) {
    this.socket = socket;
    this.mode = 'chat';
    this.model = '';        // several models: the one chosen (none: the server's first)
    this.history = [];      // chat turns that completed: {role, content}
    this.current = null;    // the streaming message: {id, el, ...}
    $('mode-chat').onclick = () => this.setMode('chat');
    $('mode-completion').onclick = () => this.setMode('completion');
    $('clear').onclick = () => this.clear();
    $('composer').onsubmit = (ev) => { ev.preventDefault(); this.send(); };
    $('prompt').onkeydown = (ev) => {
      if (ev.key === 'Enter' && !ev.shiftKey) { ev.preventDefault(); this.send(); }
    };
    $('stop').onclick = () => this.stop();
  }

  setMode(mode) {
    this.mode = mode;
    $('mode-chat').setAttribute('aria-selected', String(mode === 'chat'));
    $('mode-completion').setAttribute('aria-selected', String(mode === 'completion'));
    this.clear();
  }

  clear() {
    if (this.current) this.stop();
    this.history = [];
    $('messages').replaceChildren();
  }

  params() {
    const out = {};
    for (const name of NUMBER_PARAMS) {
      const text = $(`p-${name}`).value.trim();
      if (text !== '') out[name] = Number(text);
    }
    const stop = $('p-stop').value.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
    if (stop.length > 0) out.stop = stop;
    if ($('p-ignore_eos').checked) out.ignore_eos = true;
    return out;
  }

  send() {
    if (this.current) return;  // one at a time: Stop first
    const text = $('prompt').value;
    if (text.trim() === '') return;
    const body = this.params();
    if (this.model) body.model = this.model;
    let el;
    if (this.mode === 'chat') {
      this.addBubble('user', text);
      body.messages = [...this.history, { role: 'user', content: text }];
      el = this.addBubble('assistant', '');
      $('prompt').value = '';
    } else {
      body.prompt = text;
      el = this.addBubble('completion', '');
      const echo = document.createElement('span');
      echo.className = 'prompt-echo';
      echo.textContent = text;
      el.insertBefore(echo, el.firstChild);
    }
    const msg = { el, text: '', prompt: text, sentAt: performance.now(), firstAt: 0, lastAt: 0,
                  numTokens: 0, numTokenMessages: 0 };
    el.dataset.state = 'streaming';
    el.dataset.tokens = '0';
    el.dataset.tokenMessages = '0';
    this.current = msg;
    $('stop').disabled = false;
    $('send').disabled = true;
    msg.id = this.socket.generate('play', body, {
      onToken: (m) => this.onToken(msg, m),
      onDone: (m) => this.onDone(msg, m),
      onError: (e) => this.onError(msg, e),
    });
    el.dataset.id = msg.id;
  }

  stop() {
    if (this.current) this.socket.cancel(this.current.id);
  }

  addBubble(role, text) {
    const el = document.createElement('div');
    el.className = `msg ${role}`;
    const body = document.createElement('span');
    body.className = 'text';
    body.textContent = text;
    el.appendChild(body);
    $('messages').appendChild(el);
    el.scrollIntoView({ block: 'end' });
    return el;
  }

  onToken(msg, m) {
    const now = performance.now();
    if (msg.firstAt === 0) msg.firstAt = now;
    msg.lastAt = now;
    msg.numTokens = m.index + m.token_ids.length;
    msg.numTokenMessages += 1;
    msg.text += m.text;
    msg.el.querySelector('.text').textContent = msg.text;
    msg.el.dataset.tokens = String(msg.numTokens);
    msg.el.dataset.tokenMessages = String(msg.numTokenMessages);
    const rate = msg.numTokens > 1 ? (msg.numTokens - 1) / ((now - msg.firstAt) / 1000) : 0;
    this.showStats(msg, msg.firstAt - msg.sentAt, rate, msg.numTokens, 'streaming');
    $('messages').scrollTop = $('messages').scrollHeight;
  }

  onDone(msg, m) {
    this.onSettled?.();  // the page refreshes what it shows of the models (a load)
    msg.numTokens = m.usage.completion_tokens;
    const t = m.timings;
    // The server's own timings: TTFT from acceptance, tokens/s from the time per output token.
    const rate = t.tpot_ms > 0 ? 1000 / t.tpot_ms : 0;
    msg.el.dataset.state = 'done';
    msg.el.dataset.finish = m.finish_reason;
    msg.el.dataset.tokens = String(msg.numTokens);
    this.showStats(msg, t.ttft_ms, rate, msg.numTokens, m.finish_reason, m.usage.prompt_tokens);
    if (this.mode === 'chat' && m.finish_reason !== 'cancelled') {
      this.history.push({ role: 'user', content: msg.prompt }, { role: 'assistant', content: msg.text });
    }
    this.finish();
  }

  onError(msg, e) {
    this.onSettled?.();
    msg.el.dataset.state = 'error';
    const err = document.createElement('span');
    err.className = 'error';
    err.textContent = `error: ${e.message}`;
    msg.el.appendChild(err);
    this.finish();
  }

  finish() {
    this.current = null;
    $('stop').disabled = true;
    $('send').disabled = false;
  }

  showStats(msg, ttftMs, rate, numTokens, finish, numPromptTokens) {
    let stats = msg.el.querySelector('.stats');
    if (!stats) {
      stats = document.createElement('span');
      stats.className = 'stats';
      msg.el.appendChild(stats);
    }
    const parts = [`TTFT ${ttftMs.toFixed(1)} ms`, `${rate.toFixed(1)} tok/s`, `${numTokens} tokens`];
    if (numPromptTokens !== undefined) parts.push(`prompt ${numPromptTokens}`);
    parts.push(finish === 'streaming' ? 'streaming…' : `finish: ${finish}`);
    stats.textContent = parts.join(' · ');
  }
}
