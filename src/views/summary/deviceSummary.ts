/**
 * The Summary tab's accelerators section (GET summary's `device`, docs/API.md GET device):
 * the device's busy share and its idle time by cause as one bar, the top kernels and the
 * operators that launched them by device time, the copies each way, and the CPU-GPU
 * overlap. Pure DOM from the analysis; nothing to fetch.
 */
import type { IDeviceAnalysis } from '../../api/analysisTypes';
import { el } from '../../util/dom';
import { formatBytes } from '../metrics/format';
import { formatSeconds } from '../../util/timeaxis';

const CAUSES: [keyof IDeviceAnalysis['idle_by_cause'], string][] = [
  ['input', 'idle: input pipeline'],
  ['sync', 'idle: synchronisation'],
  ['host', 'idle: waiting for the host'],
  ['other', 'idle: other']
];

/** A copy rate: GB/s, or MB/s below one (a 4-byte loss.item()). */
export function formatRate(gbPerS: number | null): string {
  if (gbPerS === null) {
    return '–';
  }
  return gbPerS >= 1
    ? `${gbPerS.toFixed(2)} GB/s`
    : `${(gbPerS * 1000).toFixed(gbPerS >= 0.01 ? 0 : 2)} MB/s`;
}

function pct(v: number): string {
  return `${v.toFixed(v >= 10 ? 0 : 1)} %`;
}

/** The bar: busy, then each idle cause, as shares of the cell. */
export function shares(
  a: IDeviceAnalysis
): { key: string; label: string; pct: number }[] {
  const out = [{ key: 'busy', label: 'busy', pct: a.busy_pct }];
  for (const [key, label] of CAUSES) {
    out.push({ key, label, pct: a.idle_by_cause_pct[key] ?? 0 });
  }
  return out;
}

function table(
  caption: string,
  head: string[],
  rows: (string | number)[][]
): HTMLTableElement {
  const t = el('table');
  t.setAttribute('aria-label', caption);
  const tr = el('tr');
  for (const h of head) {
    tr.appendChild(el('th', '', h));
  }
  t.appendChild(tr);
  for (const row of rows) {
    const r = el('tr');
    row.forEach((cell, i) => {
      const td = el('td', i > 0 ? 'jp-scorep-num' : '', String(cell));
      if (i === 0) {
        td.title = String(cell);
      }
      r.appendChild(td);
    });
    t.appendChild(r);
  }
  return t;
}

export function renderDeviceSummary(a: IDeviceAnalysis): HTMLElement {
  const root = el('section', 'jp-scorep-device');
  root.setAttribute('aria-label', 'Accelerators');
  const streams = a.streams.map(s => s.name).join(', ');
  root.appendChild(
    el(
      'h3',
      'jp-scorep-section-title',
      `GPU: busy ${pct(a.busy_pct)}, idle ${pct(a.idle_pct)} of the cell (${formatSeconds(a.cell_s)}) · ${streams}`
    )
  );
  const bar = el('div', 'jp-scorep-device-bar');
  bar.setAttribute('role', 'img');
  const parts = shares(a);
  bar.setAttribute(
    'aria-label',
    parts.map(p => `${p.label} ${pct(p.pct)}`).join(', ')
  );
  const legend = el('div', 'jp-scorep-device-legend');
  for (const p of parts) {
    if (p.pct <= 0) {
      continue;
    }
    const seg = el('span', `jp-scorep-device-${p.key}`);
    seg.style.width = `${Math.max(p.pct, 0.3)}%`;
    seg.title = `${p.label}: ${pct(p.pct)}`;
    bar.appendChild(seg);
    const item = el('span');
    item.appendChild(el('i', `jp-scorep-device-${p.key}`));
    item.appendChild(document.createTextNode(`${p.label} ${pct(p.pct)}`));
    legend.appendChild(item);
  }
  root.append(bar, legend);
  const facts = [
    `DataLoader __next__ ${pct(a.input_pipeline_pct)} of the cell`,
    `host waiting in synchronising calls ${formatSeconds(a.host_sync_s)}`,
    a.overlap_pct_of_busy === null
      ? ''
      : `CPU-GPU overlap ${pct(a.overlap_pct_of_busy)} of the busy time`,
    `${a.kernels} kernels, ${a.linked} linked to their launch`
  ].filter(Boolean);
  root.appendChild(el('div', 'jp-scorep-device-legend', facts.join(' · ')));
  if (a.top_kernels.length) {
    root.appendChild(
      table(
        'Top kernels by device time',
        ['Kernel', 'Device time', 'Share', 'Launches'],
        a.top_kernels.map(k => [
          k.name,
          formatSeconds(k.device_s),
          pct(k.pct),
          k.count
        ])
      )
    );
  }
  if (a.top_operators.length) {
    root.appendChild(
      table(
        'Operators by device time',
        ['Operator', 'Device time', 'Share', 'Device activities'],
        a.top_operators.map(o => [
          o.name,
          formatSeconds(o.device_s),
          pct(o.pct),
          o.activities
        ])
      )
    );
  }
  const copies = Object.entries(a.memcpy);
  if (copies.length || a.memset.count) {
    const rows: (string | number)[][] = copies.map(([dir, c]) => [
      `memcpy ${dir}`,
      c.bytes ? formatBytes(c.bytes) : '–',
      formatSeconds(c.seconds),
      formatRate(c.rate_gb_s),
      c.count
    ]);
    if (a.memset.count) {
      rows.push([
        'memset',
        '–',
        formatSeconds(a.memset.seconds),
        '–',
        a.memset.count
      ]);
    }
    root.appendChild(
      table('Memory copies', ['Copies', 'Bytes', 'Time', 'Rate', 'Count'], rows)
    );
  }
  return root;
}
