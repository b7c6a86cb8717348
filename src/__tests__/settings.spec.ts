import {
  DEFAULT_SETTINGS,
  isProfiled,
  readSettings,
  refreshedMetadata,
  runMetadata,
  settingsToMetadata,
  toggledMetadata
} from '../settings';

describe('settings → metadata', () => {
  it('reads the registry composite, falling back per field on bad values', () => {
    expect(readSettings(undefined)).toEqual(DEFAULT_SETTINGS);
    const s = readSettings({
      backend: 'builtin',
      isolation: 'bogus',
      metricInterval: 0.5,
      experimentDirectory: '/tmp/exp',
      eventCap: -3
    });
    expect(s).toEqual({
      backend: 'builtin',
      isolation: 'auto',
      metricInterval: 0.5,
      experimentDirectory: '/tmp/exp',
      eventCap: 0
    });
  });

  it('writes only non-default choices (and the interval) for the kernel', () => {
    expect(settingsToMetadata(DEFAULT_SETTINGS)).toEqual({
      metric_interval: 0.1
    });
    expect(
      settingsToMetadata({
        backend: 'scorep',
        isolation: 'subprocess',
        metricInterval: 0.25,
        experimentDirectory: ' runs ',
        eventCap: 1e6
      })
    ).toEqual({
      backend: 'scorep',
      isolation: 'subprocess',
      metric_interval: 0.25,
      experiment_dir: 'runs',
      event_cap: 1000000
    });
  });

  it('toggles on with the settings and off by removing the key', () => {
    const on = toggledMetadata(
      { other: 1, backend: 'scorep', run: 'r', last: true },
      true,
      { ...DEFAULT_SETTINGS, isolation: 'inprocess' }
    );
    expect(on).toEqual({
      other: 1,
      profile: true,
      isolation: 'inprocess',
      metric_interval: 0.1
    });
    expect(isProfiled(on)).toBe(true);
    expect(toggledMetadata(on, false, DEFAULT_SETTINGS)).toBeUndefined();
    expect(isProfiled(undefined)).toBe(false);
    expect(isProfiled({ profile: false })).toBe(false);
  });

  it('refreshes changed settings before a run, keeping run membership', () => {
    const meta = refreshedMetadata(
      { profile: true, run: 'r1', last: true, backend: 'scorep' },
      { ...DEFAULT_SETTINGS, eventCap: 10 }
    );
    expect(meta).toEqual({
      profile: true,
      run: 'r1',
      last: true,
      metric_interval: 0.1,
      event_cap: 10
    });
  });

  it('marks a multi-cell run with one id and the last cell', () => {
    const metas = runMetadata(
      [undefined, { profile: true, last: true, run: 'old' }, undefined],
      'run-1',
      DEFAULT_SETTINGS
    );
    expect(metas.map(m => m.run)).toEqual(['run-1', 'run-1', 'run-1']);
    expect(metas.map(m => m.last)).toEqual([undefined, undefined, true]);
    expect(metas.every(m => m.profile === true)).toBe(true);
  });
});
