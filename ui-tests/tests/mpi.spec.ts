/**
 * An MPI cell in the browser, against the real kernel, Open MPI and mpi4py: "Profile as
 * MPI ranks…" in the cell's context menu writes the ranks into the cell, the cell runs as
 * 2 ranks with their output labelled, and the panel's Ranks tab shows both ranks and the
 * bytes rank 0 sent to rank 1. Skipped where the kernel cannot start ranks (no mpirun or
 * mpi4py: the cell's error says so).
 */
import { expect, test } from '@jupyterlab/galata';
import { setSource } from './notebookModel';

// Galata's user mock routes /.*\/api\/me.*/, which also swallows /scorep/api/metrics.
test.use({ mockUser: false, viewport: { width: 1280, height: 1200 } });

const RING = `from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
if rank == 0:
    comm.Send(np.ones(100), dest=1, tag=3)
else:
    comm.Recv(np.zeros(100), source=0, tag=3)
print('done', flush=True)`;

test('an MPI cell: the dialog, labelled output, the Ranks tab', async ({
  page
}) => {
  test.setTimeout(180_000);
  await page.notebook.createNew('mpi.ipynb', { kernel: 'scorep-python' });
  // the builtin tracer, whether or not Score-P is installed
  await setSource(page, 0, RING, { backend: 'builtin' });
  await page.notebook.selectCells(0);

  // the toggle's options: ranks through the dialog
  await page.locator('.jp-Cell').first().click({ button: 'right' });
  await page.getByRole('menuitem', { name: 'Profile as MPI ranks…' }).click();
  const dialog = page.locator('.jp-Dialog');
  await dialog.getByLabel('Number of MPI ranks').fill('2');
  await dialog.getByRole('button', { name: 'Profile as MPI' }).click();
  const meta = await page.evaluate(() => {
    const nb = (window as any).jupyterapp.shell.currentWidget;
    return nb.content.widgets[0].model.getMetadata('scorep');
  });
  expect(meta).toMatchObject({
    profile: true,
    backend: 'builtin',
    mpi: { ranks: 2 }
  });

  await page.notebook.runCell(0);
  const output = page.locator('.jp-OutputArea-output');
  const error = output.locator(
    '[data-mime-type="application/vnd.jupyter.stderr"]'
  );
  const panel = page.locator('.jp-scorep-panel').first();
  await expect(panel.or(error.first())).toBeVisible({ timeout: 120_000 });
  const text = (await page.locator('.jp-OutputArea').first().innerText()) ?? '';
  test.skip(
    /No MPI launcher|mpi4py is not installed/.test(text),
    'no mpirun or mpi4py where the kernel runs'
  );
  await expect(page.locator('.jp-OutputArea').first()).toContainText(
    '[rank 0] done'
  );
  await expect(page.locator('.jp-OutputArea').first()).toContainText(
    '[rank 1] done'
  );
  await expect(panel).toHaveAttribute('data-state', 'ready', {
    timeout: 120_000
  });
  await panel.getByRole('tab', { name: 'Ranks' }).click();
  const rows = panel.locator('.jp-scorep-ranks-table tbody tr');
  await expect(rows).toHaveCount(2);
  await expect(panel.locator('.jp-scorep-ranks-headline')).toContainText(
    '2 ranks'
  );
  const cell = panel
    .locator('.jp-scorep-matrix tbody tr')
    .nth(0)
    .locator('td')
    .nth(1);
  await expect(cell).toHaveText('800 B');
  await expect(cell).toHaveAttribute(
    'title',
    'rank 0 → rank 1: 800 B in 1 message'
  );
});
