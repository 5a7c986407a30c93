// One WebSocket to /v1/ws (docs/websocket.md) that multiplexes every request of the
// page, the playground's and the load's, by id. Reconnects when the server goes away.
// With an API key, the key travels as a subprotocol (a browser's WebSocket cannot send
// an Authorization header): `inflight` and `inflight.key.<the key in base64url>`.

/// The key in base64url without padding (a subprotocol must be an HTTP token).
export function base64url(text) {
  let binary = '';
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export class EngineSocket {
  constructor(onStatus) {
    this.onStatus = onStatus;
    this.handlers = new Map();  // id -> {onToken, onDone, onError}
    this.queue = [];            // frames sent before the socket opened
    this.nextId = 1;
    this.key = '';
    this.ws = null;
  }

  /// Connects (again) with `key` ('' = none).
  start(key) {
    this.key = key;
    if (this.ws) {
      this.ws.onclose = null;
      this.ws.close();
    }
    this.connect();
  }

  connect() {
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const protocols = this.key ? ['inflight', `inflight.key.${base64url(this.key)}`] : [];
    this.ws = new WebSocket(`${scheme}//${location.host}/v1/ws`, protocols);
    this.onStatus('connecting');
    this.ws.onopen = () => {
      this.onStatus('open');
      for (const frame of this.queue.splice(0)) this.ws.send(frame);
    };
    this.ws.onmessage = (ev) => this.dispatch(JSON.parse(ev.data));
    this.ws.onclose = () => {
      this.onStatus('closed');
      for (const [id, h] of this.handlers) h.onError?.({ message: 'the connection to the server was lost' }, id);
      this.handlers.clear();
      setTimeout(() => this.connect(), 1000);
    };
  }

  dispatch(msg) {
    const h = this.handlers.get(String(msg.id));
    if (!h) return;
    if (msg.type === 'token') h.onToken?.(msg);
    else if (msg.type === 'done') { this.handlers.delete(String(msg.id)); h.onDone?.(msg); }
    else if (msg.type === 'error') { this.handlers.delete(String(msg.id)); h.onError?.(msg.error, msg.id); }
  }

  send(obj) {
    const frame = JSON.stringify(obj);
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(frame);
    else this.queue.push(frame);
  }

  /// Starts a request; returns its id. `body` holds prompt or messages and the sampling fields.
  generate(prefix, body, handlers) {
    const id = `${prefix}-${this.nextId++}`;
    this.handlers.set(id, handlers);
    this.send({ type: 'generate', id, ...body });
    return id;
  }

  cancel(id) {
    if (this.handlers.has(id)) this.send({ type: 'cancel', id });
  }
}
