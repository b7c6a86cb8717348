import {
  formatDuration,
  formatSeconds,
  formatTick,
  niceStep,
  ticks
} from '../../util/timeaxis';

describe('formatDuration', () => {
  it('picks the largest unit that fits, three significant digits', () => {
    expect(formatDuration(0)).toBe('0 ns');
    expect(formatDuration(512)).toBe('512 ns');
    expect(formatDuration(100)).toBe('100 ns');
    expect(formatDuration(430e6)).toBe('430 ms');
    expect(formatDuration(2.5e6)).toBe('2.5 ms');
    expect(formatDuration(2e9)).toBe('2 s');
    expect(formatDuration(1234)).toBe('1.23 µs');
    expect(formatDuration(12_345_678)).toBe('12.3 ms');
    expect(formatDuration(1_500_000_000)).toBe('1.5 s');
    expect(formatDuration(90e9)).toBe('1 min 30.0 s');
    // rounding residue of inclusive minus children is no time at all
    expect(formatSeconds(3.8e-17)).toBe('0 ns');
    expect(formatDuration(0.7)).toBe('<1 ns');
  });
  it('formats seconds from the call tree the same way', () => {
    expect(formatSeconds(0.0025)).toBe('2.5 ms');
  });
});

describe('niceStep', () => {
  it('is 1, 2 or 5 times a power of ten', () => {
    for (const span of [7, 130, 9_999, 1e6 + 3, 4.2e9]) {
      const step = niceStep(span, 8);
      const m = step / Math.pow(10, Math.floor(Math.log10(step)));
      expect([1, 2, 5]).toContain(Math.round(m));
      // about 8 ticks: between 4 and 20
      expect(span / step).toBeGreaterThan(3);
      expect(span / step).toBeLessThan(21);
    }
  });
});

describe('ticks', () => {
  it('places ticks inside the window at their pixel positions', () => {
    const t = ticks(0, 1e9, 1000, 100);
    expect(t.length).toBeGreaterThanOrEqual(5);
    expect(t[0].t).toBe(0);
    expect(t[0].label).toBe('0.0 s');
    expect(t[1].label).toBe('0.1 s');
    for (const tick of t) {
      expect(tick.x).toBeCloseTo((tick.t / 1e9) * 1000, 6);
      expect(tick.t).toBeGreaterThanOrEqual(0);
      expect(tick.t).toBeLessThanOrEqual(1e9);
    }
    const spacing = t[1].x - t[0].x;
    expect(spacing).toBeGreaterThanOrEqual(100 * 0.5);
  });
  it('starts at the first multiple of the step in a zoomed window', () => {
    const t = ticks(1_234_567, 1_334_567, 500, 100);
    const step = t[1].t - t[0].t;
    expect(t[0].t % step).toBe(0);
    expect(t[0].t).toBeGreaterThanOrEqual(1_234_567);
    expect(t[0].label).toBe('1.24 ms');
  });
  it('returns nothing for an empty window', () => {
    expect(ticks(5, 5, 100)).toEqual([]);
    expect(ticks(0, 10, 0)).toEqual([]);
  });
});

describe('formatTick', () => {
  it('uses the unit of the step and only the decimals it needs', () => {
    expect(formatTick(2_000_000, 1_000_000)).toBe('2 ms');
    expect(formatTick(2_500_000, 500_000)).toBe('2.5 ms');
    expect(formatTick(1_230_000_000, 10_000_000)).toBe('1.23 s');
    expect(formatTick(40, 20)).toBe('40 ns');
    expect(formatTick(3_000, 1_000)).toBe('3 µs');
  });
});
