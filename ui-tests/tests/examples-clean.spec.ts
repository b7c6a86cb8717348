/**
 * The example notebooks a new user opens first open unmodified: no "unsaved changes" mark
 * once the kernel has started. JupyterLab writes the kernel's language_info into the
 * notebook when it differs from the saved one: the examples carry the full language_info
 * of the supported Python (3.11, as CI runs it); under another Python version JupyterLab
 * marks them modified as it does any notebook.
 */
import { expect, test } from '@jupyterlab/galata';
import * as path from 'path';

test.use({ mockUser: false });

for (const name of ['quickstart.ipynb', 'gpt.ipynb']) {
  test(`${name} opens unmodified`, async ({ page, tmpPath }) => {
    await page.contents.uploadFile(
      path.resolve(__dirname, '../../examples', name),
      `${tmpPath}/${name}`
    );
    await page.notebook.openByPath(`${tmpPath}/${name}`);
    await page.notebook.activate(name);
    // the kernel started and answered: its language_info has reached the notebook
    await page.evaluate(async () => {
      const nb = (window as any).jupyterapp.shell.currentWidget;
      await nb.sessionContext.ready;
      await nb.sessionContext.session.kernel.info;
    });
    await page.waitForTimeout(1000);
    const dirty = await page.evaluate(() => {
      const nb = (window as any).jupyterapp.shell.currentWidget;
      return nb.context.model.dirty;
    });
    expect(dirty).toBe(false);
  });
}
