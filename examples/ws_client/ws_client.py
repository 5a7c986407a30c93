#!/usr/bin/env python3
"""A small WebSocket client for inflight's /v1/ws, Python standard library only.

Sends several prompts at once over ONE socket (each with its own id), prints the
tokens as they arrive, and can cancel one of them. See docs/websocket.md.

    python3 examples/ws_client/ws_client.py --port 8000 "Once upon a time" "The cat"
    python3 examples/ws_client/ws_client.py --cancel-after 5 "Once upon a time" "Tom"
"""
import argparse
import base64
import json
import os
import socket
import struct
import sys


class WebSocket:
    """Just enough of RFC 6455 for a client: text frames, ping/pong, close."""

    def __init__(self, host, port, path):
        self.sock = socket.create_connection((host, port))
        key = base64.b64encode(os.urandom(16)).decode()
        request = (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                   f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        self.sock.sendall(request.encode())
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("the server closed the connection during the handshake")
            response += chunk
        head, self.buffer = response.split(b"\r\n\r\n", 1)
        if not head.startswith(b"HTTP/1.1 101"):
            raise ConnectionError(head.decode(errors="replace"))

    def _send_frame(self, opcode, payload):
        header = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack("!Q", n)
        mask = os.urandom(4)  # clients must mask every frame
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def send_json(self, message):
        self._send_frame(0x1, json.dumps(message).encode())

    def _read_exact(self, n):
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed")
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def receive_json(self):
        """The next text message as JSON; answers pings on the way."""
        message = b""
        while True:
            b0, b1 = self._read_exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._read_exact(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._read_exact(8))[0]
            payload = self._read_exact(n)
            opcode = b0 & 0x0F
            if opcode == 0x9:  # ping -> pong
                self._send_frame(0xA, payload)
            elif opcode == 0x8:
                raise ConnectionError("the server closed the WebSocket")
            elif opcode in (0x0, 0x1):
                message += payload
                if b0 & 0x80:
                    return json.loads(message)

    def close(self):
        self._send_frame(0x8, struct.pack("!H", 1000))
        self.sock.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prompts", nargs="+")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--cancel-after", type=int, default=0,
                        help="cancel the first prompt after this many tokens (0 = never)")
    args = parser.parse_args()

    ws = WebSocket(args.host, args.port, "/v1/ws")
    texts = {}
    for i, prompt in enumerate(args.prompts):
        texts[i] = prompt
        ws.send_json({"type": "generate", "id": i, "prompt": prompt,
                      "max_tokens": args.max_tokens, "temperature": args.temperature})
    live = set(texts)
    num_tokens = 0
    while live:
        msg = ws.receive_json()
        if msg["type"] == "token":
            texts[msg["id"]] += msg["text"]
            if msg["id"] == 0:
                num_tokens += len(msg["token_ids"])
                if args.cancel_after and num_tokens == args.cancel_after:
                    ws.send_json({"type": "cancel", "id": 0})
        elif msg["type"] == "done":
            live.discard(msg["id"])
            t = msg["timings"]
            print(f"[{msg['id']}] {texts[msg['id']]!r}\n    finish: {msg['finish_reason']}, "
                  f"tokens: {msg['usage']['completion_tokens']}, ttft {t['ttft_ms']:.1f} ms, "
                  f"tpot {t['tpot_ms']:.2f} ms, e2e {t['e2e_ms']:.1f} ms")
        elif msg["type"] == "error":
            print(f"error for id {msg['id']}: {msg['error']['message']}", file=sys.stderr)
            live.discard(msg["id"])
    ws.close()


if __name__ == "__main__":
    main()
