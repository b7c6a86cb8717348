import { metricsWindow } from '../../../views/metrics/metricsView';
import type { IMetricSeries } from '../../../api/traceTypes';
import { formatBytes, formatValue } from '../../../views/metrics/format';
import { chartsOf } from '../../../views/metrics/metricsView';
import {
  sampleSteps,
  shortRunNote,
  stepAt,
  tickLabels,
  yRange
} from '../../../views/metrics/scale';

describe('metric formatting', () => {
  it('formats bytes in binary units', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.50 KiB');
    expect(formatBytes(250 * 1024 * 1024)).toBe('250 MiB');
  });
  it('formats by unit', () => {
    expect(formatValue(42.4, '%')).toBe('42 %');
    expect(formatValue(3.21, '%')).toBe('3.2 %');
    expect(formatValue(2048, 'bytes/s')).toBe('2.00 KiB/s');
    expect(formatValue(NaN, '%')).toBe('–');
    expect(formatValue(0.5, 'W')).toBe('0.500 W');
  });
});

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

describe("a chart's y range", () => {
  it('runs percentages from 0 to 100, or above when the data do', () => {
    expect(yRange([12, 40], '%')).toMatchObject({ lo: 0, hi: 100 });
    expect(yRange([130], '%')).toMatchObject({ lo: 0, hi: 130 });
    expect(tickLabels(yRange([12], '%'), '%')).toEqual([
      '0 %',
      '50 %',
      '100 %'
    ]);
  });
  it('runs rates from 0 to a round number above the data', () => {
    expect(yRange([3.2e6, 1e5], 'bytes/s')).toMatchObject({ lo: 0, hi: 5e6 });
    expect(yRange([], 'bytes/s')).toMatchObject({ lo: 0, hi: 1024 });
    expect(yRange([0.2], 'W')).toMatchObject({ lo: 0, hi: 0.2 });
  });
  it("scales memory to the run's own range: a 586 MiB growth fills it", () => {
    const r = yRange([2 * GiB, null, 2 * GiB + 586 * MiB], 'bytes');
    expect(r.lo).toBeLessThanOrEqual(2 * GiB);
    expect(r.hi).toBeGreaterThanOrEqual(2 * GiB + 586 * MiB);
    // the growth spans more than half of the chart's height
    expect((586 * MiB) / (r.hi - r.lo)).toBeGreaterThan(0.5);
    expect(tickLabels(r, 'bytes')[0]).toMatch(/MiB|GiB/);
  });
  it('gives a flat series a band around it', () => {
    const r = yRange([300 * MiB, 300 * MiB], 'bytes');
    expect(r.lo).toBeLessThan(300 * MiB);
    expect(r.hi).toBeGreaterThan(300 * MiB);
  });
});

describe('samples as steps', () => {
  const ms = 1e6;
  it('draws each sample over the interval it ends, the first from the run start', () => {
    // the first tick came late (154 ms for a 100 ms interval): still drawn from 0
    const steps = sampleSteps(
      [154 * ms, 200 * ms, 280 * ms],
      [10, null, 30],
      0
    );
    expect(steps).toEqual([
      { t0: 0, t1: 154 * ms, value: 10 },
      { t0: 200 * ms, t1: 280 * ms, value: 30 }
    ]);
  });
  it("in a window zoomed in, starts at the window's start", () => {
    expect(sampleSteps([1300 * ms, 1400 * ms], [1, 2], 1250 * ms)[0].t0).toBe(
      1250 * ms
    );
  });
  it("starts a trace's metrics (no sampler) one gap before their first sample", () => {
    expect(sampleSteps([300 * ms, 400 * ms], [1, 2], null)[0].t0).toBe(
      200 * ms
    );
    expect(sampleSteps([300 * ms], [1], null)[0].t0).toBe(300 * ms);
  });
  it('finds the value under the pointer, also between two far samples', () => {
    const steps = sampleSteps([100 * ms, 200 * ms], [10, 20], 0);
    expect(stepAt(steps, 50 * ms)?.value).toBe(10);
    expect(stepAt(steps, 150 * ms)?.value).toBe(20);
    expect(stepAt(steps, 250 * ms)).toBeNull();
  });
});

describe('a run too short to chart', () => {
  it('says so once instead of drawing empty charts', () => {
    expect(shortRunNote(0, 73e6, 0.1, [])).toBe(
      'Metrics: no samples in 73 ms (sampled every 100 ms).'
    );
    expect(shortRunNote(1, 73e6, 0.1, ['CPU total 98 %'])).toBe(
      'Metrics: one sample in 73 ms (sampled every 100 ms), no chart: CPU total 98 %.'
    );
    expect(shortRunNote(2, 300e6, 0.1, [])).toBeNull();
  });
});

describe("charts of a run's series", () => {
  const s = (key: string, group: string, unit: string): IMetricSeries => ({
    key,
    label: key,
    unit,
    group,
    t: [],
    mean: [],
    min: [],
    max: []
  });
  it('gives each memory series its own chart, CPU one chart for all cores', () => {
    const charts = chartsOf([
      s('cpu.total', 'cpu', '%'),
      s('cpu.core0', 'cpu', '%'),
      s('mem.rss', 'memory', 'bytes'),
      s('mem.used', 'memory', 'bytes'),
      s('disk.read', 'io', 'bytes/s')
    ]);
    expect(charts.map(c => [c.key, c.series.length])).toEqual([
      ['cpu', 2],
      ['memory', 1],
      ['memory:mem.used', 1],
      ['io', 1]
    ]);
  });
});

describe('metricsWindow', () => {
  it('pads a narrow view so the samples around it are fetched', () => {
    const w = metricsWindow({ t0: 1e9, t1: 1e9 + 1e6 }, 500);
    expect(w.t0).toBe(1e9 - 250e6);
    expect(w.t1).toBe(1e9 + 1e6 + 250e6);
    expect(w.width).toBe(2000); // capped at 4 × the plot width
  });
  it('pads a wide view by half its span and keeps one point per pixel', () => {
    const w = metricsWindow({ t0: 2e9, t1: 4e9 }, 800);
    expect(w).toEqual({ t0: 1e9, t1: 5e9, width: 1600 });
  });
  it('never asks before the run start', () => {
    expect(metricsWindow({ t0: 0, t1: 1e9 }, 100).t0).toBe(0);
  });
});
