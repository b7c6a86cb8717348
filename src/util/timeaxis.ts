/**
 * Time axis: tick positions and human formatting of nanosecond times and durations.
 * Pure functions, so the canvas views and the tests share them.
 */

const UNITS: [number, string][] = [
  [1e9, 's'],
  [1e6, 'ms'],
  [1e3, 'µs'],
  [1, 'ns']
];

/** A duration in ns as "1.23 ms": three significant digits in the largest fitting unit. */
export function formatDuration(ns: number): string {
  if (!Number.isFinite(ns)) {
    return '–';
  }
  const abs = Math.abs(ns);
  if (abs < 0.5) {
    // e.g. an exclusive time that is inclusive minus children up to rounding
    return '0 ns';
  }
  if (abs < 1) {
    return '<1 ns';
  }
  if (abs >= 60e9) {
    const minutes = Math.floor(abs / 60e9);
    const seconds = (abs - minutes * 60e9) / 1e9;
    return `${ns < 0 ? '-' : ''}${minutes} min ${seconds.toFixed(1)} s`;
  }
  for (const [scale, unit] of UNITS) {
    if (abs >= scale || scale === 1) {
      const v = ns / scale;
      return `${trimNumber(v, 3)} ${unit}`;
    }
  }
  return `${ns} ns`;
}

/** Seconds (as the call tree reports them) formatted like {@link formatDuration}. */
export function formatSeconds(s: number): string {
  return formatDuration(s * 1e9);
}

/** A number with `digits` significant digits, without trailing zeros. */
export function trimNumber(v: number, digits: number): string {
  if (v === 0) {
    return '0';
  }
  const magnitude = Math.floor(Math.log10(Math.abs(v)));
  const decimals = Math.max(0, digits - 1 - magnitude);
  const text = v.toFixed(Math.min(decimals, 9));
  // strip trailing zeros of the fraction only: "2.50" → "2.5", but "430" stays
  return text.includes('.') ? text.replace(/\.?0+$/, '') : text;
}

/** The "nice" step (1, 2 or 5 × 10^k ns) giving about `target` ticks over `span` ns. */
export function niceStep(span: number, target: number): number {
  if (!(span > 0) || !(target > 0)) {
    return 1;
  }
  const raw = span / target;
  const pow = Math.pow(10, Math.floor(Math.log10(raw)));
  const m = raw / pow;
  const nice = m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10;
  return Math.max(1, nice * pow);
}

export interface ITick {
  /** time in ns since the run's start */
  t: number;
  /** position in CSS pixels from the left of the plot */
  x: number;
  label: string;
}

/**
 * Ticks for the window [t0, t1] drawn over `width` px, at least `minSpacing` px apart.
 * Labels share one unit chosen from the step, so "10 ms, 20 ms" rather than mixed units.
 */
export function ticks(
  t0: number,
  t1: number,
  width: number,
  minSpacing = 80
): ITick[] {
  const span = t1 - t0;
  if (!(span > 0) || !(width > 0)) {
    return [];
  }
  const step = niceStep(span, Math.max(1, Math.floor(width / minSpacing)));
  const first = Math.ceil(t0 / step) * step;
  const result: ITick[] = [];
  for (let t = first; t <= t1 + step * 1e-9; t += step) {
    result.push({
      t,
      x: ((t - t0) / span) * width,
      label: formatTick(t, step, Math.max(Math.abs(t0), Math.abs(t1)))
    });
    if (result.length > 1000) {
      break;
    }
  }
  return result;
}

/**
 * A tick label. The unit follows the magnitude of `ref` (the window's right edge, so all
 * labels of one axis share a unit), the decimals follow the step (as many as it needs).
 */
export function formatTick(t: number, step: number, ref = Math.abs(t)): string {
  let scale = 1;
  let unit = 'ns';
  for (const [s, u] of UNITS) {
    if (ref >= s) {
      scale = s;
      unit = u;
      break;
    }
  }
  const decimals = Math.max(0, Math.ceil(-Math.log10(step / scale) - 1e-9));
  const text = (t / scale).toFixed(Math.min(decimals, 6));
  return `${/^-0(\.0*)?$/.test(text) ? text.slice(1) : text} ${unit}`;
}
