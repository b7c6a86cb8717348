/**
 * The cell toggle against the real kernel ("Python 3 (Score-P)"): the toolbar button, its
 * commands and what they write into the cell's metadata (settings, one run of several cells,
 * a notebook on another kernel).
 */
import { expect, test } from '@jupyterlab/galata';
import { cellMetadata, setSource, TOGGLE } from './notebookModel';

// Galata's user mock routes /.*\/api\/me.*/, which also swallows our /scorep/api/metrics:
// use the real /api/me instead.
test.use({ mockUser: false });

test.describe('Score-P cell toggle', () => {
  test('toggle, command and metadata', async ({ page }) => {
    await page.notebook.createNew('toggle.ipynb', { kernel: 'scorep-python' });
    await page.notebook.setCell(0, 'code', 'x = 1');
    await page.notebook.selectCells(0);
    const toggle = page.locator(TOGGLE).first();
    await expect(toggle).toBeVisible();
    await expect(toggle).toHaveAttribute('aria-pressed', 'false');

    await toggle.click();
    await expect(toggle).toHaveAttribute('aria-pressed', 'true');
    // no JupyterLab setting was set: nothing but the toggle's own key (no defaults, no
    // metric_interval, so %scorep and the kernel's defaults apply)
    expect(await cellMetadata(page, 0)).toEqual({ profile: true });
    // the profiled mark in the prompt area
    await expect(page.locator('.jp-Notebook .jp-Cell').first()).toHaveClass(
      /jp-scorep-profiled/
    );

    // compared once the syntax highlighting of "x = 1" has landed (the number is a span)
    const firstCell = page.locator('.jp-Notebook .jp-Cell').first();
    await expect(
      firstCell.locator('.cm-line span', { hasText: '1' })
    ).toBeVisible();
    await expect(firstCell).toHaveScreenshot('toggle-on-cell.png');

    // the same command from the palette turns it off again and removes the key
    await page.keyboard.press('Control+Shift+C');
    await page.locator('.lm-CommandPalette-input').fill('Profile with Score-P');
    await page.keyboard.press('Enter');
    await expect(toggle).toHaveAttribute('aria-pressed', 'false');
    expect(await cellMetadata(page, 0)).toBeNull();

    // the keyboard shortcut in command mode
    await page.notebook.selectCells(0);
    await page.keyboard.press('Escape');
    await page.keyboard.press('Alt+p');
    await expect(toggle).toHaveAttribute('aria-pressed', 'true');

    // the cell context menu offers the same command
    await page
      .locator('.jp-Notebook .jp-Cell .jp-InputArea-editor')
      .first()
      .click({ button: 'right' });
    await expect(
      page.locator('.lm-Menu-item[data-command="scorep:toggle-profile"]')
    ).toBeVisible();
    await page.keyboard.press('Escape');

    // markdown cells get no toggle
    await page.notebook.addCell('markdown', '# notes');
    await page.notebook.selectCells(1);
    await expect(
      page.locator('.jp-Notebook .jp-Cell').nth(1).locator(TOGGLE)
    ).toBeHidden();
  });

  test('a toggled cell has the kernel prepare its spare before it runs', async ({
    page
  }) => {
    // JupyterLab tells the kernel which cells are profiled (the jupyterlab-scorep comm):
    // the spare worker starts before the first profiled cell runs
    await page.notebook.createNew('notice.ipynb', { kernel: 'scorep-python' });
    await page.notebook.setCell(0, 'code', '%scorep');
    await page.notebook.runCell(0);
    expect(await page.notebook.getCellTextOutput(0)).toEqual([
      expect.stringContaining('Spare worker: none running')
    ]);
    await page.notebook.addCell('code', 'x = 1');
    await page.notebook.selectCells(1);
    await page.locator(TOGGLE).first().click();
    expect(await cellMetadata(page, 1)).toEqual({ profile: true });
    await expect
      .poll(
        async () => {
          await page.notebook.runCell(0);
          return ((await page.notebook.getCellTextOutput(0)) ?? []).join('');
        },
        { timeout: 60_000 }
      )
      .toMatch(/Spare worker: pid \d+ \((starting|ready)/);
    // sent as plain shell messages, not over a kernel subshell: no subshell thread (it
    // would show in cells profiled in the kernel) is left
    await page.notebook.setCell(
      0,
      'code',
      'import threading\nprint(sorted(t.name for t in threading.enumerate() if t.name.startswith("subshell")))'
    );
    await page.notebook.runCell(0);
    expect(await page.notebook.getCellTextOutput(0)).toEqual(['[]\n']);
  });

  test('settings reach the cell metadata', async ({ page }) => {
    // the settings editor lists the plugin with its fields
    await page.evaluate(async () => {
      await (window as any).jupyterapp.commands.execute('settingeditor:open', {
        query: 'Score-P'
      });
    });
    await expect(page.getByText('Score-P profiling').first()).toBeVisible();
    // saved the way the settings editor saves them
    await page.evaluate(async () => {
      await (window as any).jupyterapp.serviceManager.settings.save(
        'jupyterlab-scorep:plugin',
        JSON.stringify({
          backend: 'builtin',
          isolation: 'subprocess',
          eventCap: 5000
        })
      );
    });
    await page.reload();
    await page.notebook.createNew('settings.ipynb', {
      kernel: 'scorep-python'
    });
    await page.notebook.setCell(0, 'code', 'y = 2');
    await page.notebook.selectCells(0);
    await page.locator(TOGGLE).first().click();
    // the settings the user set go to lab_settings; the cell's top level stays the cell's own
    expect(await cellMetadata(page, 0)).toEqual({
      profile: true,
      lab_settings: {
        backend: 'builtin',
        isolation: 'subprocess',
        event_cap: 5000
      }
    });
    // the kernel honours them: the run happens in a subprocess
    await page.notebook.runCell(0);
    const panel = page.locator('.jp-scorep-panel').first();
    await expect(panel).toHaveAttribute('data-state', 'ready', {
      timeout: 60_000
    });
    await expect(panel.locator('.jp-scorep-fact-isolation')).toContainText(
      'subprocess'
    );
    await page.evaluate(async () => {
      await (window as any).jupyterapp.serviceManager.settings.save(
        'jupyterlab-scorep:plugin',
        '{}'
      );
    });
  });

  test('a key set on the cell wins over the JupyterLab settings', async ({
    page
  }) => {
    await page.notebook.createNew('precedence.ipynb', {
      kernel: 'scorep-python'
    });
    await setSource(page, 0, 'import json\nw = json.dumps(list(range(100)))');
    // set by hand in the cell's metadata (as the metadata editor does): the builtin backend
    await page.evaluate(() => {
      const nb = (window as any).jupyterapp.shell.currentWidget;
      nb.content.widgets[0].model.setMetadata('scorep', {
        profile: true,
        backend: 'builtin'
      });
    });

    // the user changes the JupyterLab settings in the settings editor: another backend, and
    // an isolation the cell leaves open. The form saves every field, defaults included.
    await page.evaluate(async () => {
      await (window as any).jupyterapp.commands.execute('settingeditor:open', {
        query: 'Score-P'
      });
    });
    await page.getByText('Score-P profiling').first().click();
    const field = (name: string) =>
      page.locator(
        `select[id="jp-SettingsEditor-jupyterlab-scorep:plugin_${name}"]`
      );
    await field('backend').selectOption({ label: 'scorep' });
    await field('isolation').selectOption({ label: 'subprocess' });
    // wait until the settings registry in the page (the one the extension reads) has them
    await expect
      .poll(() =>
        page.evaluate(async () => {
          const registry = await (window as any).galata.getPlugin(
            '@jupyterlab/apputils-extension:settings'
          );
          const s = await registry.load('jupyterlab-scorep:plugin');
          return { backend: s.user.backend, isolation: s.user.isolation };
        })
      )
      .toEqual({ backend: 'scorep', isolation: 'subprocess' });

    // back to the notebook, run the cell
    await page.notebook.activate('precedence.ipynb');
    await page.notebook.runCell(0);
    const panel = page.locator('.jp-scorep-panel').first();
    await expect(panel).toHaveAttribute('data-state', 'ready', {
      timeout: 60_000
    });
    // the hand-set key survived the refresh before the run; the settings the user changed
    // are in lab_settings, without the defaults the form saved along (metric_interval: 0...)
    expect(await cellMetadata(page, 0)).toEqual({
      profile: true,
      backend: 'builtin',
      lab_settings: { backend: 'scorep', isolation: 'subprocess' }
    });
    // and the kernel applied them in that order: the cell's backend, the setting's isolation
    await expect(panel.locator('.jp-scorep-fact-backend')).toContainText(
      'builtin'
    );
    await expect(panel.locator('.jp-scorep-fact-isolation')).toContainText(
      'subprocess'
    );
  });

  test('profile selected cells as one run', async ({ page }) => {
    await page.notebook.createNew('run.ipynb', { kernel: 'scorep-python' });
    await page.notebook.addCell('code', 'b = 1');
    await setSource(
      page,
      0,
      'def h():\n    return sum(range(10000))\n\na = h()'
    );
    await setSource(page, 1, 'b = h() + a\nprint(b)');
    await page.notebook.selectCells(0, 1);
    await page.evaluate(async () => {
      await (window as any).jupyterapp.commands.execute(
        'scorep:profile-selected-as-run'
      );
    });
    const first = await cellMetadata(page, 0);
    const second = await cellMetadata(page, 1);
    expect(first.profile).toBe(true);
    expect(first.run).toMatch(/^[0-9a-f-]{36}$/);
    expect(second.run).toBe(first.run);
    expect(first.last).toBeUndefined();
    expect(second.last).toBe(true);
    await page.notebook.waitForRun(1);
    // the last cell of the run shows the run's experiment
    await expect(
      page.locator('.jp-Notebook .jp-Cell').nth(1).locator('.jp-scorep-panel')
    ).toHaveAttribute('data-state', 'ready', { timeout: 60_000 });
  });

  test('a non-Score-P kernel: the toggle says so and offers to switch', async ({
    page
  }) => {
    await page.notebook.createNew('plain.ipynb', { kernel: 'python3' });
    await page.notebook.setCell(0, 'code', 'z = 3');
    await page.notebook.selectCells(0);
    const toggle = page.locator(TOGGLE).first();
    await expect(toggle).toHaveAttribute(
      'title',
      /needs the "Python 3 \(Score-P\)" kernel/
    );
    await toggle.click();
    const dialog = page.locator('.jp-Dialog');
    await expect(dialog).toContainText('Switch to the Score-P kernel?');
    await dialog.getByRole('button', { name: 'Switch kernel' }).click();
    await expect
      .poll(() =>
        page.evaluate(
          () =>
            (window as any).jupyterapp.shell.currentWidget.sessionContext
              .session?.kernel?.name
        )
      )
      .toBe('scorep-python');
    await expect(toggle).toHaveAttribute('aria-pressed', 'true');
  });
});
