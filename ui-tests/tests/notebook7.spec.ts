/**
 * The toggle and the panel in Jupyter Notebook 7 as in JupyterLab: the same server serves
 * Notebook 7's /notebooks/ page (the `notebook` package of the test extra); a cell toggled
 * there runs profiled and shows its panel. Skipped where Notebook 7 is not installed.
 */
import { expect, test } from '@jupyterlab/galata';

test.use({ mockUser: false, autoGoto: false });

const TOGGLE = '[data-command="scorep:toggle-profile"]';

test('Notebook 7: toggle a cell, run it, the panel under it', async ({
  page,
  request,
  tmpPath,
  baseURL
}, testInfo) => {
  test.setTimeout(180_000);
  const tree = await request.get(`${new URL(baseURL!).origin}/tree`);
  test.skip(!tree.ok(), 'Notebook 7 is not installed (pip install notebook)');
  const name = `${tmpPath}/nb7.ipynb`;
  await page.contents.uploadContent(
    JSON.stringify({
      nbformat: 4,
      nbformat_minor: 5,
      metadata: {
        kernelspec: {
          name: 'scorep-python',
          display_name: 'Python 3 (Score-P)',
          language: 'python'
        }
      },
      cells: [
        {
          cell_type: 'code',
          id: 'c1',
          metadata: { scorep: { profile: true, backend: 'builtin' } },
          execution_count: null,
          outputs: [],
          source:
            'def f(n):\n    return sum(i * i for i in range(n))\n\nf(200_000)'
        },
        {
          cell_type: 'code',
          id: 'c2',
          metadata: {},
          execution_count: null,
          outputs: [],
          source: 'x = 1'
        }
      ]
    }),
    'text',
    name
  );
  // Notebook 7's page, outside JupyterLab's /lab (galata's goto waits for JupyterLab)
  const url = `${new URL(baseURL!).origin}/notebooks/${name}`;
  await page.goto('');
  await page.evaluate((to: string) => {
    window.location.href = to;
  }, url);
  await page.waitForURL(/\/notebooks\//);
  const cell = page.locator('.jp-Notebook .jp-CodeCell').first();
  await expect(cell).toBeVisible({ timeout: 60_000 });
  // the toggle in the cell's toolbar reads the cell's metadata (profiled, builtin tracer)
  await cell.click();
  const toggle = page.locator(TOGGLE).first();
  await expect(toggle).toHaveAttribute('aria-pressed', 'true');
  await expect(cell).toHaveClass(/jp-scorep-profiled/);
  // and writes it: the second cell on, then off again
  const second = page.locator('.jp-Notebook .jp-CodeCell').nth(1);
  await second.click();
  const toggle2 = second.locator(TOGGLE);
  await expect(toggle2).toHaveAttribute('aria-pressed', 'false');
  await toggle2.click();
  await expect(toggle2).toHaveAttribute('aria-pressed', 'true');
  await expect(second).toHaveClass(/jp-scorep-profiled/);
  await toggle2.click();
  await expect(toggle2).toHaveAttribute('aria-pressed', 'false');
  await expect(second).not.toHaveClass(/jp-scorep-profiled/);
  // the first cell runs under the builtin tracer its metadata names
  await cell.locator('.jp-InputArea-editor').click();
  await page.keyboard.press('Shift+Enter');
  const panel = page.locator('.jp-scorep-panel').first();
  await expect(panel).toHaveAttribute('data-state', 'ready', {
    timeout: 90_000
  });
  await expect(panel.locator('.jp-scorep-title')).toHaveText('Builtin tracer');
  await expect(panel.getByRole('tab', { name: 'Timeline' })).toBeVisible();
  await panel.screenshot({ path: testInfo.outputPath('notebook7-light.png') });
});
