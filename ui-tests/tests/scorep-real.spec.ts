/**
 * A cell measured by real Score-P (the kernel's scorep backend: `python -m scorep`), in the
 * panel: what measured it and how, the cell's functions in the timeline and the call tree,
 * and the Score-P tab (scorep-score's estimate, its suggested filter applied to the cell).
 * Skipped, saying why, when the server finds no Score-P (GET version).
 */
import { expect, test } from '@jupyterlab/galata';
import { cellMetadata, setSource } from './notebookModel';
import * as path from 'path';

// Galata's user mock routes /.*\/api\/me.*/, which also swallows /scorep/api/metrics.
test.use({ mockUser: false, viewport: { width: 1280, height: 1100 } });

// Deterministic calls: 20,000 visits of a function too small to measure (Score-P's
// heuristics filter it) under one that is not; no expression at the end (its display
// would be measured too).
const CODE = `def tiny(x):
    return x

def work(n):
    total = 0
    for i in range(n):
        total += tiny(i)
    return total

total = work(20000)`;

test.describe('A cell measured by Score-P', () => {
  test('the panel of a Score-P run, and its suggested filter applied', async ({
    page
  }, testInfo) => {
    const version = await page.evaluate(async () => {
      const settings = (window as any).jupyterapp.serviceManager.serverSettings;
      const r = await fetch(`${settings.baseUrl}scorep/api/version`);
      return r.json();
    });
    test.skip(
      !version.scorep.available || !version.scorep.scorep_score,
      `the server finds no Score-P: ${version.scorep.message} (scorep-score: ${version.scorep.scorep_score})`
    );

    await page.notebook.createNew('scorep-run.ipynb', {
      kernel: 'scorep-python'
    });
    await setSource(page, 0, CODE);
    // the cell's own keys: profile it, and with Score-P (auto would pick it too)
    await page.evaluate(() => {
      const nb = (window as any).jupyterapp.shell.currentWidget;
      nb.content.widgets[0].model.setMetadata('scorep', {
        profile: true,
        backend: 'scorep'
      });
    });
    const timelines: any[] = [];
    page.on('response', async r => {
      if (r.url().includes('/scorep/api/timeline') && r.ok()) {
        timelines.push(await r.json());
      }
    });
    await page.notebook.runCell(0);
    const panel = page.locator('.jp-scorep-panel').first();
    await expect(panel).toHaveAttribute('data-state', 'ready', {
      timeout: 120_000
    });

    // what measured it, and how
    await expect(panel.locator('.jp-scorep-fact-backend b')).toHaveText(
      /^Score-P \d+\.\d+/
    );
    const config = panel.locator('.jp-scorep-config-summary');
    await expect(config).toContainText('tracing on');
    await expect(config).toContainText('memory 256M');
    await expect(config).toContainText('no filter');

    // the timeline: the cell as "cell [1]" with the cell role, and its functions
    await panel.getByRole('tab', { name: 'Timeline' }).click();
    await expect.poll(() => timelines.length).toBeGreaterThan(0);
    const regions = timelines.flatMap(t => Object.values(t.regions)) as any[];
    const byName = new Map(regions.map(r => [r.name, r]));
    expect([...byName.keys()]).toEqual(
      expect.arrayContaining(['cell [1]', '__main__:work', '__main__:tiny'])
    );
    expect(byName.get('cell [1]').role).toBe('cell');
    await expect(panel.locator('.jp-scorep-timeline-canvas')).toHaveAttribute(
      'aria-label',
      /__main__:work/
    );
    await expect
      .poll(async () =>
        Number(
          await panel.locator('.jp-scorep-timeline').getAttribute('data-spans')
        )
      )
      .toBeGreaterThan(0);
    // for a look by eye (spans follow the run's timing: not compared)
    await panel.screenshot({
      path: testInfo.outputPath('scorep-timeline-unmasked.png')
    });

    // the call tree: tiny with its 20,000 visits, from Score-P's own profile
    await panel.getByRole('tab', { name: 'Call tree' }).click();
    await panel.getByRole('button', { name: 'Expand hottest path' }).click();
    const tinyRow = panel
      .locator('.jp-scorep-calltree-table tbody tr')
      .filter({
        has: page.locator('.jp-scorep-calltree-name', {
          hasText: /__main__:tiny$/
        })
      })
      .first();
    await expect(tinyRow).toBeVisible();
    await expect(tinyRow.locator('td[data-col="visits"]')).toHaveText(
      /^20,?000$/
    );

    // the Score-P tab: scorep-score's estimate and its filter, which takes out tiny
    await panel.getByRole('tab', { name: 'Score-P' }).click();
    const tab = panel.locator('.jp-scorep-scorep');
    await expect(tab).toHaveAttribute('data-state', 'ready', {
      timeout: 60_000
    });
    await expect(tab.locator('td[data-key="trace"]')).toHaveText(
      /\d+ (B|kB|MB)/
    );
    await expect(tab.locator('td[data-key="total_memory"]')).toContainText(
      'this run had 256M'
    );
    const filtered = tab.locator('.jp-scorep-score-filtered');
    await expect(filtered).toContainText('__main__:tiny');
    await expect(
      filtered
        .locator('tr', { hasText: '__main__:tiny' })
        .locator('td[data-col="visits"]')
    ).toHaveText(/^20,?000$/);

    // the header's facts as text: what measured the run and how, and its events (tiny's
    // 20,000 visits enter and leave; Score-P may add a few of its own around them)
    const facts = panel.locator('.jp-scorep-facts');
    await expect(facts.locator('.jp-scorep-fact-backend b')).toHaveText(
      /^Score-P \d+\.\d+/
    );
    await expect(facts.locator('.jp-scorep-fact-isolation b')).toHaveText(
      'subprocess'
    );
    await expect(facts.locator('.jp-scorep-fact-status b')).toHaveText('ok');
    const events = Number(
      (await facts.locator('.jp-scorep-fact-events b').innerText()).replace(
        /,/g,
        ''
      )
    );
    expect(events).toBeGreaterThanOrEqual(40_000);
    expect(events).toBeLessThan(40_100);

    // screenshots, light and dark: the header's facts and the tab. Masked: what follows the
    // run's timing (wall time, times per region, the run's id in the applied file's name)
    // and the event count (checked above; Score-P's own records around the cell vary).
    const timed = [
      panel.locator('.jp-scorep-fact-wall b'),
      panel.locator('.jp-scorep-fact-events b'),
      tab.locator('td[data-col="time"]'),
      tab.locator('td[data-col="pct"]'),
      tab.locator('td[data-col="per_visit"]'),
      tab.locator('.jp-scorep-filter-status')
    ];
    // The wall time's text ("865 ms", "1.21 s") sets where the facts after it stand: give
    // it and the event count one width while the screenshots are taken (a mask alone keeps
    // the text's width).
    // (toHaveScreenshot takes a style sheet's path; its `style` would be ignored)
    const oneWidth = path.resolve(__dirname, 'styles', 'timed-facts.css');
    await panel.scrollIntoViewIfNeeded();
    await expect(facts).toHaveScreenshot('scorep-facts-light.png', {
      mask: timed,
      stylePath: oneWidth
    });
    await expect(tab).toHaveScreenshot('scorep-tab-light.png', { mask: timed });
    await page.theme.setDarkTheme();
    await expect(facts).toHaveScreenshot('scorep-facts-dark.png', {
      mask: timed,
      stylePath: oneWidth
    });
    await expect(tab).toHaveScreenshot('scorep-tab-dark.png', { mask: timed });
    await panel.screenshot({
      path: testInfo.outputPath('scorep-panel-dark-unmasked.png')
    });
    await page.theme.setLightTheme();

    // one click: the filter is written beside the experiments and the cell gets
    // filter_file (relative to the notebook), its other keys untouched
    await tab
      .getByRole('button', { name: "Apply to the cell's next run" })
      .click();
    await expect(tab.locator('.jp-scorep-filter-status')).toContainText(
      'scorep-filters/'
    );
    const meta = await cellMetadata(page, 0);
    expect(meta).toEqual({
      profile: true,
      backend: 'scorep',
      filter_file: expect.stringMatching(/^scorep-filters\/[\w-]+\.filter$/)
    });
    await panel.screenshot({
      path: testInfo.outputPath('scorep-panel-applied-unmasked.png')
    });
  });
});
