/**
 * A cell's runs over time, against the real kernel and server: run a cell, change a size
 * in its code, run it again. The new panel says it is slower than the previous run, the
 * Compare view lists the changed function with its visits, and zooming one of the two
 * timelines zooms the other. The Summary tab ranks the functions. Screenshots in light and
 * dark themes, compared strictly with what follows the run's timing masked.
 */
import { expect, test } from '@jupyterlab/galata';
import { setSource, TOGGLE } from './notebookModel';

// Galata's user mock routes /.*\/api\/me.*/, which also swallows /scorep/api/metrics.
test.use({ mockUser: false, viewport: { width: 1280, height: 1200 } });

/** The cell's code with `k` calls of step (each a 20,000-step loop). */
function code(k: number): string {
  return `def step(n):
    s = 0
    for i in range(n):
        s += i
    return s

def work(k):
    for _ in range(k):
        step(20_000)

work(${k})`;
}

/** The [t0, t1] window a timeline last drew, from its data-window attribute. */
async function windowOf(timeline: any): Promise<number[]> {
  const w = await timeline.getAttribute('data-window');
  return w ? w.split(',').map(Number) : [];
}

test('run, change a size, run again: the verdict, the comparison, two timelines as one', async ({
  page
}, testInfo) => {
  test.setTimeout(240_000);
  const comparisons: any[] = [];
  page.on('response', async r => {
    if (r.url().includes('/scorep/api/compare') && r.ok()) {
      comparisons.push(await r.json());
    }
  });
  await page.notebook.createNew('history.ipynb', { kernel: 'scorep-python' });
  await setSource(page, 0, code(60));
  // the builtin tracer, whether or not Score-P is installed: what a run records (and so
  // what the screenshots show) does not depend on the machine
  await page.evaluate(() => {
    const nb = (window as any).jupyterapp.shell.currentWidget;
    nb.content.widgets[0].model.setMetadata('scorep', {
      profile: true,
      backend: 'builtin'
    });
  });
  await page.notebook.selectCells(0);
  await expect(page.locator(TOGGLE).first()).toHaveAttribute(
    'aria-pressed',
    'true'
  );

  // the first run: no earlier run, so no verdict
  await page.notebook.runCell(0);
  let panel = page.locator('.jp-scorep-panel').first();
  await expect(panel).toHaveAttribute('data-state', 'ready', {
    timeout: 90_000
  });
  await expect(panel).toHaveAttribute('data-runs', '1');
  await expect(panel.locator('.jp-scorep-run-verdict')).toBeHidden();

  // the Summary tab, first and shown: step ranks first, with its 60 visits
  const summaryRows = panel.locator('.jp-scorep-summary-row');
  await expect(summaryRows.first()).toHaveAttribute(
    'data-name',
    '__main__:step'
  );
  await expect(summaryRows.first().locator('td[data-col="visits"]')).toHaveText(
    '60'
  );
  // selecting it opens its call paths in the call tree and highlights it in the timeline
  await summaryRows.first().click();
  await expect(summaryRows.first()).toHaveAttribute('aria-selected', 'true');
  await panel.getByRole('button', { name: '→ Call tree' }).click();
  await expect(
    panel.locator('.jp-scorep-calltree-table tr.jp-scorep-match')
  ).toHaveCount(1);
  await expect(
    panel.locator(
      '.jp-scorep-calltree-table tr.jp-scorep-match td[data-col="visits"]'
    )
  ).toHaveText('60');
  await panel.getByRole('tab', { name: 'Summary' }).click();
  await summaryRows.first().click(); // clears the selection again
  await expect(summaryRows.first()).toHaveAttribute('aria-selected', 'false');
  await page.mouse.move(0, 0); // no hover colour in the screenshots
  const summaryMask = [
    panel.locator('.jp-scorep-summary-time'),
    panel.locator('.jp-scorep-summary-table td[data-col="mean"]')
  ];
  await panel.screenshot({ path: testInfo.outputPath('summary-unmasked.png') });
  await expect(panel.locator('.jp-scorep-body')).toHaveScreenshot(
    'summary-light.png',
    { mask: summaryMask }
  );

  // change a size in the code and run again: five times the calls of step
  await setSource(page, 0, code(300));
  await page.notebook.runCell(0);
  panel = page.locator('.jp-scorep-panel').first();
  await expect(panel).toHaveAttribute('data-runs', '2', { timeout: 90_000 });
  await expect(panel).toHaveAttribute('data-state', 'ready');
  const verdict = panel.locator('.jp-scorep-run-verdict');
  await expect(verdict).toBeVisible({ timeout: 60_000 });
  await expect(verdict).toHaveAttribute('data-kind', 'slower');
  await expect(verdict).toContainText(/\d+ % slower than the previous run/);
  await expect(verdict).toContainText('`step`');
  await expect(verdict).toContainText('visits 60 → 300');

  // the Runs list: both runs, the source changed
  await panel.locator('.jp-scorep-runs-button').click();
  const list = panel.locator('.jp-scorep-runs-list');
  await expect(list).toBeVisible();
  await expect(list.locator('tbody tr')).toHaveCount(2);
  await expect(
    list.locator('tbody tr').nth(1).locator('td[data-col="source"]')
  ).toHaveText('changed');
  await expect(panel.locator('.jp-scorep-runs-disk')).toContainText(
    /Notebook's runs: .* on disk \(2\)/
  );
  await page.keyboard.press('Escape');
  await expect(list).toBeHidden();

  // the Compare view: step's visits 60 → 300, by default against the previous run
  await verdict.getByRole('button', { name: 'Compare' }).click();
  const compare = panel.locator('.jp-scorep-compare');
  await expect(compare).toHaveAttribute('data-state', 'ready', {
    timeout: 30_000
  });
  const step = compare.locator('tr[data-name="__main__:step"]');
  await expect(step.locator('td[data-col="visits_A"]')).toHaveText('60');
  await expect(step.locator('td[data-col="visits_B"]')).toHaveText('300');
  await expect(step.locator('td[data-col="visits_Δ"]')).toHaveText('+240');
  await expect(step.locator('td[data-col="excl_Δ"]')).toHaveClass(
    /jp-scorep-up/
  );
  // the changed function comes first (sorted by |Δ exclusive|)
  await expect(
    compare.locator('.jp-scorep-compare-page-functions tbody tr').first()
  ).toHaveAttribute('data-name', '__main__:step');
  const c = comparisons[comparisons.length - 1];
  expect(c.verdict.kind).toBe('slower');
  expect(c.same_source).toBe(false);

  // the call tree with a Δ column: the path to step opened, its visits 60 → 300
  await compare.getByRole('tab', { name: 'Call tree Δ' }).click();
  const stepPath = compare
    .locator('.jp-scorep-compare-tree tbody tr')
    .filter({ hasText: '__main__:step' });
  await expect(stepPath).toContainText('60 → 300');
  await page.mouse.move(0, 0);
  await panel.screenshot({
    path: testInfo.outputPath('compare-tree-unmasked.png')
  });

  // screenshots of the functions view, light and dark; times, the picker's labels and the
  // rows whose order follows timing noise are masked
  await compare.getByRole('tab', { name: 'Functions' }).click();
  const compareMask = [
    compare.locator('.jp-scorep-compare-select'),
    compare.locator('.jp-scorep-compare-verdict'),
    compare.locator('.jp-scorep-compare-facts'),
    compare.locator(
      '.jp-scorep-compare-page-functions tbody tr:not([data-name="__main__:step"])'
    ),
    step.locator('td[data-col^="excl_"]'),
    step.locator('td[data-col^="incl_"]')
  ];
  await page.mouse.move(0, 0);
  await panel.screenshot({ path: testInfo.outputPath('compare-unmasked.png') });
  await expect(compare).toHaveScreenshot('compare-light.png', {
    mask: compareMask
  });
  await page.theme.setDarkTheme();
  await expect(compare).toHaveScreenshot('compare-dark.png', {
    mask: compareMask
  });
  await panel.screenshot({
    path: testInfo.outputPath('compare-dark-unmasked.png')
  });
  await panel.getByRole('tab', { name: 'Summary' }).click();
  await expect(panel.locator('.jp-scorep-body')).toHaveScreenshot(
    'summary-dark.png',
    { mask: summaryMask }
  );
  await page.theme.setLightTheme();

  // both timelines on one axis: zooming A zooms B by as much
  await panel.getByRole('tab', { name: 'Compare' }).click();
  await compare.getByRole('tab', { name: 'Timelines' }).click();
  const ta = compare.locator('.jp-scorep-timeline[data-run="A"]');
  const tb = compare.locator('.jp-scorep-timeline[data-run="B"]');
  await expect.poll(() => windowOf(ta)).toHaveLength(2);
  await expect.poll(() => windowOf(tb)).toHaveLength(2);
  const [a0, a1] = await windowOf(ta);
  await page.mouse.move(0, 0);
  await panel.screenshot({
    path: testInfo.outputPath('compare-timelines-initial-unmasked.png')
  });
  const canvasA = ta.locator('.jp-scorep-timeline-canvas');
  const box = (await canvasA.boundingBox())!;
  // zoom in around the first fifth (where both runs have calls)
  await page.mouse.move(box.x + box.width / 5, box.y + 40);
  for (let i = 0; i < 3; i++) {
    await page.mouse.wheel(0, -200);
  }
  // A fetched a narrower window, and B followed with the same span
  await expect
    .poll(async () => {
      const [x0, x1] = await windowOf(ta);
      return x1 - x0 < (a1 - a0) * 0.8;
    })
    .toBe(true);
  // ... and on the shared axis both windows start at the same time after their cells'
  // start. Polled together: each timeline draws every answer as it comes (one request in
  // flight), so until both have their last answer one may show an earlier zoom step.
  const offA = c.a.cell_span ? c.a.cell_span[0] : 0;
  const offB = c.b.cell_span ? c.b.cell_span[0] : 0;
  await expect
    .poll(async () => {
      const [x0, x1] = await windowOf(ta);
      const [y0, y1] = await windowOf(tb);
      return [
        Math.abs(y1 - y0 - (x1 - x0)) <= 2,
        Math.abs(y0 - offB - (x0 - offA)) <= 2
      ];
    })
    .toEqual([true, true]);
  // and the metric charts are overlaid below them
  await expect(
    compare.locator(
      '.jp-scorep-compare-metrics .jp-scorep-metric-row[data-group="cpu"]'
    )
  ).toBeVisible();
  await panel.screenshot({
    path: testInfo.outputPath('compare-timelines-unmasked.png')
  });

  // an earlier run opens in place, and the way back returns to the cell's output
  await panel.locator('.jp-scorep-runs-button').click();
  await list
    .locator('tbody tr')
    .nth(1)
    .getByRole('button', { name: 'Open' })
    .click();
  const earlier = page.locator('.jp-scorep-panel').first();
  await expect(earlier).toHaveClass(/jp-scorep-panel-earlier/);
  await expect(earlier).toHaveAttribute('data-state', 'ready');
  await expect(
    earlier
      .locator('.jp-scorep-summary-row')
      .first()
      .locator('td[data-col="visits"]')
  ).toHaveText('60');
  await earlier
    .getByRole('button', { name: "Back to this cell's output" })
    .click();
  await expect(page.locator('.jp-scorep-panel').first()).not.toHaveClass(
    /jp-scorep-panel-earlier/
  );
});
