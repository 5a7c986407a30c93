// A minimal WebSocket client (RFC 6455) over node:net that checks every frame the server
// sends: handshake accept key, unmasked frames, no reserved bits, known opcodes, control
// frames short and unfragmented, text messages valid UTF-8. Anything else is recorded in
// `errors`, so the soak test can assert that the framing was always well formed.
import crypto from 'node:crypto';
import net from 'node:net';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
const utf8 = new TextDecoder('utf-8', { fatal: true });

export class WsClient {
  constructor(socket) {
    this.socket = socket;
    this.errors = [];
    this.closed = false;
    this.isCloseSent = false;
    this.onmessage = () => {};
    this.onclose = () => {};
    this.buffer = Buffer.alloc(0);
    this.fragments = null; // [opcode, [buffers]] while a fragmented message arrives
  }

  /// Connects and completes the upgrade; rejects when the handshake is not a valid 101.
  static connect(port, path = '/v1/ws') {
    return new Promise((resolve, reject) => {
      const key = crypto.randomBytes(16).toString('base64');
      const socket = net.connect(port, '127.0.0.1');
      let head = Buffer.alloc(0);
      const fail = (err) => { socket.destroy(); reject(err); };
      socket.once('error', fail);
      socket.on('data', function onData(chunk) {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf('\r\n\r\n');
        if (end < 0) return;
        socket.off('data', onData);
        socket.off('error', fail);
        const lines = head.subarray(0, end).toString('latin1').split('\r\n');
        const headers = new Map(lines.slice(1).map((l) => {
          const i = l.indexOf(':');
          return [l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim()];
        }));
        const accept = crypto.createHash('sha1').update(key + GUID).digest('base64');
        if (!/^HTTP\/1\.1 101 /.test(lines[0]) || headers.get('upgrade')?.toLowerCase() !== 'websocket' ||
            headers.get('sec-websocket-accept') !== accept) {
          return fail(new Error(`bad WebSocket handshake: ${lines.join(' | ')}`));
        }
        const client = new WsClient(socket);
        socket.on('data', (c) => client.receive(c));
        socket.on('error', () => {});
        socket.on('close', () => { client.closed = true; client.onclose(); });
        resolve(client);
        const rest = head.subarray(end + 4);
        if (rest.length) client.receive(rest);
      });
      socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\n` +
                   `Connection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
    });
  }

  sendText(text) { this.sendFrame(1, Buffer.from(text, 'utf8')); }
  sendBinary(bytes) { this.sendFrame(2, Buffer.from(bytes)); }

  /// Client frames are masked (the server must refuse unmasked ones).
  sendFrame(opcode, payload) {
    if (this.closed || this.socket.destroyed) return;
    const mask = crypto.randomBytes(4);
    const n = payload.length;
    const header = n < 126 ? Buffer.from([0x80 | opcode, 0x80 | n])
      : n < 65536 ? Buffer.from([0x80 | opcode, 0x80 | 126, n >> 8, n & 255])
        : Buffer.concat([Buffer.from([0x80 | opcode, 0x80 | 127]), bigEndian64(n)]);
    const masked = Buffer.alloc(n);
    for (let i = 0; i < n; i++) masked[i] = payload[i] ^ mask[i & 3];
    this.socket.write(Buffer.concat([header, mask, masked]));
  }

  /// A clean close: close frame, then the server closes the TCP connection.
  close() {
    if (this.isCloseSent) return;
    this.isCloseSent = true;
    this.sendFrame(8, Buffer.from([0x03, 0xe8]));
  }
  /// An abrupt disconnect: no close frame.
  terminate() { this.socket.destroy(); }

  receive(chunk) {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    for (;;) {
      const frame = this.parseFrame();
      if (!frame) return;
      this.handleFrame(frame);
    }
  }

  parseFrame() {
    const b = this.buffer;
    if (b.length < 2) return null;
    const fin = (b[0] & 0x80) !== 0, rsv = b[0] & 0x70, opcode = b[0] & 0x0f;
    const masked = (b[1] & 0x80) !== 0;
    let len = b[1] & 0x7f, pos = 2;
    if (len === 126) {
      if (b.length < 4) return null;
      len = b.readUInt16BE(2); pos = 4;
      if (len < 126) this.errors.push('non-minimal 16-bit frame length');
    } else if (len === 127) {
      if (b.length < 10) return null;
      const big = b.readBigUInt64BE(2); pos = 10;
      if (big >= 2n ** 53n) { this.errors.push('frame length over 2^53'); this.terminate(); return null; }
      len = Number(big);
      if (len < 65536) this.errors.push('non-minimal 64-bit frame length');
    }
    if (masked) this.errors.push('server frame is masked');
    if (rsv) this.errors.push(`reserved bits set (${rsv})`);
    if (masked) pos += 4;
    if (b.length < pos + len) return null;
    const payload = b.subarray(pos, pos + len);
    this.buffer = b.subarray(pos + len);
    return { fin, opcode, payload };
  }

  handleFrame({ fin, opcode, payload }) {
    if (opcode >= 8) {
      if (!fin || payload.length > 125) this.errors.push(`bad control frame (opcode ${opcode})`);
      if (opcode === 9) this.sendFrame(10, payload);
      else if (opcode === 8) { this.close(); this.socket.end(); }
      else if (opcode !== 10) this.errors.push(`unknown control opcode ${opcode}`);
      return;
    }
    if (opcode === 0) {
      if (!this.fragments) { this.errors.push('continuation without a message'); return; }
      this.fragments[1].push(payload);
    } else if (opcode === 1 || opcode === 2) {
      if (this.fragments) this.errors.push('new message inside a fragmented one');
      this.fragments = [opcode, [payload]];
    } else {
      this.errors.push(`unknown data opcode ${opcode}`);
      return;
    }
    if (!fin) return;
    const [kind, parts] = this.fragments;
    this.fragments = null;
    if (kind !== 1) { this.errors.push('binary message from the server'); return; }
    let text;
    try { text = utf8.decode(Buffer.concat(parts)); } catch { this.errors.push('text message is not valid UTF-8'); return; }
    this.onmessage(text);
  }
}

function bigEndian64(n) {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
}
