/** Formatting metric values by unit. */

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
