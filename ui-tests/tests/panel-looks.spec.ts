/**
 * The panel read at a glance, in the light and the dark theme, against the real kernel and
 * server: a selected row stays readable, the metric charts have an axis, a hover readout,
 * start at the cell's start and stay drawn when zoomed, memory shows its growth, a short
 * cell says it had too few samples instead of drawing empty charts, and the Runs list
 * closes on Escape and on a click outside. Screenshots are written for a look by eye.
 */
import { expect, test } from '@jupyterlab/galata';
import { setSource } from './notebookModel';

// Galata's user mock routes /.*\/api\/me.*/, which also swallows /scorep/api/metrics.
test.use({ mockUser: false, viewport: { width: 1280, height: 1100 } });

const CODE = `import time

def grow(n):
    held = []
    for _ in range(n):
        held.append(b"x" * (40 * 1024 * 1024))
        time.sleep(0.06)
    return held

def squares(n):
    return [i * i for i in range(n)]

def cubes(n):
    return [i * i * i for i in range(n)]

held = grow(8)
s = squares(300_000)
c = cubes(300_000)
print(len(held), len(s), len(c))`;

/** A profiled cell under the builtin tracer, whether or not Score-P is installed. */
const BUILTIN = { profile: true, backend: 'builtin' };

/** The contrast ratio (WCAG) of an element's text on its background, as painted. */
async function contrast(locator: any, text = 'td'): Promise<number> {
  return locator.evaluate((node: HTMLElement, sel: string) => {
    const paint = (css: string) => {
      const c = document.createElement('canvas');
      c.width = c.height = 1;
      const ctx = c.getContext('2d')!;
      ctx.fillStyle = css;
      ctx.fillRect(0, 0, 1, 1);
      return Array.from(ctx.getImageData(0, 0, 1, 1).data.slice(0, 3));
    };
    const cellNode = node.querySelector(sel) ?? node;
    const fg = paint(getComputedStyle(cellNode).color);
    const bg = paint(getComputedStyle(node).backgroundColor);
    const lum = (rgb: number[]) => {
      const [r, g, b] = rgb.map(v => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : Math.pow((s + 0.055) / 1.055, 2.4);
      });
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const [l1, l2] = [lum(fg), lum(bg)].sort((a, b) => b - a);
    return (l1 + 0.05) / (l2 + 0.05);
  }, text);
}

/** Parse a readout's "RSS (process tree) 512 MiB" into MiB. */
function mib(text: string): number {
  const m = /RSS[^0-9]*([0-9.]+) (KiB|MiB|GiB)/.exec(text);
  if (!m) {
    return NaN;
  }
  return Number(m[1]) * { KiB: 1 / 1024, MiB: 1, GiB: 1024 }[m[2] as 'MiB'];
}

test('selected rows, metric charts and the Runs list, light and dark', async ({
  page
}, testInfo) => {
  test.setTimeout(240_000);
  await page.notebook.createNew('looks.ipynb', { kernel: 'scorep-python' });
  await setSource(page, 0, CODE, BUILTIN);
  await page.notebook.runCell(0);
  const panel = page.locator('.jp-scorep-panel').first();
  await expect(panel).toHaveAttribute('data-state', 'ready', {
    timeout: 90_000
  });
  const shot = async (name: string) => {
    await page.mouse.move(0, 0);
    await panel.screenshot({ path: testInfo.outputPath(`${name}.png`) });
  };

  // a selected row reads as well as the others in both themes
  const summaryRow = panel.locator('.jp-scorep-summary-row').first();
  await summaryRow.click();
  await expect(summaryRow).toHaveAttribute('aria-selected', 'true');
  await panel.getByRole('tab', { name: 'Call tree', exact: true }).click();
  const treeRow = panel.locator('.jp-scorep-calltree-table tbody tr').nth(1);
  await treeRow.click();
  await expect(treeRow).toHaveAttribute('aria-selected', 'true');
  for (const theme of ['light', 'dark']) {
    if (theme === 'dark') {
      await page.theme.setDarkTheme();
    }
    await panel.getByRole('tab', { name: 'Summary' }).click();
    await page.mouse.move(0, 0);
    await shot(`summary-selected-${theme}`);
    expect(await contrast(summaryRow)).toBeGreaterThan(4.5);
    await panel.getByRole('tab', { name: 'Call tree', exact: true }).click();
    await page.mouse.move(0, 0);
    await shot(`calltree-selected-${theme}`);
    expect(await contrast(treeRow, '.jp-scorep-calltree-name')).toBeGreaterThan(
      4.5
    );
    // the Runs list: its current row readable; Escape and a click outside close it
    const list = panel.locator('.jp-scorep-runs-list');
    await panel.locator('.jp-scorep-runs-button').click();
    await expect(list).toBeVisible();
    expect(
      await contrast(list.locator('tr.jp-scorep-runs-current'))
    ).toBeGreaterThan(4.5);
    await shot(`runs-${theme}`);
    await page.keyboard.press('Escape');
    await expect(list).toBeHidden();
    await panel.locator('.jp-scorep-runs-button').click();
    await expect(list).toBeVisible();
    await page
      .locator('.jp-scorep-facts')
      .first()
      .click({ position: { x: 2, y: 2 } });
    await expect(list).toBeHidden();
  }
  await page.theme.setLightTheme();

  // the call tree turned around, and as a flame graph
  await panel.getByRole('tab', { name: 'Call tree', exact: true }).click();
  await panel.getByRole('button', { name: 'Bottom-up' }).click();
  const bottomUp = panel.locator('.jp-scorep-bottomup-table tbody tr');
  await expect(bottomUp.first()).toHaveAttribute('data-name', '__main__:grow');
  await bottomUp.first().click(); // its callers: the cell
  await expect(bottomUp.nth(1)).toHaveAttribute('data-name', /^cell \[/);
  await shot('bottom-up-light');
  await panel.getByRole('button', { name: 'Flame graph' }).click();
  const flame = panel.locator('.jp-scorep-flame-canvas');
  await expect(flame).toBeVisible();
  const fbox = (await flame.boundingBox())!;
  await page.mouse.move(fbox.x + 20, fbox.y + 18 + 9);
  await expect(panel.locator('.jp-scorep-flame-info')).toContainText(
    '__main__:grow'
  );
  await panel.screenshot({ path: testInfo.outputPath('flame-light.png') });
  await page.theme.setDarkTheme();
  await panel.screenshot({ path: testInfo.outputPath('flame-dark.png') });
  await page.theme.setLightTheme();
  await panel.getByRole('button', { name: 'Top-down' }).click();

  // the timeline: search by name, and a measured range names its functions
  await panel.getByRole('tab', { name: 'Timeline' }).click();
  await panel.locator('.jp-scorep-timeline-search').fill('listcomp');
  await expect(panel.locator('.jp-scorep-timeline-found')).toHaveText(
    '2 regions in view match' // the two list comprehensions: two regions (two lines)
  );
  const tl = panel.locator('.jp-scorep-timeline-canvas');
  const tlb = (await tl.boundingBox())!;
  await page.keyboard.down('Alt');
  await page.mouse.move(tlb.x + tlb.width * 0.1, tlb.y + 40);
  await page.mouse.down();
  await page.mouse.move(tlb.x + tlb.width * 0.5, tlb.y + 40, { steps: 5 });
  await page.mouse.up();
  await page.keyboard.up('Alt');
  await expect(panel.locator('.jp-scorep-timeline-status')).toContainText(
    /^Measured .*: .*__main__:grow \d/
  );
  await panel.screenshot({
    path: testInfo.outputPath('timeline-search-light.png')
  });
  await page.theme.setDarkTheme();
  await panel.screenshot({
    path: testInfo.outputPath('timeline-search-dark.png')
  });
  await page.theme.setLightTheme();
  await panel.locator('.jp-scorep-timeline-search').fill('');

  // the metric charts: memory on a chart of its own, the growth readable on hover
  await panel.getByRole('tab', { name: 'Timeline' }).click();
  const memory = panel.locator('.jp-scorep-metric-row[data-group="memory"]');
  await expect(memory).toBeVisible();
  const readout = panel.locator('.jp-scorep-metric-readout');
  const chart = memory.locator('canvas');
  const readAt = async (fraction: number): Promise<string> => {
    await chart.scrollIntoViewIfNeeded();
    const box = (await chart.boundingBox())!;
    await page.mouse.move(box.x + box.width * fraction, box.y + box.height / 2);
    await expect(readout).toBeVisible();
    return (await readout.textContent()) ?? '';
  };
  // the first sample's value stands from the cell's start (the trace begins a few ms
  // before the cell)
  expect(await readAt(0.04)).toMatch(
    /RSS \(process tree\) [0-9.]+ (KiB|MiB|GiB)/
  );
  const first = mib(await readAt(0.04));
  // 8 × 40 MiB held once grow returned (the last sample may end before the trace does)
  const later = [];
  for (const at of [0.7, 0.8, 0.9]) {
    later.push(mib(await readAt(at)));
  }
  expect(Math.max(...later.filter(Number.isFinite)) - first).toBeGreaterThan(
    200
  );
  await readAt(0.6);
  await panel.screenshot({
    path: testInfo.outputPath('metrics-hover-light.png')
  });
  await page.theme.setDarkTheme();
  await readAt(0.6);
  await panel.screenshot({
    path: testInfo.outputPath('metrics-hover-dark.png')
  });
  await page.theme.setLightTheme();

  // zoomed into the first tenth (narrower than two sampling intervals), the charts still
  // show the values there
  const timeline = panel.locator('.jp-scorep-timeline-canvas');
  const tbox = (await timeline.boundingBox())!;
  await page.mouse.move(tbox.x + tbox.width * 0.05, tbox.y + 30);
  for (let i = 0; i < 6; i++) {
    await page.mouse.wheel(0, -300);
  }
  await expect
    .poll(async () => {
      const w = await panel
        .locator('.jp-scorep-timeline')
        .getAttribute('data-window');
      const [t0, t1] = (w ?? '0,0').split(',').map(Number);
      return t1 - t0 < 200e6;
    })
    .toBe(true);
  expect(await readAt(0.5)).toMatch(
    /RSS \(process tree\) [0-9.]+ (KiB|MiB|GiB)/
  );
  await panel.screenshot({
    path: testInfo.outputPath('metrics-zoomed-light.png')
  });

  // a short cell: one line instead of empty charts
  await page.notebook.addCell('code', '');
  await setSource(page, 1, 'x = sum(range(1000))', BUILTIN);
  await page.notebook.runCell(1);
  const short = page.locator('.jp-scorep-panel').nth(1);
  await expect(short).toHaveAttribute('data-state', 'ready', {
    timeout: 90_000
  });
  await short.getByRole('tab', { name: 'Timeline' }).click();
  await expect(short.locator('.jp-scorep-metrics-notes')).toHaveText(
    /Metrics: (no samples|one sample) in \d+ ms/
  );
  await expect(short.locator('.jp-scorep-metric-row:visible')).toHaveCount(0);
  await short.screenshot({ path: testInfo.outputPath('short-cell-light.png') });
  await page.theme.setDarkTheme();
  await short.screenshot({ path: testInfo.outputPath('short-cell-dark.png') });
  await page.theme.setLightTheme();
});

// a cell that calls into many modules (issue 21 saw 17 in near-equal purples) and has two
// list comprehensions (they merged into one row)
const MODULES_CODE = `import base64, copy, difflib, fractions, html
import ipaddress, json, shlex, statistics, string, textwrap, urllib.parse

def squares(n):
    return [i * i for i in range(n)]

def cubes(n):
    return [i * i * i for i in range(n)]

for _ in range(30):
    base64.b64encode(b"abc" * 50); copy.deepcopy({"a": [1, 2, {"b": 3}]})
    difflib.SequenceMatcher(None, "kitten", "sitting").ratio()
    fractions.Fraction(3, 7) + fractions.Fraction(1, 3)
    html.escape("<a & b>"); ipaddress.ip_network("10.0.0.0/24")
    json.dumps({"x": [1, 2, 3]}, indent=1); shlex.split("a 'b c' d")
    statistics.mean([1, 2, 3, 4]); string.Template("$x").substitute(x=1)
    textwrap.wrap("word " * 40, 30); urllib.parse.urlparse("https://example.org/a?b=c")
a = squares(200_000)
b = cubes(400_000)`;

test('many modules in distinct colours, two list comprehensions apart', async ({
  page
}, testInfo) => {
  test.setTimeout(180_000);
  await page.notebook.createNew('modules.ipynb', { kernel: 'scorep-python' });
  await setSource(page, 0, MODULES_CODE, BUILTIN);
  await page.notebook.runCell(0);
  const panel = page.locator('.jp-scorep-panel').first();
  await expect(panel).toHaveAttribute('data-state', 'ready', {
    timeout: 90_000
  });
  await panel.getByRole('tab', { name: 'Summary', exact: true }).click();
  // two rows, each named by its cell and line
  for (const line of [5, 8]) {
    await expect(
      panel.locator(
        `.jp-scorep-summary-row[data-name^="__main__:<listcomp> cell ["][data-name$="]:${line}"]`
      )
    ).toHaveCount(1);
  }
  // every module in a colour of its own, in both themes: the timeline's legend has one
  // swatch per group; the Summary colours a function by its group too
  const legend = panel.locator(
    '.jp-scorep-legend-item .jp-scorep-legend-swatch'
  );
  const colourOf = (nodes: Element[]) =>
    nodes.map(n => getComputedStyle(n).backgroundColor);
  for (const theme of ['light', 'dark']) {
    if (theme === 'dark') {
      await page.theme.setDarkTheme();
    }
    await panel.getByRole('tab', { name: 'Timeline' }).click();
    // the timeline's first window has arrived
    await expect.poll(() => legend.count()).toBeGreaterThanOrEqual(10);
    const colours = await legend.evaluateAll(colourOf);
    // a palette of 20: as many colours as groups, up to 20
    expect(new Set(colours).size).toBe(Math.min(colours.length, 20));
    const legendOf = new Map(
      await panel
        .locator('.jp-scorep-legend-item')
        .evaluateAll(items =>
          items.map(
            i =>
              [
                i.textContent?.trim() ?? '',
                getComputedStyle(i.querySelector('.jp-scorep-legend-swatch')!)
                  .backgroundColor
              ] as [string, string]
          )
        )
    );
    await panel.getByRole('tab', { name: 'Summary', exact: true }).click();
    const main = panel.locator('.jp-scorep-summary-module', {
      hasText: '__main__'
    });
    expect(
      await main
        .locator('.jp-scorep-legend-swatch')
        .evaluate(n => getComputedStyle(n).backgroundColor)
    ).toBe(legendOf.get('__main__'));
    await page.mouse.move(0, 0);
    await panel.screenshot({
      path: testInfo.outputPath(`modules-summary-${theme}.png`)
    });
    await panel.getByRole('tab', { name: 'Call tree', exact: true }).click();
    await panel.getByRole('button', { name: 'Flame graph' }).click();
    await expect(panel.locator('.jp-scorep-flame-canvas')).toBeVisible();
    await panel.screenshot({
      path: testInfo.outputPath(`modules-flame-${theme}.png`)
    });
    await panel.getByRole('button', { name: 'Bottom-up' }).click();
    await panel.screenshot({
      path: testInfo.outputPath(`modules-bottomup-${theme}.png`)
    });
    await panel.getByRole('button', { name: 'Top-down' }).click();
    await panel.getByRole('tab', { name: 'Timeline' }).click();
    await panel.screenshot({
      path: testInfo.outputPath(`modules-timeline-${theme}.png`)
    });
    await panel.getByRole('tab', { name: 'Summary', exact: true }).click();
  }
  await page.theme.setLightTheme();
});

const DOCS_CODE = `import threading, time
import numpy as np
def step(a):
    return np.sqrt(a) + 1
def f(n):
    a = np.ones(n)
    for _ in range(200):
        a = step(a)
    return a
def io():
    for _ in range(5):
        time.sleep(0.05)
def g():
    t = threading.Thread(target=io, name="io"); t.start()
    r = [f(200_000) for _ in range(3)]
    t.join()
    return r
result = g()
print("done")`;

test.describe('README', () => {
  test.use({ viewport: { width: 1280, height: 2000 } });
  test('the README screenshots: a cell with its panel, every tab named', async ({
    page
  }, testInfo) => {
    test.setTimeout(180_000);
    await page.notebook.createNew('docs.ipynb', { kernel: 'scorep-python' });
    await setSource(page, 0, DOCS_CODE, BUILTIN);
    await page.notebook.runCell(0);
    const panel = page.locator('.jp-scorep-panel').first();
    await expect(panel).toHaveAttribute('data-state', 'ready', {
      timeout: 90_000
    });
    // every tab of a builtin run (a Score-P run adds its own)
    await expect(panel.getByRole('tab')).toHaveText([
      'Summary',
      'Timeline',
      'Call tree',
      'Compare',
      'Export'
    ]);
    const cell = page.locator('.jp-Notebook .jp-Cell').first();
    await panel.getByRole('tab', { name: 'Timeline' }).click();
    await expect(
      panel.locator('.jp-scorep-metric-row[data-group="cpu"]')
    ).toBeVisible();
    await page.waitForTimeout(1000); // the metric windows' answers drawn
    await page.mouse.move(0, 0);
    await cell.screenshot({ path: testInfo.outputPath('panel-timeline.png') });
    await panel.getByRole('tab', { name: 'Call tree', exact: true }).click();
    await page.mouse.move(0, 0);
    await panel.screenshot({ path: testInfo.outputPath('panel-calltree.png') });
  });
});
