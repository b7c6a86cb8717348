/**
 * Galata's Playwright configuration, pointed at Debian's Chromium.
 *
 * Never `playwright install`: browsers cannot be downloaded here. Video needs Playwright's
 * own ffmpeg, so it stays off (every test fails at newPage otherwise).
 */
const baseConfig = require('@jupyterlab/galata/lib/playwright-config');

const chromium = process.env.SCOREP_UI_CHROMIUM || '/usr/lib/chromium/chromium';

module.exports = {
  ...baseConfig,
  reporter: [[process.env.CI ? 'list' : 'line'], ['html', { open: 'never' }]],
  timeout: 120 * 1000,
  expect: { ...(baseConfig.expect || {}), timeout: 30 * 1000 },
  use: {
    ...baseConfig.use,
    video: 'off',
    launchOptions: {
      executablePath: chromium,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync'
      ]
    }
  },
  webServer: {
    command: 'jlpm start',
    url: 'http://localhost:8888/lab',
    timeout: 180 * 1000,
    reuseExistingServer: !process.env.CI
  }
};
