'use strict';
const fs = require('fs');
const { chromium } = require('playwright-core');

const cfg = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const emit = (kind, obj) =>
  process.stdout.write(`PF ${JSON.stringify({ kind, ...obj })}\n`);
const log = text => process.stdout.write(`${text}\n`);

function isLocal(url) {
  try {
    const u = new URL(url);
    return (
      ['data:', 'blob:', 'about:'].includes(u.protocol) ||
      ['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname)
    );
  } catch (e) {
    return false;
  }
}

// What a failure leaves to look at: failed API answers, and the panel's words then.
const diagnosis = [];

// Installed in the page once the timeline exists: frame times, the timeline's attribute
// changes (data-window: a fetched window arrived; data-draw-ms: a draw), wheel events and
// the timeline requests' Resource Timing.
function instrument() {
  const node = document.querySelector('.jp-scorep-panel .jp-scorep-timeline');
  const pf = (window.__pf = {
    phase: null,
    frames: [],
    muts: [],
    wheels: [],
    fetches: []
  });
  const loop = t => {
    if (pf.phase) {
      pf.frames.push([pf.phase, t]);
    }
    requestAnimationFrame(loop);
  };
  requestAnimationFrame(loop);
  window.addEventListener('wheel', e => pf.wheels.push(e.timeStamp), {
    capture: true,
    passive: true
  });
  new MutationObserver(records => {
    const now = performance.now();
    for (const r of records) {
      const draw = r.attributeName === 'data-draw-ms';
      pf.muts.push([
        draw ? 'd' : 'w',
        now,
        draw ? Number(node.dataset.drawMs) : 0,
        pf.phase
      ]);
    }
  }).observe(node, {
    attributes: true,
    attributeFilter: ['data-window', 'data-draw-ms']
  });
  new PerformanceObserver(list => {
    for (const e of list.getEntries()) {
      if (e.name.includes('/scorep/api/timeline')) {
        pf.fetches.push([e.startTime, e.responseStart, e.responseEnd]);
      }
    }
  }).observe({ type: 'resource' });
}

// Resolves once a window arrived after `since` (performance.now() time) and was drawn.
async function refined(page, since, timeout = 10000) {
  const handle = await page.waitForFunction(
    since => {
      let arrived = -1;
      const muts = window.__pf.muts;
      for (let i = muts.length - 1; i >= 0 && muts[i][1] >= since; i--) {
        if (muts[i][0] === 'w') {
          arrived = i;
        }
      }
      if (arrived < 0) {
        return false;
      }
      for (let i = arrived + 1; i < muts.length; i++) {
        if (muts[i][0] === 'd') {
          return { arrived: muts[arrived][1], drawn: muts[i][1] };
        }
      }
      return false;
    },
    since,
    { timeout, polling: 20 }
  );
  return handle.jsonValue();
}

// One wheel event at (x, y); resolves with its timestamp and when its refined window was
// drawn.
async function wheel(page, x, y, dy) {
  await page.mouse.move(x, y);
  const before = await page.evaluate(() => window.__pf.wheels.length);
  await page.mouse.wheel(0, dy);
  await page.waitForFunction(n => window.__pf.wheels.length > n, before, {
    polling: 10
  });
  const at = await page.evaluate(n => window.__pf.wheels[n], before);
  try {
    const r = await refined(page, at);
    return { in: dy < 0, wheel: at, arrived: r.arrived, drawn: r.drawn };
  } catch (e) {
    return { in: dy < 0, wheel: at, timedOut: true };
  }
}

const now = page => page.evaluate(() => performance.now());
const setPhase = (page, phase) =>
  page.evaluate(p => {
    window.__pf.phase = p;
  }, phase);

async function apiIdle(page, state, quietMs = 1000, timeout = 180000) {
  const end = Date.now() + timeout;
  let quietSince = Date.now();
  while (Date.now() < end) {
    if (state.inflight > 0) {
      quietSince = Date.now();
    } else if (Date.now() - quietSince >= quietMs) {
      return;
    }
    await page.waitForTimeout(100);
  }
  throw new Error('the panel kept requesting for ' + timeout / 1000 + ' s');
}

async function resetView(page, canvas) {
  const since = await now(page);
  await canvas.focus();
  await page.keyboard.press('0');
  await refined(page, since);
}

async function measure(page, canvas, box, repeat, label) {
  const w = box.width;
  const rowY = depth => box.y + 22 + 16 + depth * 18 + 9; // axis, lane title, rows of 18 px
  // zoom in at one point, then out at another, one wheel event each, each refined
  await resetView(page, canvas);
  const zooms = [];
  await setPhase(page, 'zoom');
  for (let i = 0; i < 28; i++) {
    const zoomIn = i < 14;
    zooms.push(
      await wheel(
        page,
        box.x + w * (zoomIn ? 0.37 : 0.71),
        rowY(1),
        zoomIn ? -500 : 500
      )
    );
  }
  await setPhase(page, null);

  // drag-pan at 1/20 of the trace: 300 px left and back, one move per frame
  await resetView(page, canvas);
  for (let i = 0; i < 4; i++) {
    await wheel(page, box.x + w * 0.5, rowY(1), -500);
  }
  await setPhase(page, 'pan');
  await page.mouse.down();
  for (let i = 1; i <= 60; i++) {
    const dx = i <= 30 ? -10 * i : -10 * (60 - i);
    await page.mouse.move(box.x + w * 0.5 + dx, rowY(1));
  }
  await page.mouse.up();
  const panEnd = await now(page);
  const panRefined = await refined(page, panEnd).catch(() => null);
  await setPhase(page, null);

  // hover across three rows at the full view: tooltip and outline follow the pointer
  await resetView(page, canvas);
  await setPhase(page, 'hover');
  for (const depth of [0, 2, 4]) {
    for (let i = 0; i <= 60; i++) {
      await page.mouse.move(box.x + w * (0.05 + (0.9 * i) / 60), rowY(depth));
    }
  }
  await page.mouse.move(box.x + w / 2, box.y - 40); // leave the canvas
  await page.waitForTimeout(100);
  await setPhase(page, null);

  const pf = await page.evaluate(() => {
    const pf = window.__pf;
    const out = { frames: pf.frames, muts: pf.muts, fetches: pf.fetches };
    pf.frames = [];
    pf.muts = [];
    pf.fetches = [];
    pf.wheels = [];
    return out;
  });
  emit('repeat', { label, repeat, zooms, panEnd, panRefined, ...pf });
}

// Open the notebook in a fresh JupyterLab page, show the panel's Timeline tab, wait until
// it drew and the panel's other requests (summary, call tree) are done.
async function openPanel(page, nb, state) {
  let t = Date.now();
  await page.goto(`${cfg.base}/lab?reset&token=${cfg.token}`); // reset: no documents restored
  await page.waitForFunction(
    () => window.jupyterapp && window.jupyterapp.shell,
    null,
    { timeout: 120000 }
  );
  await page.evaluate(() => window.jupyterapp.restored);
  log(
    `${nb.label}: JupyterLab loaded in ${((Date.now() - t) / 1000).toFixed(1)} s`
  );
  t = Date.now();
  await page.evaluate(
    path =>
      window.jupyterapp.commands.execute('docmanager:open', {
        path,
        kernelPreference: {
          shouldStart: false,
          canStart: false,
          autoStartDefault: false
        }
      }),
    nb.path
  );
  const panel = page.locator('.jp-scorep-panel').first();
  await page.waitForSelector('.jp-scorep-panel[data-state="ready"]', {
    timeout: 120000
  });
  // the output may be rendered again (a new panel, on its Summary tab): click again then
  for (let attempt = 1; ; attempt++) {
    await panel.locator('.jp-scorep-tab[data-tab="timeline"]').click();
    try {
      await page.waitForFunction(
        () =>
          Number(
            document.querySelector('.jp-scorep-panel .jp-scorep-timeline')
              ?.dataset.spans
          ) > 0,
        null,
        { timeout: 20000, polling: 100 }
      );
      break;
    } catch (e) {
      if (attempt === 3) {
        throw e;
      }
      log(
        `${nb.label}: no timeline drawn 20 s after showing it (${(await page.evaluate(panelWords)).join('; ')}); again`
      );
    }
  }
  await apiIdle(page, state);
  log(`${nb.label}: panel ready in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  return panel;
}

// The panel's own words, for a failure's report.
function panelWords() {
  const panel = document.querySelector('.jp-scorep-panel');
  if (!panel) {
    return ['no panel in the page'];
  }
  const text = sel =>
    (panel.querySelector(sel)?.textContent ?? '').trim().slice(0, 300);
  const tl = panel.querySelector('.jp-scorep-timeline');
  return [
    `panel state ${panel.dataset.state}; message "${text('.jp-scorep-message')}"`,
    `tab shown: ${panel.querySelector('.jp-scorep-tab[aria-selected="true"]')?.textContent}`,
    `timeline: spans ${tl?.dataset.spans}, window ${tl?.dataset.window}, ` +
      `status "${text('.jp-scorep-timeline-status')}"`
  ];
}

(async () => {
  const browser = await chromium.launch({
    executablePath: cfg.chromium,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-default-apps',
      '--disable-domain-reliability',
      '--no-first-run',
      '--disable-breakpad'
    ]
  });
  try {
    const context = await browser.newContext({
      viewport: { width: 1400, height: 1000 }
    });
    await context.route(
      url => !isLocal(url.href),
      route => route.abort()
    );
    for (const nb of cfg.notebooks) {
      // a page of its own per notebook: JupyterLab loaded afresh, the notebook opened
      const page = await context.newPage();
      const state = { inflight: 0 };
      const api = r => r.url().includes('/scorep/api/');
      page.on('request', r => {
        if (api(r)) state.inflight++;
      });
      page.on('requestfinished', r => {
        if (api(r)) state.inflight--;
      });
      page.on('requestfailed', r => {
        if (api(r)) state.inflight--;
      });
      page.on('pageerror', e => log(`page error: ${e.message}`));
      page.on('response', r => {
        if (api(r) && !r.ok()) {
          diagnosis.push(`${r.status()} ${r.url().replace(/token=[^&]*/, '')}`);
        }
      });
      try {
        const panel = await openPanel(page, nb, state);
        const canvas = panel.locator('.jp-scorep-timeline-canvas');
        await canvas.scrollIntoViewIfNeeded();
        const box = await canvas.boundingBox();
        const spans = Number(
          await panel.locator('.jp-scorep-timeline').getAttribute('data-spans')
        );
        emit('setup', { label: nb.label, canvas: box, spans });
        await page.evaluate(instrument);
        for (let r = 0; r < cfg.warmups + cfg.repeats; r++) {
          const t = Date.now();
          await measure(page, canvas, box, r - cfg.warmups, nb.label);
          const what =
            r < cfg.warmups ? 'warm-up' : `repeat ${r - cfg.warmups + 1}`;
          log(
            `${nb.label}: ${what} in ${((Date.now() - t) / 1000).toFixed(1)} s`
          );
        }
      } catch (e) {
        diagnosis.push(...(await page.evaluate(panelWords).catch(() => [])));
        throw e;
      }
      await page.close();
    }
  } finally {
    await browser.close();
  }
})().catch(e => {
  log(`driver failed: ${e.stack || e}`);
  for (const line of diagnosis) {
    log(`  ${line}`);
  }
  process.exitCode = 1;
});
