// The web UI against a server with API keys, in a real browser (Debian's chromium,
// driven by puppeteer-core): the page asks for a key, refuses a wrong one, and with the
// right one streams a reply over the WebSocket (the key as a subprotocol) and draws the
// engine feed (fetch with the Authorization header). A reload reuses the stored key.
//   node browser-keys-test.mjs URL KEY OUT_DIR
import fs from 'node:fs';
import path from 'node:path';
import { HANG_MS, check, withPage } from './browser-util.mjs';

const [url, key, outDir] = process.argv.slice(2);

async function useKey(page, value) {
  await page.$eval('#api-key', (el, v) => { el.value = v; }, value);
  await page.click('#key-use');
}

async function run() {
  fs.mkdirSync(outDir, { recursive: true });
  const errors = [];
  await withPage(async (page) => {
    // The refused probes (401) are expected; anything else is an error.
    page.on('console', (m) => { if (m.type() === 'error' && !/401/.test(m.text())) errors.push(`console: ${m.text()}`); });
    page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
    await page.goto(url, { waitUntil: 'load', timeout: HANG_MS });

    await page.waitForSelector('#key-form:not([hidden])', { timeout: HANG_MS });
    check(await page.$eval('#ws-status', (el) => el.textContent) === 'no API key', 'without a key the page does not connect');
    check(await page.$eval('#key-status', (el) => el.textContent) === 'this server needs an API key', 'it asks for a key');

    await useKey(page, `${key}-wrong`);
    await page.waitForFunction(() => document.getElementById('key-status').textContent === 'that API key was refused',
                               { timeout: HANG_MS });
    check(true, 'a wrong key is refused');

    await useKey(page, key);
    await page.waitForSelector('#ws-status[data-state="open"]', { timeout: HANG_MS });
    check(await page.$eval('#key-form', (el) => el.hidden), 'with the key the form goes away and the socket opens');
    await page.waitForFunction(() => document.getElementById('policy-name').textContent !== '?', { timeout: HANG_MS });
    check(await page.$eval('#feed-status', (el) => el.dataset.state) === 'open', 'the engine feed is live');

    await page.$eval('#p-max_tokens', (el) => { el.value = '8'; });
    await page.$eval('#p-ignore_eos', (el) => { el.checked = true; });
    await page.$eval('#prompt', (el) => { el.value = 'Once upon a time'; });
    await page.click('#send');
    await page.waitForSelector('.msg.assistant[data-state="done"]', { timeout: HANG_MS });
    const done = await page.$eval('.msg.assistant[data-state="done"]', (el) => ({ ...el.dataset }));
    check(done.finish === 'length' && done.tokens === '8', `a reply streamed over the keyed socket (${done.finish}, ${done.tokens} tokens)`);
    await page.waitForFunction(() => window.inflightUi.view.drawn.columns > 0, { timeout: HANG_MS });
    check(true, 'the engine view drew its steps');
    await page.screenshot({ path: path.join(outDir, 'keys-1-connected.png') });

    await page.reload({ waitUntil: 'load', timeout: HANG_MS });
    await page.waitForSelector('#ws-status[data-state="open"]', { timeout: HANG_MS });
    check(await page.$eval('#key-form', (el) => el.hidden), 'a reload connects with the stored key');
    check(errors.length === 0, `no console errors${errors.length ? `: ${errors.join('; ')}` : ''}`);
  });
}

run().then(() => console.log('browser keys test: passed'), (e) => {
  console.error(`browser keys test: FAILED: ${e.stack || e}`);
  process.exit(1);
});
