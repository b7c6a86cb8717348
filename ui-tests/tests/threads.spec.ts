/**
 * A profiled cell that starts threads, against the real kernel and server extension: each
 * thread gets its timeline lane and its own call tree.
 */
import { expect, test } from '@jupyterlab/galata';
import { setSource } from './notebookModel';

// Galata's user mock routes /.*\/api\/me.*/, which also swallows our /scorep/api/metrics:
// use the real /api/me instead.
test.use({ mockUser: false });

test.describe('Score-P threads', () => {
  test.use({ viewport: { width: 1280, height: 1000 } });

  test('each thread gets a lane and its own call tree', async ({ page }) => {
    const code = [
      'import threading, json',
      'def work(n):',
      '    return sum(len(json.dumps({"i": i})) for i in range(n))',
      'threads = [threading.Thread(target=work, args=(5000,)) for _ in range(2)]',
      'for t in threads: t.start()',
      'work(2000)',
      'for t in threads: t.join()'
    ].join('\n');
    await page.notebook.createNew('threads.ipynb', { kernel: 'scorep-python' });
    await setSource(page, 0, code);
    await page.evaluate(() => {
      const nb = (window as any).jupyterapp.shell.currentWidget;
      nb.content.widgets[0].model.setMetadata('scorep', { profile: true });
    });
    const timeline = page.waitForResponse(
      r => r.url().includes('/scorep/api/timeline') && r.ok()
    );
    await page.notebook.runCell(0);
    const panel = page.locator('.jp-scorep-panel').first();
    await expect(panel).toHaveAttribute('data-state', 'ready', {
      timeout: 60_000
    });
    await panel.getByRole('tab', { name: 'Timeline' }).click();
    const lanes = (await (await timeline).json()).locations.filter(
      (l: any) => l.rows.length > 0
    );
    expect(lanes.length).toBeGreaterThanOrEqual(3);

    await panel.getByRole('tab', { name: 'Call tree' }).click();
    const select = panel.locator('.jp-scorep-calltree-location');
    await expect(select.locator('option')).toHaveCount(lanes.length + 1);
    const perThread = page.waitForRequest(
      r =>
        r.url().includes('/scorep/api/calltree') &&
        new URL(r.url()).searchParams.get('location') !== null
    );
    const second = await select.locator('option').nth(2).getAttribute('value');
    await select.selectOption(second!);
    await perThread;
    await expect(panel.locator('.jp-scorep-calltree-location')).toHaveValue(
      second!
    );
  });
});
