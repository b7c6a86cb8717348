/**
 * Accelerators in the panel: a torch.profiler trace of a training step (Kineto's format,
 * ui-tests/data/train.pt.trace.json, made by server_ext/tests/kineto_factory.py: there is no
 * GPU here) opened with "Open a torch.profiler trace…". The device lane CUDA[0:7] holds the
 * kernels and copies, a click on a kernel draws its link to the launch, the Summary shows
 * the device's busy share, idle causes and top kernels, and the verdict names the input
 * pipeline. Screenshots in the light and the dark theme (the trace is fixed, so nothing is
 * masked).
 */
import { expect, test } from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';

test.use({ mockUser: false, viewport: { width: 1400, height: 1100 } });

const TRACE = fs.readFileSync(
  path.join(__dirname, '..', 'data', 'train.pt.trace.json'),
  'utf-8'
);

test('a training step with device lanes, launch links and the verdict', async ({
  page,
  tmpPath
}, testInfo) => {
  test.setTimeout(180_000);
  const file = `${tmpPath}/train.pt.trace.json`;
  await page.contents.uploadContent(TRACE, 'text', file);
  await page.evaluate(async (p: string) => {
    await (window as any).jupyterapp.commands.execute(
      'scorep:open-torch-trace',
      { path: p }
    );
  }, file);
  const panel = page.locator('.jp-scorep-panel').first();
  await expect(panel).toHaveAttribute('data-state', 'ready', {
    timeout: 120_000
  });
  // the verdict names the bottleneck
  const verdict = panel.locator('.jp-scorep-verdict').first();
  await expect(verdict).toContainText(
    'waiting for the input pipeline; the DataLoader'
  );
  // the Summary's device section
  const device = panel.locator('.jp-scorep-device');
  await expect(device).toContainText('GPU: busy');
  await expect(device).toContainText('CUDA[0:7]');
  await expect(device.locator('table').first()).toContainText(
    'volta_sgemm_128x64_nn'
  );
  await expect(panel.locator('.jp-scorep-body')).toHaveScreenshot(
    'device-summary-light.png'
  );

  // the timeline: host lane, then the device lane
  await panel.getByRole('tab', { name: 'Timeline' }).click();
  const timeline = panel.locator('.jp-scorep-timeline');
  await expect
    .poll(async () => Number(await timeline.getAttribute('data-spans')), {
      timeout: 60_000
    })
    .toBeGreaterThan(0);
  const expPath = await panel.getAttribute('data-path');
  // where the first sgemm kernel is drawn: from the timeline answer and the lane layout
  const target = await page.evaluate(async (p: string) => {
    const q = new URLSearchParams({ path: p, width: '4000' });
    const r = await fetch(`/scorep/api/timeline?${q}`);
    const tl = await r.json();
    const e = await (
      await fetch(`/scorep/api/experiment?${new URLSearchParams({ path: p })}`)
    ).json();
    const locs = e.trace.locations.filter((l: any) => l.kind !== 'metric');
    const dev = tl.locations.find((l: any) => l.name === 'CUDA[0:7]');
    const row = dev.rows[0];
    let i = 0;
    while (row.end[i] - row.start[i] < 200_000) {
      i++;
    }
    let y = 0;
    let laneY = 0;
    for (const l of locs) {
      y += 16;
      if (l.name === 'CUDA[0:7]') {
        laneY = y;
      }
      y += (l.max_depth + 1) * 18;
    }
    const span = tl.range[1] - tl.range[0];
    const frac = (t: number) => (t - tl.range[0]) / span;
    // zoom to the step around it: from 0.3 ms before the copy to 0.9 ms after
    const t0 = row.start[0] - 300_000;
    const t1 = row.start[0] + 900_000;
    const mid = (row.start[i] + row.end[i]) / 2;
    return {
      from: frac(t0),
      to: frac(t1),
      inZoom: (mid - t0) / (t1 - t0),
      laneY
    };
  }, expPath!);
  const canvas = panel.locator('.jp-scorep-timeline-canvas');
  const box = (await canvas.boundingBox())!;
  const y = box.y + 22 + 5;
  await page.keyboard.down('Shift');
  await page.mouse.move(box.x + box.width * target.from, y);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * target.to, y, { steps: 5 });
  await page.mouse.up();
  await page.keyboard.up('Shift');
  await page.waitForTimeout(500);
  await canvas.click({
    position: { x: box.width * target.inZoom, y: 22 + target.laneY + 9 }
  });
  const links = panel.locator('.jp-scorep-links');
  await expect(links).toHaveAttribute('data-links', '1');
  await expect(panel.locator('.jp-scorep-links-status')).toContainText(
    'the launch on the host'
  );
  await panel.scrollIntoViewIfNeeded();
  const body = panel.locator('.jp-scorep-body');
  await expect(body).toHaveScreenshot('device-timeline-light.png');
  await page.theme.setDarkTheme();
  await canvas.focus();
  await page.waitForTimeout(300);
  await expect(body).toHaveScreenshot('device-timeline-dark.png');
  await panel.getByRole('tab', { name: 'Summary' }).click();
  await expect(body).toHaveScreenshot('device-summary-dark.png');
  await panel.screenshot({ path: testInfo.outputPath('device-dark.png') });
  await page.theme.setLightTheme();
});
