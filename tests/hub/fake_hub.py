#!/usr/bin/env python3
"""A local stand-in for the Hugging Face Hub, serving repositories from a folder the way
the Hub does, for the tests of hub/ and of the Hub's own JavaScript client:

    ROOT/ORG/REPO/<files>      one repository; its commit is a hash of its files

  GET  /api/models/ORG/REPO/revision/REV        {"sha", "siblings": [{"rfilename"}], ...}
  GET  /api/models/ORG/REPO/tree/REV[/PATH]     [{"type", "path", "oid", "size", "lfs"?}]
  POST /api/models/ORG/REPO/paths-info/REV      the same for {"paths": [...]}, with lastCommit
  HEAD|GET /ORG/REPO/resolve/REV/PATH           small files: 200, ETag = the git blob id;
                                                LFS files (.gguf, .safetensors, > 1 kB): 302 to
                                                /cdn/SHA256, X-Linked-Etag = the SHA-256, X-Linked-Size
  GET  /cdn/SHA256                              the bytes, with Range (bytes=A-B, bytes=A-)
  GET  /_stats                                  bytes of files served, and each file request
                                                with its Range header (what the tests assert on)

Behaviours: --gated ORG/REPO (files answer 401 GatedRepo without `Authorization: Bearer
--token`), --corrupt ORG/REPO/PATH (one byte differs from what its ETag states),
--drop-once ORG/REPO/PATH (the first transfer of its bytes stops half way and the
connection closes). Prints "PORT <n>" once listening. Python's standard library only.
"""
import argparse
import hashlib
import http.server
import json
import os
import re
import sys
import threading
import urllib.parse

LFS_MIN = 1024


def git_blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Repo:
    def __init__(self, root, name):
        self.name = name
        self.files = {}
        base = os.path.join(root, name)
        for d, _, names in os.walk(base):
            for n in names:
                p = os.path.join(d, n)
                rel = os.path.relpath(p, base).replace(os.sep, "/")
                with open(p, "rb") as f:
                    self.files[rel] = f.read()
        h = hashlib.sha1()
        for rel in sorted(self.files):
            h.update(rel.encode() + b"\0" + hashlib.sha256(self.files[rel]).digest())
        self.commit = h.hexdigest()

    def is_lfs(self, path):
        return path.endswith((".gguf", ".safetensors")) or len(self.files[path]) > LFS_MIN

    def entry(self, path):
        data = self.files[path]
        e = {"type": "file", "path": path, "oid": git_blob_id(data), "size": len(data)}
        if self.is_lfs(path):
            e["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
        return e


class Hub:
    def __init__(self, args):
        self.root = args.root
        self.token = args.token
        self.gated = set(args.gated)
        self.corrupt = set(args.corrupt)
        self.drop_once = set(args.drop_once)
        self.lock = threading.Lock()
        self.bytes_served = 0
        self.requests = []

    def repo(self, name):
        if not re.fullmatch(r"[\w.-]+/[\w.-]+", name) or not os.path.isdir(os.path.join(self.root, name)):
            return None
        return Repo(self.root, name)  # read afresh: a test may change a repository between runs

    def blob(self, sha):
        """The repository file whose SHA-256 is `sha`: (repo, path, bytes)."""
        for org in sorted(os.listdir(self.root)):
            for name in sorted(os.listdir(os.path.join(self.root, org))):
                r = self.repo(org + "/" + name)
                if r is None:
                    continue
                for path, data in r.files.items():
                    if hashlib.sha256(data).hexdigest() == sha:
                        return r, path, data
        return None


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    @property
    def hub(self):
        return self.server.hub

    def reply(self, status, body=b"", headers=(), content_type="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error(self, status, code, message):
        self.reply(status, json.dumps({"error": message}).encode(), [("X-Error-Code", code), ("X-Error-Message", message)])

    def commit_of(self, repo, rev):
        return repo.commit if rev in ("main", "HEAD", repo.commit) else None

    def is_authorized(self):
        return self.headers.get("Authorization") == "Bearer " + self.hub.token

    def do_HEAD(self):
        self.route()

    def do_GET(self):
        self.route()

    def do_POST(self):
        self.route()

    def route(self):
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/(revision|tree|paths-info)/([^/]+)(?:/(.*))?", path)
        if m:
            return self.api(m.group(1), m.group(2), m.group(3), m.group(4) or "")
        m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        if m:
            return self.resolve(m.group(1), m.group(2), m.group(3))
        m = re.fullmatch(r"/cdn/([0-9a-f]{64})", path)
        if m:
            return self.cdn(m.group(1))
        if path == "/_stats":
            with self.hub.lock:
                body = json.dumps({"bytes_served": self.hub.bytes_served, "requests": self.hub.requests})
            return self.reply(200, body.encode())
        self.error(404, "NotFound", "no route " + path)

    def api(self, name, kind, rev, sub):
        repo = self.hub.repo(name)
        if repo is None:
            return self.error(401, "RepoNotFound", "Repository not found")
        commit = self.commit_of(repo, rev)
        if commit is None:
            return self.error(404, "RevisionNotFound", "Invalid rev id: " + rev)
        if kind == "revision":
            body = {"_id": "fake" + commit[:20], "id": name, "sha": commit, "private": False,
                    "gated": "manual" if name in self.hub.gated else False, "downloads": 0, "likes": 0,
                    "lastModified": "2026-01-01T00:00:00.000Z", "pipeline_tag": "text-generation",
                    "siblings": [{"rfilename": p} for p in sorted(repo.files)]}
        elif kind == "tree":
            entries, dirs = [], set()
            for p in sorted(repo.files):
                if sub and not p.startswith(sub.rstrip("/") + "/"):
                    continue
                parts = p.split("/")
                for i in range(1, len(parts)):
                    dirs.add("/".join(parts[:i]))
                entries.append(repo.entry(p))
            body = [{"type": "directory", "path": d, "oid": hashlib.sha1(d.encode()).hexdigest(), "size": 0}
                    for d in sorted(dirs)] + entries
        else:
            length = int(self.headers.get("Content-Length") or 0)
            wanted = json.loads(self.rfile.read(length) or b"{}").get("paths", [])
            body = []
            for p in wanted:
                if p in repo.files:
                    e = repo.entry(p)
                    e["lastCommit"] = {"id": commit, "title": "fake", "date": "2026-01-01T00:00:00.000Z"}
                    body.append(e)
        self.reply(200, json.dumps(body).encode())

    def resolve(self, name, rev, path):
        repo = self.hub.repo(name)
        if repo is None:
            return self.error(401, "RepoNotFound", "Repository not found")
        commit = self.commit_of(repo, rev)
        if commit is None:
            return self.error(404, "RevisionNotFound", "Invalid rev id: " + rev)
        if path not in repo.files:
            return self.error(404, "EntryNotFound", "Entry not found")
        if name in self.hub.gated and not self.is_authorized():
            return self.error(401, "GatedRepo", "Access to model " + name + " is restricted.")
        data = repo.files[path]
        common = [("X-Repo-Commit", commit)]
        if repo.is_lfs(path):
            sha = hashlib.sha256(data).hexdigest()
            return self.reply(302, b"", common + [("Location", "/cdn/" + sha), ("X-Linked-Etag", '"%s"' % sha),
                                                  ("X-Linked-Size", str(len(data))),
                                                  ("ETag", '"%s"' % git_blob_id(b"pointer " + data[:16]))])
        self.send_file(name + "/" + path, data, common + [("ETag", '"%s"' % git_blob_id(data))])

    def cdn(self, sha):
        found = self.hub.blob(sha)
        if found is None:
            return self.error(404, "NotFound", "no such object")
        repo, path, data = found
        key = repo.name + "/" + path
        if key in self.hub.corrupt:
            data = bytes([data[0] ^ 1]) + data[1:]
        self.send_file(key, data, [("ETag", '"%s"' % sha)])

    def send_file(self, key, data, headers):
        start, end, status = 0, len(data) - 1, 200
        rng = self.headers.get("Range")
        m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng or "")
        if m:
            start = int(m.group(1))
            end = min(int(m.group(2)), len(data) - 1) if m.group(2) else len(data) - 1
            if start >= len(data):
                return self.reply(416, b"", [("Content-Range", "bytes */%d" % len(data))])
            status = 206
            headers = headers + [("Content-Range", "bytes %d-%d/%d" % (start, end, len(data)))]
        body = data[start:end + 1]
        with self.hub.lock:
            self.hub.requests.append({"file": key, "method": self.command, "range": rng or ""})
            drop = self.command == "GET" and key in self.hub.drop_once
            self.hub.drop_once.discard(key)
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command == "HEAD":
            return
        if drop:
            body = body[:len(body) // 2]
        self.wfile.write(body)
        self.wfile.flush()
        with self.hub.lock:
            self.hub.bytes_served += len(body)
        if drop:
            self.close_connection = True
            self.connection.shutdown(2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--token", default="hf_fake_token")
    ap.add_argument("--gated", action="append", default=[])
    ap.add_argument("--corrupt", action="append", default=[])
    ap.add_argument("--drop-once", action="append", default=[])
    args = ap.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.hub = Hub(args)
    print("PORT %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
