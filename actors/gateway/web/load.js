// A small built-in workload, sent over the page's WebSocket, shaped like the benchmark
// workloads of the same names (small sizes, scaled to the model's context):
// - interference: long-running decode streams, then long prompts arriving into them
//   (with SplitFuse the prompts are cut into chunks that ride along with the decodes;
//   without chunked prefill a prompt takes whole steps while the decodes wait);
// - variance: requests queued at once whose output lengths vary widely (static
//   batching waits for the longest of each batch; continuous batching refills).
// Prompts are random token ids and every request ignores EOS, so lengths are exact.

function rng(seed) {  // mulberry32: the same workload every time
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class LoadRunner {
  constructor(socket, onChange) {
    this.socket = socket;
    this.onChange = onChange;
    this.ids = new Set();
    this.timers = [];
    this.numSent = 0;
    this.numDone = 0;
    this.numPlanned = 0;
    this.shape = '';
  }

  get isRunning() { return this.numDone < this.numPlanned; }

  /// `engine`: the feed's engine event (max_context, vocab_size).
  start(shape, engine) {
    this.stop();
    this.shape = shape;
    this.numSent = this.numDone = 0;
    const random = rng(0);
    const vocab = Math.max(4, Math.min(engine.vocab_size || 259, 259));
    const tokens = (n) => Array.from({ length: n }, () => 3 + Math.floor(random() * (vocab - 3)));
    const ctx = engine.max_context || 512;
    if (shape === 'variance') this.startVariance(tokens, random, ctx);
    else this.startInterference(tokens, ctx);
    this.onChange();
  }

  startVariance(tokens, random, ctx) {
    const numRequests = 64, promptLen = Math.min(64, Math.floor(ctx / 4));
    const cap = Math.max(1, Math.min(256, ctx - promptLen - 1));
    this.numPlanned = numRequests;
    for (let i = 0; i < numRequests; i++) {
      let out;
      do { out = Math.max(1, Math.round(-32 * Math.log(1 - random()))); } while (out > cap);
      this.send({ prompt: tokens(promptLen), max_tokens: out });
    }
  }

  startInterference(tokens, ctx) {
    const numStreams = 8, numLong = 12;
    const streamPrompt = Math.min(32, Math.floor(ctx / 8));
    const streamOut = Math.max(8, Math.min(768, ctx - streamPrompt - 1));
    const longPrompt = Math.max(16, Math.min(384, Math.floor(ctx * 0.75) - 16));
    this.numPlanned = numStreams + numLong;
    let isLongStarted = false;
    const startLong = () => {
      if (isLongStarted) return;
      isLongStarted = true;
      // The first long prompt as soon as the decodes run, the others every 500 ms.
      for (let i = 0; i < numLong; i++) {
        const timer = setTimeout(() => this.send({ prompt: tokens(longPrompt), max_tokens: 16 }), i * 500);
        this.timers.push(timer);
      }
    };
    for (let i = 0; i < numStreams; i++) {
      this.send({ prompt: tokens(streamPrompt), max_tokens: streamOut }, startLong);
    }
  }

  send(body, onFirstToken) {
    let isFirst = true;
    const id = this.socket.generate('load', { ...body, temperature: 0, ignore_eos: true }, {
      onToken: () => {
        if (isFirst && onFirstToken) onFirstToken();
        isFirst = false;
      },
      onDone: () => this.settle(id),
      onError: () => this.settle(id),
    });
    this.ids.add(id);
    this.numSent += 1;
  }

  settle(id) {
    if (!this.ids.delete(id)) return;
    this.numDone += 1;
    this.onChange();
  }

  /// Cancels whatever is still running (and what has not been sent yet).
  stop() {
    for (const t of this.timers) clearTimeout(t);
    this.timers = [];
    for (const id of this.ids) this.socket.cancel(id);
    this.numPlanned = this.numSent;
  }

  describe() {
    if (this.numPlanned === 0) return '';
    return `${this.shape}: ${this.numDone}/${this.numPlanned} done`;
  }
}
