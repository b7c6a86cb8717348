/**
 * A large trace (about 1M events) through the whole stack: the panel loads, every timeline
 * window stays under the API's ~1 MB bound, and interaction keeps drawing. Frame costs and
 * fetch latencies are reported as annotations (figures, not asserts: the machine is shared).
 */
import { expect, test } from '@jupyterlab/galata';
import { setSource } from './notebookModel';

test.use({ mockUser: false, viewport: { width: 1400, height: 1000 } });

const CODE = `def tiny(i):
    return i

def loop(n):
    for i in range(n):
        tiny(i)

loop(500_000)`;

test('a 1M-event trace stays interactive', async ({ page }, testInfo) => {
  test.setTimeout(300_000);
  await page.notebook.createNew('large.ipynb', { kernel: 'scorep-python' });
  await setSource(page, 0, CODE, { profile: true });
  const sizes: number[] = [];
  const latencies: number[] = [];
  const started = new Map<string, number>();
  page.on('request', r => {
    if (r.url().includes('/scorep/api/timeline')) {
      started.set(r.url(), Date.now());
    }
  });
  page.on('response', async r => {
    if (r.url().includes('/scorep/api/timeline') && r.ok()) {
      const body = await r.body();
      sizes.push(body.length);
      const t0 = started.get(r.url());
      if (t0) {
        latencies.push(Date.now() - t0);
      }
    }
  });
  const t0 = Date.now();
  await page.notebook.runCell(0);
  const panel = page.locator('.jp-scorep-panel').first();
  await expect(panel).toHaveAttribute('data-state', 'ready', {
    timeout: 240_000
  });
  await panel.getByRole('tab', { name: 'Timeline' }).click();
  const events = await panel.locator('.jp-scorep-fact-events b').textContent();
  const timeline = panel.locator('.jp-scorep-timeline');
  await expect
    .poll(async () => Number(await timeline.getAttribute('data-spans')), {
      timeout: 60_000
    })
    .toBeGreaterThan(0);
  const readyS = (Date.now() - t0) / 1000;

  const canvas = panel.locator('.jp-scorep-timeline-canvas');
  const box = (await canvas.boundingBox())!;
  const drawMs: number[] = [];
  await page.mouse.move(box.x + box.width * 0.3, box.y + 60);
  // zoom in step by step (every third step waits for the answer, so zoom levels are
  // fetched along the way), down to single calls, then out again
  for (let i = 0; i < 24; i++) {
    await page.mouse.wheel(0, i < 18 ? -300 : 300);
    await page.waitForTimeout(i % 3 === 2 ? 250 : 40);
    drawMs.push(Number(await timeline.getAttribute('data-draw-ms')));
  }
  await page.mouse.down();
  for (let i = 0; i < 10; i++) {
    await page.mouse.move(box.x + box.width * 0.3 - i * 30, box.y + 60);
    drawMs.push(Number(await timeline.getAttribute('data-draw-ms')));
  }
  await page.mouse.up();
  await page.waitForTimeout(1500);

  expect(sizes.length).toBeGreaterThan(1);
  // the API's bound on one window (docs/API.md: "under ~1 MB at any zoom")
  expect(Math.max(...sizes)).toBeLessThan(1.2e6);
  const sorted = [...drawMs].sort((a, b) => a - b);
  const figures = {
    events,
    run_to_first_draw_s: readyS.toFixed(1),
    timeline_requests: sizes.length,
    max_response_kb: (Math.max(...sizes) / 1024).toFixed(0),
    median_fetch_ms: [...latencies].sort((a, b) => a - b)[
      Math.floor(latencies.length / 2)
    ],
    median_draw_ms: sorted[Math.floor(sorted.length / 2)],
    max_draw_ms: sorted[sorted.length - 1]
  };
  console.log('LARGE-TRACE', JSON.stringify(figures));
  testInfo.annotations.push({
    type: 'figures',
    description: JSON.stringify(figures)
  });
  await panel.screenshot({ path: testInfo.outputPath('large-trace.png') });
});
