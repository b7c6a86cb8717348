/**
 * The Score-P frontend against the real kernel ("Python 3 (Score-P)") and server extension:
 * profile a cell and explore its panel (timeline, call tree, metrics, export, both themes).
 */
import { expect, galata, test } from '@jupyterlab/galata';
import { setSource, TOGGLE } from './notebookModel';
import * as fs from 'fs';

// Galata's user mock routes /.*\/api\/me.*/, which also swallows our /scorep/api/metrics:
// use the real /api/me instead.
test.use({ mockUser: false });

const CODE = `def f(n):
    total = 0
    for i in range(n):
        total += i * i
    return total

def g():
    return [f(700_000) for _ in range(3)]

result = g()
print("done", len(result))`;

/**
 * The colour of one pixel of a canvas, at a fraction of its width and a y in CSS pixels,
 * as [r, g, b].
 */
async function canvasPixel(
  canvas: any,
  at: { x: number; y: number }
): Promise<number[]> {
  return canvas.evaluate(
    (c: HTMLCanvasElement, p: { x: number; y: number }) => {
      const dpr = c.width / c.getBoundingClientRect().width;
      const d = c
        .getContext('2d')!
        .getImageData(
          Math.floor(c.width * p.x),
          Math.floor(p.y * dpr),
          1,
          1
        ).data;
      return [d[0], d[1], d[2]];
    },
    at
  );
}

/** A CSS colour as the browser paints it on a canvas, as [r, g, b]. */
async function cssColorPixel(page: any, color: string): Promise<number[]> {
  return page.evaluate((css: string) => {
    const c = document.createElement('canvas');
    c.width = c.height = 1;
    const ctx = c.getContext('2d')!;
    ctx.fillStyle = css;
    ctx.fillRect(0, 0, 1, 1);
    const d = ctx.getImageData(0, 0, 1, 1).data;
    return [d[0], d[1], d[2]];
  }, color);
}

test.describe('Score-P experiment panel', () => {
  test.use({ viewport: { width: 1280, height: 1100 } });

  test('profile a cell and explore the panel', async ({ page }, testInfo) => {
    await page.notebook.createNew('profiled.ipynb', {
      kernel: 'scorep-python'
    });
    await setSource(page, 0, CODE);
    await page.notebook.selectCells(0);
    await page.locator(TOGGLE).first().click();
    await expect(page.locator(TOGGLE).first()).toHaveAttribute(
      'aria-pressed',
      'true'
    );
    // this is the builtin tracer's panel: where Score-P is installed, "auto" would pick it
    // (a Score-P run's panel is scorep-real.spec.ts). Samples every 20 ms: the cell runs
    // 0.1-0.4 s, and a run with fewer than two samples shows one line instead of charts.
    await page.evaluate(() => {
      const nb = (window as any).jupyterapp.shell.currentWidget;
      const cell = nb.content.widgets[0].model;
      cell.setMetadata('scorep', {
        ...cell.getMetadata('scorep'),
        backend: 'builtin',
        metric_interval: 0.02
      });
    });

    const timelines: any[] = [];
    const metrics: any[] = [];
    page.on('response', async r => {
      if (r.url().includes('/scorep/api/metrics') && r.ok()) {
        metrics.push(await r.json());
      }
    });
    page.on('response', async r => {
      if (r.url().includes('/scorep/api/timeline') && r.ok()) {
        timelines.push(await r.json());
      }
    });
    await page.notebook.runCell(0);
    const panel = page.locator('.jp-scorep-panel').first();
    await expect(panel).toHaveAttribute('data-state', 'ready', {
      timeout: 90_000
    });
    await expect(panel.locator('.jp-scorep-fact-backend')).toContainText(
      'builtin'
    );
    await expect(panel.locator('.jp-scorep-fact-status')).toContainText('ok');
    // the Summary tab comes first; the timeline is one click away
    await expect(panel.getByRole('tab', { name: 'Summary' })).toHaveAttribute(
      'aria-selected',
      'true'
    );
    await panel.getByRole('tab', { name: 'Timeline' }).click();

    // the timeline holds the cell's functions
    await expect.poll(() => timelines.length).toBeGreaterThan(0);
    const timeline = timelines[timelines.length - 1];
    const names = timelines.flatMap(t =>
      Object.values(t.regions).map((r: any) => r.name)
    );
    expect(
      names.some(n => /(^|[:.])f$/.test(n)),
      JSON.stringify(timelines).slice(0, 3000)
    ).toBe(true);
    expect(names.some(n => /(^|[:.])g$/.test(n))).toBe(true);
    const canvas = panel.locator('.jp-scorep-timeline-canvas');
    await expect(canvas).toBeVisible();
    await expect(canvas).toHaveAttribute('aria-label', /regions: .*__main__:f/);
    await expect
      .poll(async () =>
        Number(
          await panel.locator('.jp-scorep-timeline').getAttribute('data-spans')
        )
      )
      .toBeGreaterThan(0);

    // metrics on the same axis: CPU and memory charts drawn
    await expect.poll(() => metrics.length).toBeGreaterThan(0);
    const groups = new Set(metrics[0].series.map((m: any) => m.group));
    expect(groups.has('cpu')).toBe(true);
    await expect(
      panel.locator('.jp-scorep-metric-row[data-group="cpu"]')
    ).toBeVisible();
    await expect(
      panel.locator('.jp-scorep-metric-row[data-group="memory"]')
    ).toBeVisible();

    // hovering a call of f (row depth 3 of the first lane) shows name, duration, and where
    // it is in the notebook: f is defined on line 1 of the cell
    const box0 = (await canvas.boundingBox())!;
    const rowY = 22 + 16 + 3 * 18 + 9; // axis + lane title + depth 3 + half a row
    await page.mouse.move(box0.x + box0.width * 0.6, box0.y + rowY);
    const tooltip = panel.locator('.jp-scorep-tooltip');
    await expect(tooltip).toBeVisible();
    await expect(tooltip).toContainText(/__main__:f/);
    await expect(tooltip).toContainText(/Duration \d/);
    await expect(tooltip).toContainText(/cell \[\d+\], line 1$/);
    await page.mouse.move(0, 0);

    // wheel zoom asks the server for a narrower window
    const box = (await canvas.boundingBox())!;
    const [t0, t1] = timeline.window;
    const zoomed = page.waitForRequest(r => {
      if (!r.url().includes('/scorep/api/timeline')) {
        return false;
      }
      const u = new URL(r.url());
      const a = Number(u.searchParams.get('t0'));
      const b = Number(u.searchParams.get('t1'));
      return b - a < (t1 - t0) * 0.8;
    });
    await page.mouse.move(box.x + box.width / 2, box.y + 40);
    for (let i = 0; i < 3; i++) {
      await page.mouse.wheel(0, -200);
    }
    const req = await zoomed;
    expect(Number(new URL(req.url()).searchParams.get('width'))).toBe(
      Math.round(box.width)
    );
    // keyboard: 0 shows everything, + zooms in (a new, narrower window is fetched),
    // ArrowRight pans
    await canvas.focus();
    await page.keyboard.press('0');
    const keyZoom = page.waitForRequest(r => {
      if (!r.url().includes('/scorep/api/timeline')) {
        return false;
      }
      const u = new URL(r.url());
      return (
        Number(u.searchParams.get('t1')) - Number(u.searchParams.get('t0')) <
        (t1 - t0) * 0.9
      );
    });
    await page.keyboard.press('+');
    await keyZoom;
    const before = await panel
      .locator('.jp-scorep-timeline')
      .getAttribute('data-window');
    await page.keyboard.press('ArrowRight');
    await expect
      .poll(() =>
        panel.locator('.jp-scorep-timeline').getAttribute('data-window')
      )
      .not.toBe(before);
    await page.keyboard.press('0');

    // shift-drag zooms to the selection; alt-drag measures the span between two points
    const selected = page.waitForRequest(r => {
      if (!r.url().includes('/scorep/api/timeline')) {
        return false;
      }
      const u = new URL(r.url());
      const span =
        Number(u.searchParams.get('t1')) - Number(u.searchParams.get('t0'));
      return span < (t1 - t0) * 0.45 && span > (t1 - t0) * 0.2;
    });
    await page.keyboard.down('Shift');
    await page.mouse.move(box.x + box.width * 0.3, box.y + 60);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.5, box.y + 60, { steps: 4 });
    await page.mouse.move(box.x + box.width * 0.6, box.y + 60, { steps: 4 });
    await page.mouse.up();
    await page.keyboard.up('Shift');
    await selected;
    await page.keyboard.down('Alt');
    await page.mouse.move(box.x + box.width * 0.2, box.y + 60);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width * 0.7, box.y + 60, { steps: 4 });
    await page.mouse.up();
    await page.keyboard.up('Alt');
    // the measured range names the functions in it (f runs through the whole run)
    await expect(panel.locator('.jp-scorep-timeline-status')).toContainText(
      /^Measured \d.*: .*__main__:f \d/
    );
    await canvas.focus();
    await page.keyboard.press('0');

    // the call tree: f called 3 times
    await panel.getByRole('tab', { name: 'Call tree' }).click();
    const fRow = panel
      .locator('.jp-scorep-calltree-table tbody tr')
      .filter({
        has: page.locator('.jp-scorep-calltree-name', { hasText: /(^|[:.])f$/ })
      })
      .first();
    await panel.getByRole('button', { name: 'Expand hottest path' }).click();
    await expect(fRow).toBeVisible();
    await expect(fRow.locator('td[data-col="visits"]')).toHaveText('3');
    await panel.locator('.jp-scorep-calltree-search').fill('g');
    await expect(panel.locator('tr.jp-scorep-match').first()).toBeVisible();
    await panel.screenshot({
      path: testInfo.outputPath('calltree-unmasked.png')
    });
    // rows are keyboard-navigable: Home row, ArrowDown moves focus, Enter selects
    await panel.locator('.jp-scorep-calltree-table tbody tr').first().focus();
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Enter');
    await expect(
      panel.locator('.jp-scorep-calltree-table tbody tr').nth(1)
    ).toHaveAttribute('aria-selected', 'true');
    // sorting by visits puts the column in descending order
    await panel.getByRole('button', { name: 'Visits' }).click();
    await expect(panel.locator('th[data-key="visits"]')).toHaveAttribute(
      'aria-sort',
      'descending'
    );
    // selecting the root clears the timeline highlight again
    await panel.locator('.jp-scorep-calltree-table tbody tr').first().click();

    // export: the OTF2 archive downloads as a non-empty zip
    await panel.getByRole('tab', { name: 'Export' }).click();
    const download = page.waitForEvent('download');
    await panel.locator('a.jp-scorep-download[data-what="otf2"]').click();
    const file = await (await download).path();
    const bytes = fs.readFileSync(file!);
    expect(bytes.length).toBeGreaterThan(100);
    expect(bytes.subarray(0, 2).toString()).toBe('PK');
    expect((await download).suggestedFilename()).toMatch(/\.zip$/);
    await panel.screenshot({
      path: testInfo.outputPath('export-unmasked.png')
    });
    // no vampir/cube on this machine: the buttons say so and stay disabled
    const vampir = panel.getByRole('button', { name: 'Open in Vampir' });
    await expect(vampir).toBeDisabled();
    await expect(vampir).toHaveAttribute(
      'title',
      /not found on the server's PATH/
    );

    // screenshots, light and dark
    await panel.getByRole('tab', { name: 'Timeline' }).click();
    await panel.scrollIntoViewIfNeeded();
    // The timeline canvas (span widths, ruler labels) and the metric charts (sampled curves)
    // depend on the run's timing and the machine's load: they are masked, and the comparison
    // of everything else is strict. The canvas's painting is checked by probing pixels: the
    // span of g (depth 1, one call across most of the run) is painted in __main__'s colour.
    const gSpan = { x: 0.5, y: 22 + 16 + 1 * 18 + 9 };
    await expect
      .poll(() => canvasPixel(canvas, gSpan))
      .toEqual(await cssColorPixel(page, 'rgb(124, 157, 224)'));
    // unmasked, for a look by eye (not compared)
    await panel.screenshot({ path: testInfo.outputPath('panel-unmasked.png') });
    const body = panel.locator('.jp-scorep-body');
    const mask = [
      panel.locator('.jp-scorep-timeline-canvas'),
      panel.locator('.jp-scorep-metric-canvas')
    ];
    await expect(body).toHaveScreenshot('panel-light.png', { mask });
    await page.theme.setDarkTheme();
    await canvas.focus();
    await page.keyboard.press('0');
    // repainted with the dark theme's lightness, same hue
    await expect
      .poll(() => canvasPixel(canvas, gSpan))
      .toEqual(await cssColorPixel(page, 'rgb(37, 77, 156)'));
    await expect(body).toHaveScreenshot('panel-dark.png', { mask });
    await panel.screenshot({
      path: testInfo.outputPath('panel-dark-unmasked.png')
    });
    const bg = await panel.evaluate(el => getComputedStyle(el).backgroundColor);
    expect(bg).not.toBe('rgb(255, 255, 255)');
    await page.theme.setLightTheme();

    // reopened from disk, the panel reloads from the experiment path in the output
    await page.notebook.save();
    await page.notebook.close();
    await page.notebook.open('profiled.ipynb');
    const reopened = page.locator('.jp-scorep-panel').first();
    await expect(reopened).toHaveAttribute('data-state', 'ready', {
      timeout: 30_000
    });
    await reopened.getByRole('tab', { name: 'Timeline' }).click();
    await expect
      .poll(async () =>
        Number(
          await reopened
            .locator('.jp-scorep-timeline')
            .getAttribute('data-spans')
        )
      )
      .toBeGreaterThan(0);
    void galata;
  });
});
