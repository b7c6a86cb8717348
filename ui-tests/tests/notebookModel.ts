/**
 * Reading and writing a notebook's cells through its model in the page, for the specs.
 *
 * Typing multi-line Python into the editor lets auto-indentation change the code, so the
 * specs put source in through the shared model and read `scorep` metadata back from it.
 */

/** The cell toolbar's "Profile with Score-P" toggle in JupyterLab. */
export const TOGGLE = '.jp-cell-toolbar [data-command="scorep:toggle-profile"]';

/**
 * Put source into the current notebook's cell at `index`, and with `scorep` given, set the
 * cell's `scorep` metadata to it (e.g. `{ profile: true, backend: 'builtin' }`).
 */
export async function setSource(
  page: any,
  index: number,
  code: string,
  scorep?: Record<string, unknown>
): Promise<void> {
  await page.evaluate(
    ([i, src, meta]: [number, string, Record<string, unknown> | null]) => {
      const nb = (window as any).jupyterapp.shell.currentWidget;
      const model = nb.content.widgets[i].model;
      model.sharedModel.setSource(src);
      if (meta !== null) {
        model.setMetadata('scorep', meta);
      }
    },
    [index, code, scorep ?? null]
  );
}

/** The `scorep` metadata of the current notebook's cell at `index`, or null. */
export async function cellMetadata(page: any, index: number): Promise<any> {
  return page.evaluate((i: number) => {
    const nb = (window as any).jupyterapp.shell.currentWidget;
    return nb.content.widgets[i].model.getMetadata('scorep') ?? null;
  }, index);
}
