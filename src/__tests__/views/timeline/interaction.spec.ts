import {
  keyAction,
  cellSourcesOf,
  gestureHelp,
  tooltipLines,
  wheelAction,
  wheelPixels,
  wheelZoomFactor
} from '../../../views/timeline/interaction';
import { CellSources } from '../../../views/cellSources';

describe('timeline keys', () => {
  const view = { t0: 1000, t1: 2000 };
  it('pan by a tenth of the view with the arrows', () => {
    expect(keyAction('ArrowRight', view, 100)).toEqual({
      kind: 'view',
      view: { t0: 1100, t1: 2100 }
    });
    expect(keyAction('ArrowLeft', view, 100)).toEqual({
      kind: 'view',
      view: { t0: 900, t1: 1900 }
    });
  });
  it('zoom around the centre with + and -', () => {
    const zin = keyAction('+', view, 100);
    expect(zin).toEqual({ kind: 'view', view: { t0: 1150, t1: 1850 } });
    const zout = keyAction('-', view, 100) as any;
    expect(zout.view.t1 - zout.view.t0).toBeCloseTo(1000 / 0.7);
    expect((zout.view.t0 + zout.view.t1) / 2).toBeCloseTo(1500);
  });
  it('reset with 0, leave other keys alone', () => {
    expect(keyAction('0', view, 100)).toEqual({ kind: 'reset' });
    expect(keyAction('Escape', view, 100)).toEqual({ kind: 'clear-measure' });
    expect(keyAction('a', view, 100)).toBeNull();
  });
  it('wheel up zooms in, down zooms out, line mode scales', () => {
    expect(wheelZoomFactor(-100, 0)).toBeLessThan(1);
    expect(wheelZoomFactor(100, 0)).toBeGreaterThan(1);
    expect(wheelZoomFactor(3, 1)).toBeCloseTo(wheelZoomFactor(120, 0));
  });
});

describe('timeline wheel', () => {
  const wheel = (over: Partial<Parameters<typeof wheelAction>[0]>) => ({
    deltaX: 0,
    deltaY: 0,
    deltaMode: 0,
    shiftKey: false,
    ctrlKey: false,
    metaKey: false,
    ...over
  });
  const zoomIn = { kind: 'zoom', factor: wheelZoomFactor(-100, 0) };

  it('zooms time with the plain wheel while nothing scrolls', () => {
    expect(wheelAction(wheel({ deltaY: -100 }), false, 800, 300)).toEqual(
      zoomIn
    );
  });

  it('scrolls ranks taller than the plot with the plain wheel', () => {
    expect(wheelAction(wheel({ deltaY: 100 }), true, 800, 300)).toEqual({
      kind: 'scroll',
      px: 100
    });
    expect(wheelAction(wheel({ deltaY: -100 }), true, 800, 300)).toEqual({
      kind: 'scroll',
      px: -100
    });
  });

  it('zooms time with ctrl or cmd (and a pinch) over scrolled ranks too', () => {
    for (const mod of [{ ctrlKey: true }, { metaKey: true }]) {
      expect(
        wheelAction(wheel({ deltaY: -100, ...mod }), true, 800, 300)
      ).toEqual(zoomIn);
      expect(
        wheelAction(wheel({ deltaY: -100, ...mod }), false, 800, 300)
      ).toEqual(zoomIn);
    }
  });

  it('pans time with shift-wheel and a sideways delta, scrolled or not', () => {
    for (const scrollable of [false, true]) {
      expect(
        wheelAction(wheel({ deltaY: 50, shiftKey: true }), scrollable, 800, 300)
      ).toEqual({ kind: 'pan', px: -50 });
      expect(
        wheelAction(wheel({ deltaX: 30, deltaY: 5 }), scrollable, 800, 300)
      ).toEqual({ kind: 'pan', px: -30 });
    }
  });

  it('counts lines and pages in px', () => {
    expect(wheelPixels(3, 1, 300)).toBe(120);
    expect(wheelPixels(1, 2, 300)).toBe(300);
    expect(wheelPixels(7, 0, 300)).toBe(7);
    // Firefox's mouse wheel: 3 lines scroll 120 px, one page the plot's height
    expect(
      wheelAction(wheel({ deltaY: 3, deltaMode: 1 }), true, 800, 300)
    ).toEqual({ kind: 'scroll', px: 120 });
    expect(
      wheelAction(wheel({ deltaY: -1, deltaMode: 2 }), true, 800, 300)
    ).toEqual({ kind: 'scroll', px: -300 });
  });
});

describe('timeline help', () => {
  it('says what the wheel does, and over many ranks that it scrolls them', () => {
    expect(gestureHelp(false)).toBe(
      'Wheel: zoom · drag: pan · shift-drag: zoom to selection · alt/ctrl-drag: measure (the functions in the range) · double-click or 0: show all'
    );
    expect(gestureHelp(true)).toMatch(
      /^Wheel: zoom, or scroll the ranks when they are taller than the plot \(ctrl-wheel or a pinch zooms then\) · shift-wheel: pan · drag: pan/
    );
  });
});

describe('tooltip text', () => {
  it('names the region, its duration and where it is defined', () => {
    const t = tooltipLines(
      { name: '__main__:f', group: '__main__', file: '<cell 3>', line: 4 },
      12,
      1_000_000,
      3_500_000,
      1
    );
    expect(t).toEqual({
      title: '__main__:f',
      lines: ['Duration 2.5 ms', 'Start 1 ms', '<cell 3>:4']
    });
  });
  it('says how many calls a merged span holds', () => {
    const t = tooltipLines(undefined, 7, 0, 1000, 40);
    expect(t.title).toBe('region 7');
    expect(t.lines[0]).toBe('40 calls merged, 1 µs span');
  });
});

describe('where a region is, in the notebook', () => {
  const cellFile = '/tmp/ipykernel_3673/577800406.py';
  const regions = {
    '0': {
      name: 'cell [1]',
      group: 'cell',
      file: cellFile,
      role: 'cell' as const
    },
    '1': { name: '__main__:grow', group: '__main__', file: cellFile, line: 3 }
  };
  it('names the cell and line of a function defined in a cell of the run', () => {
    const t = tooltipLines(regions['1'], 1, 0, 1000, 1, cellSourcesOf(regions));
    expect(t.lines[2]).toBe('cell [1], line 3');
  });
  it('reads IPython’s input names and exec’d code of a one-cell run', () => {
    const one = new CellSources([{ label: 'cell [5]' }]);
    expect(one.where('<ipython-input-3-5f2a9c01>', 14)).toBe(
      'cell [3], line 14'
    );
    expect(one.where('<dynamic-code>', 8)).toBe('cell [5], line 8');
    // Score-P's bindings write IPython's name with the working directory in front
    expect(one.where('/home/me/<ipython-input-3-5f2a9c01>', 14)).toBe(
      'cell [3], line 14'
    );
    expect(one.where('/tmp/ipykernel_9/123.py', 2)).toBe(
      'an earlier cell, line 2'
    );
    // a module's file, and a pseudo-file that is no cell, stay as they are
    expect(one.where('/usr/lib/python3/json/decoder.py', 337)).toBe(
      '/usr/lib/python3/json/decoder.py:337'
    );
    expect(one.where('<frozen importlib._bootstrap>', 1)).toBe(
      '<frozen importlib._bootstrap>:1'
    );
    // two cells in the run: exec'd code could be either
    const two = new CellSources([{ label: 'cell [5]' }, { label: 'cell [6]' }]);
    expect(two.where('<dynamic-code>', 8)).toBe('<dynamic-code>:8');
  });
});
