// The web UI in a real browser (Debian's chromium, driven by puppeteer-core):
// load /, send a prompt and see its tokens stream in, stop a second one mid-stream,
// start the built-in load, and check that the engine view drew steps with several
// sequences and a prompt chunk fused with decodes. No console errors. Screenshots go
// to OUT_DIR. Nothing here depends on the machine's speed: waits are for states the
// page reaches, with generous limits that only catch hangs.
//   node browser-test.mjs URL OUT_DIR
import fs from 'node:fs';
import path from 'node:path';
import { HANG_MS, check, withPage } from './browser-util.mjs';

const [url, outDir] = process.argv.slice(2);
const LONG_MAX_TOKENS = 30000;  // the server's context and KV blocks hold it (run-browser-test.sh): a stream of
// tens of seconds on any machine, so the stop always lands mid-stream

async function setParam(page, name, value) {
  await page.$eval(`#p-${name}`, (el, v) => {
    if (el.type === 'checkbox') el.checked = v; else el.value = String(v);
  }, value);
}

/// Sends `prompt` from the playground; returns the selector of its reply.
async function send(page, prompt) {
  const n = await page.$$eval('.msg.assistant', (els) => els.length);
  await page.$eval('#prompt', (el, p) => { el.value = p; }, prompt);
  await page.click('#send');
  const selector = `.msg.assistant:nth-of-type(${2 * (n + 1)})`;
  await page.waitForSelector(selector, { timeout: HANG_MS });
  return selector;
}

async function run() {
  fs.mkdirSync(outDir, { recursive: true });
  const errors = [];
  await withPage(async (page) => {
    page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
    page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
    page.on('requestfailed', (r) => errors.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
    await page.goto(url, { waitUntil: 'load', timeout: HANG_MS });

    await page.waitForSelector('#ws-status[data-state="open"]', { timeout: HANG_MS });
    await page.waitForFunction(() => document.getElementById('policy-name').textContent !== '?', { timeout: HANG_MS });
    const policy = await page.$eval('#policy-name', (el) => el.textContent);
    check(policy === 'splitfuse', `the page shows the active policy (${policy})`);

    // 1. A prompt: its text grows token by token, then the stats line says how it went.
    await setParam(page, 'max_tokens', 48);
    await setParam(page, 'ignore_eos', true);
    await page.evaluate(() => {
      window.seenLengths = new Set();
      new MutationObserver(() => {
        const all = document.querySelectorAll('.msg.assistant .text');
        if (all.length) window.seenLengths.add(all[all.length - 1].textContent.length);
      }).observe(document.getElementById('messages'), { childList: true, subtree: true, characterData: true });
    });
    const first = await send(page, 'Tell me a story');
    await page.waitForSelector(`${first}[data-state="done"]`, { timeout: HANG_MS });
    const done = await page.$eval(first, (el) => ({ ...el.dataset, stats: el.querySelector('.stats').textContent }));
    check(done.finish === 'length' && done.tokens === '48', `the first reply finished by length with 48 tokens (${done.finish}, ${done.tokens})`);
    check(Number(done.tokenMessages) >= 2, `its tokens arrived in ${done.tokenMessages} messages`);
    const lengths = await page.evaluate(() => window.seenLengths.size);
    check(lengths >= 3, `its text was seen at ${lengths} different lengths while it streamed`);
    check(/TTFT [\d.]+ ms · [\d.]+ tok\/s · 48 tokens · prompt \d+ · finish: length/.test(done.stats), `stats line: "${done.stats}"`);
    await page.screenshot({ path: path.join(outDir, '1-playground.png') });

    // 2. A long one, stopped once it streams: the engine reports it cancelled.
    await setParam(page, 'max_tokens', LONG_MAX_TOKENS);
    const second = await send(page, 'Go on, for a long time');
    await page.waitForFunction((sel) => Number(document.querySelector(sel).dataset.tokens) > 0, { timeout: HANG_MS, polling: 'mutation' }, second);
    await page.click('#stop');
    await page.waitForSelector(`${second}[data-state="done"]`, { timeout: HANG_MS });
    const stopped = await page.$eval(second, (el) => ({ ...el.dataset }));
    check(stopped.finish === 'cancelled', `the second reply was cancelled in the engine (finish_reason ${stopped.finish})`);
    check(Number(stopped.tokens) < LONG_MAX_TOKENS, `it stopped after ${stopped.tokens} of ${LONG_MAX_TOKENS} tokens`);
    check(await page.$eval('#send', (el) => !el.disabled), 'the playground takes a new prompt');
    await page.screenshot({ path: path.join(outDir, '2-cancelled.png') });

    // 3. The built-in load: decodes, then long prompts arriving into them.
    await page.select('#load-shape', 'interference');
    await page.click('#load');
    await page.waitForFunction(() => {
      const d = window.inflightUi.view.drawn;
      return d.maxSeqs >= 4 && d.fusedColumns >= 3;
    }, { timeout: HANG_MS });
    await page.screenshot({ path: path.join(outDir, '3-engine-busy.png') });
    const drawn = await page.evaluate(() => ({ ...window.inflightUi.view.drawn }));
    check(drawn.maxSeqs >= 2, `the timeline drew a step with ${drawn.maxSeqs} sequences`);
    check(drawn.fusedColumns >= 1, `it drew ${drawn.fusedColumns} steps with a prompt chunk fused with decodes`);
    // The server drafts by prompt lookup (speculative.method = ngram): decodes that
    // checked drafted tokens are drawn as such.
    check(drawn.draftCells >= 1, `it drew ${drawn.draftCells} decodes with drafted tokens`);
    // The same, read back from the canvas pixels: a column holding both colours. The
    // pointer on the timeline first: the view stops scrolling while it is there. On a
    // slow machine the fused columns may have scrolled away by then: the pointer leaves,
    // the next fused step is drawn, and the view is read again (the deadline only bounds
    // a failing run).
    const box = await (await page.$('#timeline')).boundingBox();
    const scan = () => page.evaluate(() => {
      const canvas = document.getElementById('timeline');
      const ctx = canvas.getContext('2d');
      const { width, height } = canvas;
      const data = ctx.getImageData(0, 0, width, height).data;
      const hex = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();
      const rgb = (h) => [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16));
      const [p, d] = [rgb(hex('--prefill')), rgb(hex('--decode'))];
      let fusedX = -1, numFused = 0;
      for (let x = 0; x < width; x++) {
        let hasP = false, hasD = false;
        for (let y = 0; y < height; y++) {
          const i = 4 * (y * width + x);
          if (data[i + 3] !== 255) continue;
          if (data[i] === p[0] && data[i + 1] === p[1] && data[i + 2] === p[2]) hasP = true;
          if (data[i] === d[0] && data[i + 1] === d[1] && data[i + 2] === d[2]) hasD = true;
        }
        if (hasP && hasD) { numFused++; fusedX = x; }
      }
      return { numFused, fusedX, dpr: window.devicePixelRatio };
    });
    const nextFrame = () => page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
    let pixels = { numFused: 0, fusedX: -1, dpr: 1 };
    const scanDeadline = Date.now() + HANG_MS;
    for (;;) {
      await page.mouse.move(box.x + 2, box.y + 2);
      await nextFrame();
      pixels = await scan();
      if (pixels.numFused >= 1 || Date.now() > scanDeadline) break;
      await page.mouse.move(5, 5);
      const seen = await page.evaluate(() => window.inflightUi.view.drawn.fusedColumns);
      await page.waitForFunction((n) => window.inflightUi.view.drawn.fusedColumns > n, { timeout: HANG_MS }, seen);
    }
    check(pixels.numFused >= 1, `${pixels.numFused} pixel columns of the timeline show a prompt chunk beside decodes`);

    // Hovering that column shows its composition.
    await page.mouse.move(box.x + pixels.fusedX / pixels.dpr, box.y + 20);
    await page.waitForSelector('#tooltip:not([hidden])', { timeout: HANG_MS });
    const tip = await page.$eval('#tooltip', (el) => el.textContent);
    check(/prompt chunk \d+ @\d+/.test(tip) && /decode @\d+/.test(tip), 'the tooltip lists a prompt chunk and decodes');
    await page.screenshot({ path: path.join(outDir, '4-engine-hover.png') });
    await page.mouse.move(5, 5);

    // Stopping the load cancels what is left; the view goes quiet.
    await page.click('#load');
    await page.waitForFunction(() => !window.inflightUi.load.isRunning, { timeout: HANG_MS });
    await page.waitForFunction(() => document.getElementById('s-running').textContent === '0', { timeout: HANG_MS });
    await page.screenshot({ path: path.join(outDir, '5-after-load.png'), fullPage: true });
    check(errors.length === 0, `no console errors${errors.length ? `: ${errors.join('; ')}` : ''}`);
  });
}

run().then(() => console.log('browser test: passed'), (e) => {
  console.error(`browser test: FAILED: ${e.stack || e}`);
  process.exit(1);
});
