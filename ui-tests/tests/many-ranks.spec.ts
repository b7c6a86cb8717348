/**
 * A many-rank MPI run in the panel: the synthetic archive of benchmarks/mpi_1024_ranks.py
 * (made at test time by ui-tests/fixtures/many_ranks.py, 256 ranks by default;
 * SCOREP_UI_MANY_RANKS sets another count, SCOREP_UI_MANY_RANKS_EXP copies a prebuilt
 * experiment instead, e.g. the 1,024-rank one, which takes minutes to make). The timeline
 * draws the ranks x time heat map while the ranks do not fit, one row per rank once the
 * vertical zoom makes them fit, scrolled through with only the rows in view drawn and
 * fetched; the Ranks tab draws the communication matrix on a canvas and
 * names the slowest ranks. The wheel over the plot scrolls ranks taller than it (ctrl-wheel
 * zooms time, shift-wheel pans it), and the title of the lane cut by the plot's top edge
 * sticks there. Screenshots of both, light and dark, are the test's attachments.
 */
import { expect, test } from '@jupyterlab/galata';
import * as path from 'path';

test.use({ mockUser: false, viewport: { width: 1280, height: 1400 } });

const FIXTURE = path.resolve(__dirname, '..', 'fixtures', 'many_ranks.py');
const RANKS = Number(process.env.SCOREP_UI_MANY_RANKS ?? 256);
const PREBUILT = process.env.SCOREP_UI_MANY_RANKS_EXP ?? '';

// the kernel's cwd is the server root: the experiment is made (or copied) there and shown
// as a profiled cell shows its run
const CODE = `import json, shutil, subprocess, sys
from pathlib import Path
from IPython.display import display
exp = Path('many-ranks-exp')
shutil.rmtree(exp, ignore_errors=True)
prebuilt = ${JSON.stringify(PREBUILT)}
if prebuilt:
    shutil.copytree(prebuilt, exp)
    m = json.loads((exp / 'manifest.json').read_text())
    bundle = {'id': m['id'], 'path': str(exp.resolve()), 'backend': m['backend'],
              'isolation': m['isolation'], 'status': m['status'], 'mpi': m['mpi']}
else:
    out = subprocess.run([sys.executable, ${JSON.stringify(FIXTURE)}, str(exp), '${RANKS}'],
                         check=True, capture_output=True, text=True).stdout
    bundle = json.loads(out.strip().splitlines()[-1])
display({'application/vnd.scorep.experiment+json': bundle, 'text/plain': 'many ranks'}, raw=True)`;

test('many ranks: the heat map, one row per rank, the matrix', async ({
  page
}, testInfo) => {
  test.setTimeout(600_000);
  await page.notebook.createNew('many-ranks.ipynb', {
    kernel: 'scorep-python'
  });
  await page.evaluate((src: string) => {
    const nb = (window as any).jupyterapp.shell.currentWidget;
    nb.content.widgets[0].model.sharedModel.setSource(src);
  }, CODE);
  await page.notebook.runCell(0);
  const panel = page.locator('.jp-scorep-panel').first();
  await expect(panel).toHaveAttribute('data-state', 'ready', {
    timeout: 540_000
  });
  const ranks = PREBUILT ? 1024 : RANKS;

  // the timeline: the ranks do not fit 360 px, so a heat map
  await panel.getByRole('tab', { name: 'Timeline' }).click();
  const timeline = panel.locator('.jp-scorep-timeline');
  await expect(timeline).toHaveAttribute('data-rank-mode', 'heatmap');
  const bar = panel.locator('.jp-scorep-heatbar');
  await expect(bar).toContainText(
    `${ranks.toLocaleString('en-US')} ranks as a heat map`
  );
  await expect(bar).toContainText('0 %');
  await expect(bar).toContainText('100 %');
  const canvas = panel.locator('.jp-scorep-timeline-canvas');
  // hover: the readout names ranks, times and shares
  const box = (await canvas.boundingBox())!;
  const tooltip = timeline.locator('.jp-scorep-tooltip');
  await expect(async () => {
    await page.mouse.move(box.x + box.width / 2, box.y + 22 + 100);
    await expect(tooltip).toBeVisible({ timeout: 1000 });
  }).toPass({ timeout: 30_000 });
  await expect(tooltip).toContainText(/Ranks \d+–\d+ \(\d+ ranks\)/);
  await expect(tooltip).toContainText(/in MPI: \d+ % of the time/);
  await expect(tooltip).toContainText(/busy \(in a call\): \d+ % of the time/);
  await page.mouse.move(0, 0);
  await panel.screenshot({ path: testInfo.outputPath('heatmap-light.png') });
  // the scale bar's low end is the map's empty background, in either theme
  const ramp = bar.locator('.jp-scorep-heatbar-ramp');
  await expect(ramp).toHaveCSS(
    'background-image',
    /^linear-gradient\(to right, rgb\(245, 245, 245\)/
  );
  await page.theme.setDarkTheme();
  await expect(ramp).toHaveCSS(
    'background-image',
    /^linear-gradient\(to right, rgb\(35, 35, 35\)/
  );
  await panel.screenshot({ path: testInfo.outputPath('heatmap-dark.png') });
  await page.theme.setLightTheme();
  await expect(ramp).toHaveCSS(
    'background-image',
    /^linear-gradient\(to right, rgb\(245, 245, 245\)/
  );
  // the other measure: busy (in a call); the slow ranks' longer cell shows at the bottom
  await bar.getByRole('button', { name: 'Busy' }).click();
  await expect(bar.getByRole('button', { name: 'Busy' })).toHaveAttribute(
    'aria-pressed',
    'true'
  );
  await panel.screenshot({ path: testInfo.outputPath('busy-light.png') });
  await bar.getByRole('button', { name: 'Time in MPI' }).click();

  // zoom the rows vertically until every rank has its own row: 1,024 ranks of 34 px are
  // 34,816 px, past Chromium's 32,767 px canvas, so the plot stays the scroller's height,
  // draws the rows in view and asks the server for those ranks only (ranks=lo:hi)
  const asked: string[] = [];
  page.on('request', r => {
    const url = new URL(r.url());
    if (url.pathname.endsWith('/scorep/api/timeline')) {
      asked.push(url.searchParams.get('ranks') ?? '');
    }
  });
  const taller = bar.getByRole('button', { name: 'Taller rows' });
  // on the way: a heat map 8 times the plot's height, scrolled to its middle
  for (let i = 0; i < 3; i++) {
    await taller.click();
  }
  await expect(timeline).toHaveAttribute('data-rank-mode', 'heatmap');
  await expect(bar).toContainText(/rows of up to [12] ranks/);
  await timeline
    .locator('.jp-scorep-timeline-scroller')
    .evaluate(e => (e.scrollTop = e.scrollHeight / 2 - e.clientHeight / 2));
  await panel.screenshot({ path: testInfo.outputPath('zoomed-light.png') });
  for (let i = 0; i < 12 && (await taller.isEnabled()); i++) {
    await taller.click();
  }
  await expect(timeline).toHaveAttribute('data-rank-mode', 'rows');
  await expect(bar).toContainText(
    `${ranks.toLocaleString('en-US')} ranks, one row per rank`
  );
  await expect(taller).toBeDisabled();
  const scroller = timeline.locator('.jp-scorep-timeline-scroller');
  const spansDrawn = async (): Promise<number> =>
    Number(await timeline.getAttribute('data-spans'));
  // the zoom kept the middle ranks in view: scroll to the top, then to the middle
  await scroller.evaluate(e => (e.scrollTop = 0));
  await expect(bar).toContainText(/ranks 0–\d+ in view/);
  await expect.poll(spansDrawn, { timeout: 60_000 }).toBeGreaterThan(0);
  const canvasBox = (await canvas.boundingBox())!;
  expect(canvasBox.height).toBeLessThan(400);
  expect(await scroller.evaluate(e => e.scrollHeight)).toBeGreaterThanOrEqual(
    ranks * 34
  );
  // the keyboard scrolls the ranks too: Page Down from the focused canvas
  await canvas.focus();
  await page.keyboard.press('PageDown');
  await expect(timeline).not.toHaveAttribute('data-ranks-in-view', /^0:/);
  // The scroll centred on the middle of the rows shows the middle rank: which rank is
  // first there depends on the lane's title and the plot's height (it settles by a pixel or
  // two as the panel lays out: 128 or 129 at the top of the view), so the range is read.
  await scroller.evaluate(
    e => (e.scrollTop = (e.scrollHeight - e.clientHeight) / 2)
  );
  const middle = Math.floor(ranks / 2);
  const inView = async (): Promise<number[]> =>
    ((await timeline.getAttribute('data-ranks-in-view')) ?? '0:0')
      .split(':')
      .map(Number);
  await expect
    .poll(async () => {
      const [lo, hi] = await inView();
      return lo > 0 && lo <= middle && middle < hi;
    })
    .toBe(true);
  // the bar says the same range as the node
  await expect
    .poll(
      async () =>
        (await bar.textContent())?.includes(`ranks ${(await inView())[0]}–`) ??
        false
    )
    .toBe(true);
  // the server was asked for the ranks about the middle, never for all of them
  await expect
    .poll(() =>
      asked.some(r => {
        const [lo, hi] = r.split(':').map(Number);
        return lo <= middle && middle < hi && hi - lo < 100;
      })
    )
    .toBe(true);
  await expect.poll(spansDrawn, { timeout: 60_000 }).toBeGreaterThan(0);
  // a row's calls: the hover names one (rows are 18 px of every 34: try down the plot)
  let probe = 0;
  await expect(async () => {
    const y = canvasBox.y + 22 + 4 + ((probe++ * 7) % 68);
    await page.mouse.move(canvasBox.x + canvasBox.width / 3, y);
    await expect(tooltip).toBeVisible({ timeout: 500 });
  }).toPass({ timeout: 30_000 });
  await expect(tooltip).toContainText(/cell \[1\]|__main__|MPI/);
  await page.mouse.move(0, 0);
  await panel.screenshot({ path: testInfo.outputPath('rows-light.png') });
  await page.theme.setDarkTheme();
  await expect.poll(spansDrawn).toBeGreaterThan(0);
  await panel.screenshot({ path: testInfo.outputPath('rows-dark.png') });
  await page.theme.setLightTheme();

  // the wheel over the plot scrolls ranks taller than it, and leaves time alone; ctrl-wheel
  // (a pinch) zooms time there and shift-wheel pans it, the ranks staying where they are
  const scrollTop = (): Promise<number> => scroller.evaluate(e => e.scrollTop);
  const shownWindow = async (): Promise<number[]> =>
    ((await timeline.getAttribute('data-window')) ?? '0,0')
      .split(',')
      .map(Number);
  await scroller.evaluate(e => (e.scrollTop = 0));
  await expect(timeline).toHaveAttribute('data-ranks-in-view', /^0:/);
  await expect.poll(spansDrawn, { timeout: 60_000 }).toBeGreaterThan(0);
  const fullWindow = await shownWindow();
  await page.mouse.move(
    canvasBox.x + canvasBox.width / 2,
    canvasBox.y + canvasBox.height / 2
  );
  // 340 px: ten lanes of 34 px, so rank 10 is the first whose row shows
  await page.mouse.wheel(0, 340);
  await expect.poll(scrollTop).toBe(340);
  await expect(timeline).toHaveAttribute('data-ranks-in-view', /^10:/);
  await expect(bar).toContainText(/ranks 10–\d+ in view/);
  await expect.poll(spansDrawn, { timeout: 60_000 }).toBeGreaterThan(0);
  expect(await shownWindow()).toEqual(fullWindow);
  await page.mouse.wheel(0, -102);
  await expect.poll(scrollTop).toBe(238);
  await expect(timeline).toHaveAttribute('data-ranks-in-view', /^7:/);
  await page.keyboard.down('Control');
  await page.mouse.wheel(0, -600);
  await page.keyboard.up('Control');
  await expect
    .poll(async () => {
      const [t0, t1] = await shownWindow();
      return t1 - t0 < (fullWindow[1] - fullWindow[0]) / 2;
    })
    .toBe(true);
  expect(await scrollTop()).toBe(238);
  const zoomed = await shownWindow();
  await page.keyboard.down('Shift');
  await page.mouse.wheel(0, 200);
  await page.keyboard.up('Shift');
  await expect
    .poll(async () => (await shownWindow())[0])
    .toBeGreaterThan(zoomed[0]);
  const panned = await shownWindow();
  expect(panned[1] - panned[0]).toBeCloseTo(zoomed[1] - zoomed[0], -3);
  expect(await scrollTop()).toBe(238);
  await page.mouse.move(0, 0);
  await canvas.dblclick({ position: { x: 5, y: 5 } });
  await expect.poll(shownWindow).toEqual(fullWindow);

  // a lane cut by the plot's top edge keeps its title, whole, at the plot's top
  await scroller.evaluate(e => (e.scrollTop = 20 * 34 + 8));
  await expect(timeline).toHaveAttribute('data-sticky-title', 'Rank 20');
  await expect(timeline).toHaveAttribute('data-sticky-title-top', '0');
  await expect(timeline).toHaveAttribute('data-ranks-in-view', /^20:/);
  await expect.poll(spansDrawn, { timeout: 60_000 }).toBeGreaterThan(0);
  const plotTop = {
    x: canvasBox.x,
    y: canvasBox.y,
    width: canvasBox.width,
    height: 22 + 4 * 34
  };
  await page.mouse.move(0, 0);
  await panel.screenshot({ path: testInfo.outputPath('sticky-light.png') });
  await page.screenshot({
    path: testInfo.outputPath('sticky-top-light.png'),
    clip: plotTop
  });
  await page.theme.setDarkTheme();
  await expect.poll(spansDrawn).toBeGreaterThan(0);
  await page.screenshot({
    path: testInfo.outputPath('sticky-top-dark.png'),
    clip: plotTop
  });
  await page.theme.setLightTheme();
  // its title gone above the plot, the row still shows: so does the title
  await scroller.evaluate(e => (e.scrollTop = 20 * 34 + 17));
  await expect(timeline).toHaveAttribute('data-sticky-title-top', '0');
  // 10 px of the row left: pushed up by rank 21's title, as CSS sticky does
  await scroller.evaluate(e => (e.scrollTop = 20 * 34 + 24));
  await expect(timeline).toHaveAttribute('data-sticky-title', 'Rank 20');
  await expect(timeline).toHaveAttribute('data-sticky-title-top', '-6');
  // on a lane's boundary every title is in its place
  await scroller.evaluate(e => (e.scrollTop = 21 * 34));
  await expect(timeline).toHaveAttribute('data-sticky-title', '');

  // scrolling to the last rank draws it
  await scroller.evaluate(e => (e.scrollTop = e.scrollHeight));
  await expect(bar).toContainText(`–${ranks - 1} in view`);
  await expect.poll(spansDrawn, { timeout: 60_000 }).toBeGreaterThan(0);
  // and back to the heat map
  await bar.getByRole('button', { name: 'Shorter rows' }).click();
  await expect(timeline).toHaveAttribute('data-rank-mode', 'heatmap');

  // the Ranks tab: the verdict and the matrix on a canvas
  await panel.getByRole('tab', { name: 'Ranks' }).click();
  const verdict = panel.locator('.jp-scorep-ranks-verdict');
  await expect(verdict).toContainText('Slowest ranks:');
  if (ranks > 1000) {
    await expect(verdict).toContainText('1000, 1001, 1002, 1003, 1004');
  }
  const matrix = panel.locator('.jp-scorep-matrix-canvas');
  await expect(matrix).toHaveAttribute(
    'data-block',
    String(Math.ceil(ranks / 512))
  );
  await expect(matrix).toContainText(
    `${ranks.toLocaleString('en-US')} pairs communicated`
  );
  const mbox = (await matrix.locator('canvas').boundingBox())!;
  // the ring: rank 0 sends to rank 1, just right of the diagonal's first cell
  const cellPx = 512 / Math.ceil(ranks / Math.ceil(ranks / 512));
  await page.mouse.move(mbox.x + 44 + cellPx * 1.5, mbox.y + 28 + cellPx * 0.5);
  const mtip = matrix.locator('.jp-scorep-tooltip');
  await expect(mtip).toBeVisible();
  await expect(mtip).toContainText(/ranks? 0(–\d+)? → ranks? \d+/);
  await expect(mtip).toContainText(/KiB in \d+ messages/);
  await page.mouse.move(0, 0);
  await panel.screenshot({ path: testInfo.outputPath('matrix-light.png') });
  await page.theme.setDarkTheme();
  await expect(
    matrix.or(panel.locator('.jp-scorep-matrix-canvas'))
  ).toBeVisible();
  await panel.screenshot({ path: testInfo.outputPath('matrix-dark.png') });
  await page.theme.setLightTheme();
});
