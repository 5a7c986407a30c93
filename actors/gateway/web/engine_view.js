// The live engine view, fed by GET /v1/engine/events (docs/http-api.md), read with
// fetch() so that it can carry the API key (an EventSource cannot send headers):
// - a timeline, one column per step and one row per sequence: prompt chunks and decodes
//   in two colours, joins, finishes and preemptions marked;
// - aligned under it: the token budget's fill per step (prompt / decode tokens), KV
//   cache usage, running and waiting counts, and throughput;
// - hovering a column shows that step's composition; the view stops scrolling while
//   the pointer is on it (new steps keep arriving and show when it leaves).
// Events only update arrays; drawing happens once per animation frame, so the page
// keeps up with hundreds of steps per second. When this page (or its connection)
// falls behind, the server merges steps into one event: such columns are drawn paler
// and the header says so.

const $ = (id) => document.getElementById(id);
const COL_W = 4;              // CSS pixels per step
const MAX_COLUMNS = 3000;     // kept for scrolling back through hover
const MAX_ROWS = 256;
const STRIPS = [              // the metrics canvas, top to bottom
  { key: 'budget', label: 'budget fill', height: 56 },
  { key: 'kv', label: 'KV cache', height: 40 },
  { key: 'queues', label: 'running / waiting', height: 40 },
  { key: 'tps', label: 'tokens/s', height: 40 },
];

function css(name) { return getComputedStyle(document.documentElement).getPropertyValue(name).trim(); }

export class EngineView {
  constructor(onEngine) {
    this.onEngine = onEngine;
    this.engine = null;
    this.colors = {
      prefill: css('--prefill'), decode: css('--decode'), draft: css('--draft'), join: css('--join'), finish: css('--finish'),
      preempt: css('--preempt'), kv: css('--kv'), waiting: css('--waiting'), running: css('--running'),
      grid: '#243040', text: '#8a96a3', accent: css('--accent'),
    };
    this.reset();
    // What the timeline has drawn so far (for tests and curious readers: window.inflightUi).
    this.drawn = { columns: 0, maxSeqs: 0, fusedColumns: 0, prefillCells: 0, decodeCells: 0, draftCells: 0, aggregatedColumns: 0 };
    this.lastDrawnStep = 0;
    this.isDirty = true;
    this.timeline = $('timeline');
    this.metrics = $('metrics');
    for (const c of [this.timeline, this.metrics]) {
      c.addEventListener('mousemove', (ev) => this.hover(ev, c));
      c.addEventListener('mouseleave', () => this.unhover());
    }
    window.addEventListener('resize', () => { this.isDirty = true; });
    this.key = '';
    this.abort = null;
    const frame = () => {
      if (this.isDirty) this.draw();
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  }

  reset() {
    this.columns = [];
    this.rowOf = new Map();      // seq id -> row
    this.rowUsed = [];           // row -> seq id or 0
    this.lastSeen = new Map();   // seq id -> step
    this.numPreemptions = 0;
    this.maxStepsPerEvent = 1;
    this.hoverIndex = -1;
    this.frozenEnd = -1;         // while the pointer is on the view it stops scrolling
  }

  /// Reads the feed (again) with `key` ('' = none); behind a router, the steps of
  /// `engine` ("host:port"; none: the router's first); with several models, those of
  /// `model` (none: the first).
  start(key, engine = this.engineAddress, model = this.model) {
    this.key = key;
    this.engineAddress = engine;
    this.model = model;
    this.abort?.abort();
    this.connect();
  }

  async connect() {
    const controller = new AbortController();
    this.abort = controller;
    const status = $('feed-status');
    try {
      const headers = this.key ? { Authorization: `Bearer ${this.key}` } : {};
      const params = new URLSearchParams();
      if (this.engineAddress) params.set('engine', this.engineAddress);
      if (this.model) params.set('model', this.model);
      const query = params.size > 0 ? `?${params}` : '';
      const res = await fetch(`/v1/engine/events${query}`, { headers, signal: controller.signal, cache: 'no-store' });
      if (!res.ok) throw new Error(`the feed answered ${res.status}`);
      status.dataset.state = 'open';
      status.textContent = 'feed: live';
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value.replace(/\r\n/g, '\n');
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          this.dispatchEvent(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
        }
      }
    } catch (e) {
      if (controller.signal.aborted) return;  // start() replaced this reader
    }
    if (controller.signal.aborted) return;
    // The stream ended or was refused (503: too many readers): try again shortly.
    status.dataset.state = 'closed';
    status.textContent = 'feed: reconnecting…';
    setTimeout(() => { if (this.abort === controller) this.connect(); }, 2000);
  }

  /// One server-sent event (its lines, without the blank line that ended it).
  dispatchEvent(block) {
    let name = 'message';
    const data = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue;  // a comment: keep-alive
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') name = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length === 0) return;
    const payload = JSON.parse(data.join('\n'));
    if (name === 'engine') {
      this.engine = payload;
      this.reset();
      this.isDirty = true;
      this.onEngine(this.engine);
    } else if (name === 'step') {
      this.ingest(payload);
    }
  }

  rowFor(id, step) {
    this.lastSeen.set(id, step);
    let row = this.rowOf.get(id);
    if (row !== undefined) return row;
    row = this.rowUsed.findIndex((x) => x === 0);
    if (row < 0 && this.rowUsed.length < MAX_ROWS) row = this.rowUsed.push(0) - 1;
    if (row < 0) row = this.evictOldest();
    this.rowUsed[row] = id;
    this.rowOf.set(id, row);
    return row;
  }

  evictOldest() {
    let oldest = null;
    for (const [id, step] of this.lastSeen) if (oldest === null || step < this.lastSeen.get(oldest)) oldest = id;
    const row = this.rowOf.get(oldest);
    this.release(oldest);
    return row;
  }

  release(id) {
    const row = this.rowOf.get(id);
    if (row === undefined) return;
    this.rowUsed[row] = 0;
    this.rowOf.delete(id);
    this.lastSeen.delete(id);
  }

  ingest(ev) {
    const col = { ev, receivedAt: performance.now(), cells: [], joins: [], finishes: [], preempts: [] };
    for (const s of ev.seqs) {
      const row = this.rowFor(s.id, ev.step);
      col.cells.push({ row, isPrefill: s.prefill > 0, isDecode: s.decode > 0, isDraft: (s.draft || 0) > 0 });
    }
    for (const id of ev.joined) col.joins.push(this.rowFor(id, ev.step));
    for (const id of ev.preempted) col.preempts.push(this.rowFor(id, ev.step));
    for (const f of ev.finished) {
      if (this.rowOf.has(f.id)) col.finishes.push(this.rowOf.get(f.id));
    }
    for (const f of ev.finished) this.release(f.id);  // the row is free from the next column on
    this.numPreemptions += ev.preemptions;
    this.maxStepsPerEvent = Math.max(this.maxStepsPerEvent, ev.num_steps);
    this.columns.push(col);
    if (this.columns.length > MAX_COLUMNS) {
      const n = this.columns.length - MAX_COLUMNS;
      this.columns.splice(0, n);
      if (this.frozenEnd >= 0) this.frozenEnd = Math.max(0, this.frozenEnd - n);
      if (this.hoverIndex >= 0) this.hoverIndex -= n;
    }
    this.isDirty = true;
  }

  // --- drawing -----------------------------------------------------------------

  fit(canvas, cssHeight) {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(100, Math.floor(canvas.clientWidth));
    if (canvas.width !== Math.floor(w * dpr) || canvas.height !== Math.floor(cssHeight * dpr)) {
      canvas.width = Math.floor(w * dpr);
      canvas.height = Math.floor(cssHeight * dpr);
      canvas.style.height = `${cssHeight}px`;
    }
    const ctx = canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return { ctx, w, h: cssHeight };
  }

  /// The columns on screen: the newest ones, or those up to where the view froze.
  visible(w) {
    const end = this.frozenEnd >= 0 ? this.frozenEnd : this.columns.length;
    const n = Math.min(end, Math.floor(w / COL_W));
    return { first: end - n, end, n, x0: w - n * COL_W };
  }

  draw() {
    this.isDirty = false;
    const { ctx, w, h } = this.fit(this.timeline, 300);
    ctx.clearRect(0, 0, w, h);
    const vis = this.visible(w);
    let numRows = 8;
    for (let i = vis.first; i < vis.end; i++) {
      for (const c of this.columns[i].cells) numRows = Math.max(numRows, c.row + 1);
    }
    const rowH = Math.max(2, Math.min(20, Math.floor((h - 4) / numRows)));
    this.drawTimeline(ctx, vis, rowH, h);
    this.drawMetrics(vis);
    this.updateStats();
    this.updateAggregation(vis);
  }

  drawTimeline(ctx, vis, rowH, h) {
    const c = this.colors;
    const y = (row) => 2 + row * rowH;
    for (let i = vis.first; i < vis.end; i++) {
      const col = this.columns[i];
      const x = vis.x0 + (i - vis.first) * COL_W;
      ctx.globalAlpha = col.ev.num_steps > 1 ? 0.55 : 1;
      for (const cell of col.cells) {
        if (y(cell.row) + rowH > h) continue;
        ctx.fillStyle = cell.isPrefill ? c.prefill : c.decode;
        ctx.fillRect(x, y(cell.row), COL_W - 1, rowH - 1);
        if (cell.isDraft) {  // a decode that checked drafted tokens: its upper half
          ctx.fillStyle = c.draft;
          ctx.fillRect(x, y(cell.row), COL_W - 1, Math.max(1, Math.floor((rowH - 1) / 2)));
        }
      }
      ctx.globalAlpha = 1;
      ctx.fillStyle = c.join;
      for (const row of col.joins) ctx.fillRect(x, y(row), 1, rowH - 1);
      ctx.fillStyle = c.finish;
      for (const row of col.finishes) ctx.fillRect(x + COL_W - 2, y(row), 2, rowH - 1);
      ctx.fillStyle = c.preempt;
      for (const row of col.preempts) ctx.fillRect(x, y(row), COL_W - 1, rowH - 1);
      this.countDrawn(col);
    }
    if (this.hoverIndex >= vis.first && this.hoverIndex < vis.end) {
      ctx.strokeStyle = c.accent;
      ctx.strokeRect(vis.x0 + (this.hoverIndex - vis.first) * COL_W - 0.5, 0.5, COL_W, h - 1);
    }
    if (this.frozenEnd >= 0) {
      ctx.fillStyle = c.text;
      ctx.fillText(`paused while the pointer is here (${this.columns.length - this.frozenEnd} newer steps)`, 8, h - 8);
    }
    if (this.columns.length === 0) {
      ctx.fillStyle = c.text;
      ctx.fillText('idle: send a prompt or start the load', 12, 20);
    }
  }

  /// Counts each column once, the first time it is drawn.
  countDrawn(col) {
    if (col.ev.step <= this.lastDrawnStep) return;
    this.lastDrawnStep = col.ev.last_step;
    const d = this.drawn;
    const rows = new Set(col.cells.map((cell) => cell.row));
    const hasPrefill = col.cells.some((cell) => cell.isPrefill);
    const hasDecode = col.cells.some((cell) => cell.isDecode);
    d.columns += 1;
    d.maxSeqs = Math.max(d.maxSeqs, rows.size);
    if (hasPrefill && hasDecode && col.ev.num_steps === 1) d.fusedColumns += 1;
    d.prefillCells += col.cells.filter((cell) => cell.isPrefill).length;
    d.decodeCells += col.cells.filter((cell) => cell.isDecode).length;
    d.draftCells += col.cells.filter((cell) => cell.isDraft).length;
    if (col.ev.num_steps > 1) d.aggregatedColumns += 1;
  }

  drawMetrics(vis) {
    const total = STRIPS.reduce((a, s) => a + s.height + 6, 0);
    const { ctx, w } = this.fit(this.metrics, total);
    ctx.clearRect(0, 0, w, total);
    const cols = this.columns.slice(vis.first, vis.end);
    let top = 0;
    for (const strip of STRIPS) {
      ctx.fillStyle = '#0f151b';
      ctx.fillRect(0, top, w, strip.height);
      this[`strip_${strip.key}`](ctx, cols, vis.x0, top, strip.height);
      ctx.fillStyle = this.colors.text;
      ctx.font = '11px system-ui, sans-serif';
      ctx.fillText(strip.label, 6, top + 12);
      top += strip.height + 6;
    }
    if (this.hoverIndex >= vis.first && this.hoverIndex < vis.end) {
      ctx.strokeStyle = this.colors.accent;
      ctx.strokeRect(vis.x0 + (this.hoverIndex - vis.first) * COL_W - 0.5, 0.5, COL_W, total - 1);
    }
  }

  strip_budget(ctx, cols, x0, top, h) {
    cols.forEach((col, i) => {
      const ev = col.ev;
      const cap = Math.max(1, ev.budget * ev.num_steps);
      const hp = Math.round((ev.prefill_tokens / cap) * h), hd = Math.round((ev.decode_tokens / cap) * h);
      const hr = Math.round(((ev.draft_tokens || 0) / cap) * h);
      const x = x0 + i * COL_W;
      ctx.fillStyle = this.colors.decode;
      ctx.fillRect(x, top + h - hd, COL_W - 1, hd);
      ctx.fillStyle = this.colors.draft;
      ctx.fillRect(x, top + h - hd - hr, COL_W - 1, hr);
      ctx.fillStyle = this.colors.prefill;
      ctx.fillRect(x, top + h - hd - hr - hp, COL_W - 1, hp);
    });
  }

  strip_kv(ctx, cols, x0, top, h) {
    // Scaled to the fullest step on screen (at least 1%), so a large cache still shows a curve.
    let max = 0.01;
    for (const col of cols) max = Math.max(max, col.ev.max_kv_usage);
    ctx.fillStyle = this.colors.kv;
    cols.forEach((col, i) => {
      const hk = Math.round((col.ev.kv_usage / max) * (h - 14));
      ctx.fillRect(x0 + i * COL_W, top + h - hk, COL_W, hk);
    });
    ctx.fillStyle = this.colors.text;
    ctx.fillText(`scale 0–${(max * 100).toFixed(max < 0.1 ? 1 : 0)}%`, this.metrics.clientWidth - 80, top + 12);
  }

  strip_queues(ctx, cols, x0, top, h) {
    let max = 1;
    for (const col of cols) max = Math.max(max, col.ev.running, col.ev.waiting);
    this.line(ctx, cols, x0, top, h, (ev) => ev.running / max, this.colors.running);
    this.line(ctx, cols, x0, top, h, (ev) => ev.waiting / max, this.colors.waiting);
    ctx.fillStyle = this.colors.text;
    ctx.fillText(String(max), this.metrics.clientWidth - 30, top + 12);
  }

  strip_tps(ctx, cols, x0, top, h) {
    const rates = this.rates(cols);
    const max = Math.max(1, ...rates);
    this.line(ctx, cols, x0, top, h, (_, i) => rates[i] / max, this.colors.accent);
    ctx.fillStyle = this.colors.text;
    ctx.fillText(String(Math.round(max)), this.metrics.clientWidth - 50, top + 12);
  }

  /// Tokens per second over the last second of engine time before each column.
  rates(cols) {
    const out = [];
    let j = 0, sum = 0;
    for (let i = 0; i < cols.length; i++) {
      const ev = cols[i].ev;
      sum += ev.prefill_tokens + ev.decode_tokens;
      while (j < i && cols[j].ev.t < ev.t - 1.0) {
        sum -= cols[j].ev.prefill_tokens + cols[j].ev.decode_tokens;
        j++;
      }
      const span = Math.max(ev.t + ev.duration_ms / 1000 - cols[j].ev.t, 1e-3);
      out.push(i - j >= 2 ? sum / span : 0);
    }
    return out;
  }

  line(ctx, cols, x0, top, h, value, color) {
    ctx.strokeStyle = color;
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    cols.forEach((col, i) => {
      const x = x0 + i * COL_W + COL_W / 2, y = top + h - 2 - value(col.ev, i) * (h - 14);
      if (i === 0) ctx.moveTo(x, y); else ctx.lineTo(x, y);
    });
    ctx.stroke();
  }

  /// Rates over the steps that arrived in the last second (so they fall to 0 when idle).
  updateStats() {
    const cols = this.columns;
    if (cols.length === 0) return;
    const last = cols[cols.length - 1].ev;
    const since = performance.now() - 1000;
    let steps = 0, tokens = 0, first = null;
    for (let i = cols.length - 1; i >= 0 && cols[i].receivedAt >= since; i--) {
      steps += cols[i].ev.num_steps;
      tokens += cols[i].ev.prefill_tokens + cols[i].ev.decode_tokens;
      first = cols[i].ev;
    }
    const span = first ? Math.max(last.t + last.duration_ms / 1000 - first.t, 1e-3) : 1;
    const isBusy = steps >= 2;
    $('s-steps').textContent = isBusy ? (steps / span).toFixed(0) : '0';
    $('s-tps').textContent = isBusy ? (tokens / span).toFixed(0) : '0';
    $('s-running').textContent = String(last.running);
    $('s-waiting').textContent = String(last.waiting);
    $('s-kv').textContent = `${(last.kv_usage * 100).toFixed(1)}%`;
    $('s-preempt').textContent = String(this.numPreemptions);
  }

  updateAggregation(vis) {
    let most = 1;
    for (let i = vis.first; i < vis.end; i++) most = Math.max(most, this.columns[i].ev.num_steps);
    const el = $('aggregation');
    el.hidden = most <= 1;
    el.textContent = `server aggregating: up to ${most} steps per column (this view fell behind)`;
  }

  // --- hover -------------------------------------------------------------------

  hover(ev, canvas) {
    if (this.frozenEnd < 0) this.frozenEnd = this.columns.length;
    const rect = canvas.getBoundingClientRect();
    const vis = this.visible(Math.floor(canvas.clientWidth));
    const i = vis.first + Math.floor((ev.clientX - rect.left - vis.x0) / COL_W);
    if (i < vis.first || i >= vis.end) {
      this.hoverIndex = -1;
      $('tooltip').hidden = true;
      this.isDirty = true;
      return;
    }
    this.hoverIndex = i;
    this.isDirty = true;
    const tip = $('tooltip');
    tip.textContent = this.describe(this.columns[i].ev);
    tip.hidden = false;
    const box = $('views').getBoundingClientRect();
    const left = Math.min(ev.clientX - box.left + 14, box.width - 300);
    tip.style.left = `${Math.max(0, left)}px`;
    tip.style.top = `${ev.clientY - box.top + 14}px`;
  }

  unhover() {
    this.hoverIndex = -1;
    this.frozenEnd = -1;
    $('tooltip').hidden = true;
    this.isDirty = true;
  }

  describe(ev) {
    const steps = ev.num_steps > 1 ? `steps ${ev.step}–${ev.last_step} (${ev.num_steps} merged)` : `step ${ev.step}`;
    const lines = [
      `${steps}   ${ev.busy_ms.toFixed(2)} ms`,
      `tokens ${ev.prefill_tokens + ev.decode_tokens + (ev.draft_tokens || 0)} of ${ev.budget * ev.num_steps}: prompt ${ev.prefill_tokens}, decode ${ev.decode_tokens}` +
        (ev.draft_tokens ? `, drafted ${ev.draft_tokens} (kept ${ev.accepted_tokens})` : ''),
      `sequences ${ev.seqs.length + ev.seqs_dropped}${ev.seqs_dropped ? ` (${ev.seqs_dropped} not listed)` : ''}:`,
    ];
    const shown = ev.seqs.slice(0, 12).map((s) => {
      const who = `  #${s.id}${s.adapter ? ` [${s.adapter}]` : ''}`;  // a LoRA adapter's rows name it
      return s.prefill > 0 ? `${who} prompt chunk ${s.prefill} @${s.position}` : `${who} decode @${s.position}${s.draft ? ` + ${s.draft} drafted` : ''}`;
    });
    lines.push(...shown);
    if (ev.seqs.length > 12) lines.push(`  … ${ev.seqs.length - 12} more`);
    if (ev.joined.length) lines.push(`joined ${ev.joined.map((id) => `#${id}`).join(' ')}`);
    if (ev.finished.length) lines.push(`finished ${ev.finished.map((f) => `#${f.id} (${f.reason})`).join(' ')}`);
    if (ev.preempted.length) lines.push(`preempted ${ev.preempted.map((id) => `#${id}`).join(' ')}`);
    lines.push(`KV ${(ev.kv_usage * 100).toFixed(1)}%   running ${ev.running}   waiting ${ev.waiting}`);
    return lines.join('\n');
  }
}
