import { expect, test } from '@jupyterlab/galata';

/**
 * The installed pieces meet in the browser: the extension is activated and the bundled
 * "Python 3 (Score-P)" kernel spec is offered in the launcher.
 */
test.describe('foundation', () => {
  test('extension activates and registers its command', async ({ page }) => {
    const hasCommand = await page.evaluate(() =>
      (window as any).jupyterapp.commands.hasCommand('scorep:toggle-profile')
    );
    expect(hasCommand).toBe(true);

    await page.keyboard.press('Control+Shift+C');
    const palette = page.locator('#modal-command-palette');
    await expect(palette).toBeVisible();
    await palette.locator('input').fill('Score-P');
    await expect(
      palette
        .locator('.lm-CommandPalette-item', { hasText: 'Profile with Score-P' })
        .first()
    ).toBeVisible();
    await page.keyboard.press('Escape');
  });

  test('the Score-P kernel is in the launcher', async ({ page }) => {
    const card = page.locator('.jp-LauncherCard', {
      hasText: 'Python 3 (Score-P)'
    });
    await expect(card.first()).toBeVisible();
    const launcher = page.locator('.jp-Launcher-body');
    // strict: waits until two screenshots in a row are the same, then no pixel may differ
    await expect(launcher).toHaveScreenshot('launcher.png');
  });
});
