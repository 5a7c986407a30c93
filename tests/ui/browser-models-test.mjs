// The web UI against a server of two models ([[models]], `first` and `second`, the
// second not loaded: server.max_loaded_models = 1): the header offers both with their
// states, and a message sent with `second` chosen goes to `second` (its counters move,
// the first's do not) and loads it.
//   node browser-models-test.mjs URL OUT_DIR
import fs from 'node:fs';
import path from 'node:path';
import { HANG_MS, check, withPage } from './browser-util.mjs';

const [url, outDir] = process.argv.slice(2);

async function generated(name) {
  const text = await (await fetch(new URL('/metrics', url))).text();
  const m = text.match(new RegExp(`inflight:generation_tokens_total\\{model_name="${name}"\\} (\\d+)`));
  return m ? Number(m[1]) : 0;
}

async function run() {
  fs.mkdirSync(outDir, { recursive: true });
  const errors = [];
  await withPage(async (page) => {
    page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
    page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
    await page.goto(url, { waitUntil: 'load', timeout: HANG_MS });
    await page.waitForSelector('#model-pick:not([hidden])', { timeout: HANG_MS });
    const options = await page.$$eval('#model-pick option', (els) => els.map((e) => [e.value, e.textContent]));
    check(JSON.stringify(options) === JSON.stringify([['first', 'first (loaded)'], ['second', 'second (unloaded)']]),
          `the header offers both models with their states (${JSON.stringify(options)})`);
    await page.waitForSelector('#ws-status[data-state="open"]', { timeout: HANG_MS });
    await page.select('#model-pick', 'second');
    await page.$eval('#p-max_tokens', (el) => { el.value = '6'; });
    await page.$eval('#p-ignore_eos', (el) => { el.checked = true; });
    await page.$eval('#prompt', (el) => { el.value = 'Once upon a time'; });
    const firstBefore = await generated('first');
    await page.click('#send');
    await page.waitForSelector('.msg.assistant[data-state="done"]', { timeout: HANG_MS });
    const done = await page.$eval('.msg.assistant[data-state="done"]', (el) => ({ ...el.dataset }));
    check(done.finish === 'length' && done.tokens === '6', `a reply streamed (${done.finish}, ${done.tokens} tokens)`);
    check(await generated('second') === 6 && await generated('first') === firstBefore,
          'the reply came from the chosen model, not the first');
    const state = (await (await fetch(new URL('/v1/models/second', url))).json()).state;
    check(state === 'loaded', `the chosen model was loaded for it (${state})`);
    await page.waitForFunction(() => document.querySelector('#model-pick option[value="second"]').textContent ===
                               'second (loaded)', { timeout: HANG_MS });
    check(true, 'the header shows the chosen model loaded once the reply is in');
    await page.screenshot({ path: path.join(outDir, 'models-1-chosen.png') });
    check(errors.length === 0, `no console errors${errors.length ? `: ${errors.join('; ')}` : ''}`);
  });
}

run().then(() => console.log('browser models test: passed'), (e) => {
  console.error(`browser models test: FAILED: ${e.stack || e}`);
  process.exit(1);
});
