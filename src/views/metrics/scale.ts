/**
 * A metric chart's arithmetic, apart from the canvas: the y range and its ticks, where each
 * sample is drawn, and which sample holds the value at a time (the hover readout).
 *
 * Samples are drawn as steps, as Perfetto draws counter tracks: the sampler reads rates
 * (CPU %, bytes/s) over the interval that ends at a sample's time, so a sample's value
 * stands from the previous sample's time to its own. The sampler starts before the
 * measurement does (the kernel starts it before the tracer, and before a worker), so its
 * first sample covers the run from its start (0 on the metrics' axis) whatever the
 * scheduling delay of its first tick: the chart starts at the cell's start instead of one
 * interval or more into it, and a view narrower than an interval still shows the step
 * across it. Metrics read from a trace (no sampling interval) start at their first sample.
 */
import { formatValue } from './format';

/** A sample's value over [t0, t1] (ns since the run's start); null values are gaps. */
export interface IStep {
  t0: number;
  t1: number;
  value: number;
}

/**
 * The steps of one series: sample j covers (t[j-1], t[j]]. The first one covers from `from`
 * when the samples come from the sampler: the start of the window asked for (0: the run's
 * start; else the sample before it lies at or before the window's start); for a trace's
 * metrics (`from` null) from one gap earlier.
 */
export function sampleSteps(
  t: ArrayLike<number>,
  values: ArrayLike<number | null>,
  from: number | null
): IStep[] {
  const steps: IStep[] = [];
  for (let j = 0; j < t.length; j++) {
    const v = values[j];
    const before =
      j > 0
        ? t[j - 1]
        : from !== null
          ? Math.min(from, t[0])
          : t.length > 1
            ? t[0] - (t[1] - t[0])
            : t[0];
    if (v === null || !Number.isFinite(v)) {
      continue;
    }
    steps.push({ t0: Math.max(0, before), t1: t[j], value: v });
  }
  return steps;
}

/** The step that holds time `at`, or null when no sample covers it. */
export function stepAt(steps: IStep[], at: number): IStep | null {
  // steps are sorted by time: binary search for the first that ends at or after `at`
  let lo = 0;
  let hi = steps.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (steps[mid].t1 < at) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  const s = steps[lo];
  return s !== undefined && s.t0 <= at ? s : null;
}

/** A chart's y range with its tick values (bottom, middle, top). */
export interface IYRange {
  lo: number;
  hi: number;
  ticks: number[];
}

const isBytes = (unit: string) => ['bytes', 'B'].includes(unit.trim());

/** A round step near `raw`: 1, 2, 2.5 or 5 times a power of ten (of 1024 for bytes). */
function niceStep(raw: number, bytes: boolean): number {
  if (!(raw > 0)) {
    return 1;
  }
  let base = 1;
  if (bytes) {
    while (raw / base >= 1024) {
      base *= 1024;
    }
  }
  const scaled = raw / base;
  const pow = Math.pow(10, Math.floor(Math.log10(scaled)));
  for (const m of [1, 2, 2.5, 5, 10]) {
    if (m * pow >= scaled) {
      return m * pow * base;
    }
  }
  return 10 * pow * base;
}

/**
 * The y range of a chart of the given values in `unit`. Percentages run from 0 to 100 (or
 * above when the data go above); rates (bytes/s and others) from 0 to a round number above
 * the data; amounts in bytes (memory) over the run's own range, so that a growth of a few
 * hundred MiB on a machine of many GiB is a slope, not a flat line near the top.
 */
export function yRange(values: (number | null)[], unit: string): IYRange {
  let min = Infinity;
  let max = -Infinity;
  for (const v of values) {
    if (v !== null && Number.isFinite(v)) {
      min = Math.min(min, v);
      max = Math.max(max, v);
    }
  }
  if (!Number.isFinite(min)) {
    min = 0;
    max = 0;
  }
  const bytes = isBytes(unit);
  let lo = 0;
  let hi: number;
  if (unit.trim() === '%') {
    hi = Math.max(100, Math.ceil(max / 10) * 10);
  } else if (bytes && max > 0) {
    const span = max - min;
    // a flat series gets a band one round step either side of it
    const step = niceStep(
      span > 0 ? span / 2 : Math.max(1024, max * 0.01),
      true
    );
    const pad = span > 0 ? 0 : 1;
    lo = Math.max(0, (Math.floor(min / step) - pad) * step);
    hi = (Math.ceil(max / step) + pad) * step;
  } else {
    // bytes/s: at least 1 KiB/s, so that an idle disk's ticks read 0, 512 B/s, 1 KiB/s
    const floor = ['B/s', 'bytes/s'].includes(unit.trim()) ? 1024 : 0;
    hi = Math.max(floor, max > 0 ? niceStep(max, false) : 1);
  }
  return { lo, hi, ticks: [lo, (lo + hi) / 2, hi] };
}

/** The labels of a range's ticks in its unit ("0 %", "50 %", "100 %"). */
export function tickLabels(range: IYRange, unit: string): string[] {
  return range.ticks.map(v =>
    unit.trim() === '%' ? `${Math.round(v)} %` : formatValue(v, unit)
  );
}

/** What the chart shows instead of charts when the run is too short to chart. */
export function shortRunNote(
  samples: number,
  runNs: number,
  intervalS: number | null | undefined,
  values: string[]
): string | null {
  if (samples >= 2) {
    return null;
  }
  const ms = `${Math.max(0, Math.round(runNs / 1e6))} ms`;
  const every = intervalS
    ? ` (sampled every ${Math.round(intervalS * 1000)} ms)`
    : '';
  if (samples === 0) {
    return `Metrics: no samples in ${ms}${every}.`;
  }
  return `Metrics: one sample in ${ms}${every}, no chart: ${values.join(', ')}.`;
}
