import { metricsWindow } from '../metrics/metricsView';
import { formatBytes, formatValue, yMax } from '../metrics/format';

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
  it('scales the y axis to 100 % or a round number above the data', () => {
    expect(yMax([12, 40], '%')).toBe(100);
    expect(yMax([130], '%')).toBe(130);
    expect(yMax([3.2e6], 'bytes')).toBe(5e6);
    expect(yMax([], 'bytes')).toBe(1);
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
