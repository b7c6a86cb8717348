import {
  IScorepMetadata,
  isProfiled,
  readUserSettings,
  refreshedMetadata,
  runMetadata,
  settingsToMetadata,
  toggledMetadata
} from '../../notebook/cellSettings';

/**
 * Precedence: the cell's own keys > the JupyterLab settings (`lab_settings`) > `%scorep` >
 * environment > defaults. The frontend writes only `profile`, `run`/`last` and `lab_settings`.
 */
describe('settings → metadata', () => {
  it('reads only what the user set, never the schema defaults', () => {
    expect(readUserSettings(undefined)).toEqual({});
    expect(readUserSettings({})).toEqual({});
    expect(
      readUserSettings({
        backend: 'builtin',
        isolation: 'bogus',
        metricInterval: 0.5,
        experimentDirectory: '/tmp/exp',
        eventCap: -3,
        unrelated: true
      })
    ).toEqual({
      backend: 'builtin',
      metricInterval: 0.5,
      experimentDirectory: '/tmp/exp'
    });
    expect(readUserSettings({ metricInterval: -1, eventCap: 'x' })).toEqual({});
  });

  it('writes nothing for the defaults the settings editor saves with a change', () => {
    // JupyterLab's settings form saves every field, defaults included, once one is changed
    const saved = readUserSettings({
      backend: 'builtin',
      isolation: 'auto',
      metricInterval: 0,
      experimentDirectory: '',
      eventCap: 0
    });
    expect(settingsToMetadata(saved)).toEqual({ backend: 'builtin' });
  });

  it('translates the user settings to metadata names, leaving out "no choice"', () => {
    expect(settingsToMetadata({})).toEqual({});
    // "auto", an empty directory and a cap of 0 mean "no choice": the kernel decides
    expect(
      settingsToMetadata({
        backend: 'auto',
        isolation: 'auto',
        metricInterval: 0,
        experimentDirectory: '  ',
        eventCap: 0
      })
    ).toEqual({});
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

  it('writes no metric_interval unless the user set it', () => {
    // so that `%scorep metric_interval=...` takes effect in JupyterLab
    const on = toggledMetadata(undefined, true, readUserSettings({}));
    expect(on).toEqual({ profile: true });
    const refreshed = refreshedMetadata({ profile: true }, {});
    expect(refreshed).toEqual({ profile: true });
    expect(
      refreshedMetadata({ profile: true }, { metricInterval: 0.1 })
    ).toEqual({ profile: true, lab_settings: { metric_interval: 0.1 } });
  });

  it('keeps a key set by hand in the cell through a refresh', () => {
    const byHand: IScorepMetadata = {
      profile: true,
      backend: 'builtin',
      isolation: 'inprocess',
      metric_interval: 0.5,
      experiment_dir: 'mine',
      event_cap: 7,
      include: ['numpy']
    };
    const meta = refreshedMetadata(byHand, {
      backend: 'scorep',
      isolation: 'subprocess',
      metricInterval: 2,
      eventCap: 10
    });
    expect(meta).toEqual({
      ...byHand,
      lab_settings: {
        backend: 'scorep',
        isolation: 'subprocess',
        metric_interval: 2,
        event_cap: 10
      }
    });
    // and when the user set nothing, the cell's keys stay and nothing is added
    expect(refreshedMetadata(byHand, {})).toEqual(byHand);
  });

  it('replaces lab_settings on refresh and removes it when the user set nothing', () => {
    const before: IScorepMetadata = {
      profile: true,
      run: 'r1',
      last: true,
      lab_settings: { backend: 'builtin', event_cap: 5 }
    };
    expect(refreshedMetadata(before, { isolation: 'subprocess' })).toEqual({
      profile: true,
      run: 'r1',
      last: true,
      lab_settings: { isolation: 'subprocess' }
    });
    expect(refreshedMetadata(before, {})).toEqual({
      profile: true,
      run: 'r1',
      last: true
    });
    // settings not loaded yet: what the cell holds is left as it is
    expect(refreshedMetadata(before, null)).toEqual(before);
  });

  it('toggles on with the user settings and off by removing the key', () => {
    const on = toggledMetadata(
      { other: 1, backend: 'scorep', run: 'r', last: true },
      true,
      { isolation: 'inprocess' }
    );
    expect(on).toEqual({
      other: 1,
      backend: 'scorep',
      profile: true,
      lab_settings: { isolation: 'inprocess' }
    });
    expect(isProfiled(on)).toBe(true);
    expect(toggledMetadata(on, false, {})).toBeUndefined();
    expect(isProfiled(undefined)).toBe(false);
    expect(isProfiled({ profile: false })).toBe(false);
  });

  it('marks a multi-cell run with one id and the last cell', () => {
    const metas = runMetadata(
      [
        undefined,
        { profile: true, last: true, run: 'old', backend: 'builtin' },
        undefined
      ],
      'run-1',
      { eventCap: 100 }
    );
    expect(metas.map(m => m.run)).toEqual(['run-1', 'run-1', 'run-1']);
    expect(metas.map(m => m.last)).toEqual([undefined, undefined, true]);
    expect(metas.every(m => m.profile === true)).toBe(true);
    expect(metas[1].backend).toBe('builtin');
    expect(metas.map(m => m.lab_settings)).toEqual([
      { event_cap: 100 },
      { event_cap: 100 },
      { event_cap: 100 }
    ]);
  });
});
