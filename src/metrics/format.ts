/** Formatting metric values by unit, and choosing a chart's y range. */

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

export function formatBytes(v: number): string {
  let i = 0;
  let x = Math.abs(v);
  while (x >= 1024 && i < BYTE_UNITS.length - 1) {
    x /= 1024;
    i++;
  }
  const digits = x >= 100 || i === 0 ? 0 : x >= 10 ? 1 : 2;
  return `${v < 0 ? '-' : ''}${x.toFixed(digits)} ${BYTE_UNITS[i]}`;
}

/** A metric value with its unit: "%", "bytes", "bytes/s" (also "B", "B/s"), or anything. */
export function formatValue(v: number, unit: string): string {
  if (!Number.isFinite(v)) {
    return '–';
  }
  const u = unit.trim();
  if (u === '%') {
    return `${v.toFixed(v < 10 ? 1 : 0)} %`;
  }
  if (u === 'bytes' || u === 'B') {
    return formatBytes(v);
  }
  if (u === 'bytes/s' || u === 'B/s') {
    return `${formatBytes(v)}/s`;
  }
  const text = Math.abs(v) >= 100 ? v.toFixed(0) : v.toPrecision(3);
  return u ? `${text} ${u}` : text;
}

/** Upper end of a chart's y axis: 100 for percentages, else the data max rounded up. */
export function yMax(values: number[], unit: string): number {
  let max = 0;
  for (const v of values) {
    if (Number.isFinite(v) && v > max) {
      max = v;
    }
  }
  if (unit.trim() === '%') {
    return Math.max(100, max);
  }
  if (max <= 0) {
    return 1;
  }
  const pow = Math.pow(10, Math.floor(Math.log10(max)));
  for (const m of [1, 2, 2.5, 5, 10]) {
    if (m * pow >= max) {
      return m * pow;
    }
  }
  return 10 * pow;
}
