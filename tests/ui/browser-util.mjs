// Shared by the browser tests: Debian's chromium through puppeteer-core, with a
// throwaway profile, and the one-line checks they print.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

export const HANG_MS = 180_000;  // limits that only catch hangs, never a slow machine

export function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
  console.log(`ok: ${message}`);
}

/// Runs `body(page)` in a fresh headless chromium (1600 x 1000), then closes it and
/// removes its profile.
export async function withPage(body) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'inflight-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    userDataDir: profile,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1600, height: 1000 });
    await body(page);
  } finally {
    await browser.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}
