/**
 * System metrics (CPU, memory, I/O, network, GPU) as canvas charts on the timeline's time axis.
 * Each chart follows the timeline's view; the data for the view is fetched (one request in flight,
 * the newest view next) with width = plot px, so the server returns at most one bucket (mean,
 * min, max) per pixel.
 */
import { Widget } from '@lumino/widgets';
import type { IMetricSeries, IMetrics } from '../api';
import {
  cssVar,
  currentTheme,
  groupColor,
  hiDpiContext,
  observeTheme
} from '../colors';
import { el } from '../dom';
import type { IView } from '../timeline/projection';
import { IWindowRequest, WindowFetcher } from '../timeline/fetcher';
import { formatValue, yMax } from './format';

const GROUPS: { key: string; title: string }[] = [
  { key: 'cpu', title: 'CPU' },
  { key: 'memory', title: 'Memory' },
  { key: 'io', title: 'I/O' },
  { key: 'network', title: 'Network' },
  { key: 'gpu', title: 'GPU' }
];

const CHART_HEIGHT = 64;

export type MetricsLoader = (
  request: IWindowRequest,
  signal: AbortSignal
) => Promise<IMetrics>;

export class MetricsView extends Widget {
  constructor(load: MetricsLoader) {
    super();
    this.addClass('jp-scorep-metrics');
    this.notes = el('div', 'jp-scorep-metrics-notes');
    this.fetcher = new WindowFetcher<IMetrics>(
      load,
      data => {
        this.data = data;
        this.render();
      },
      error => {
        this.notes.textContent = `Metrics: ${error.message}`;
      }
    );
    for (const g of GROUPS) {
      const row = metricRow(g.key, g.title);
      this.node.appendChild(row.row);
      this.rows.set(g.key, row);
    }
    this.node.appendChild(this.notes);
    this.themeObserver = observeTheme(() => this.render());
  }

  /** Follow the timeline: redraw now with what we have, fetch the new window shortly. */
  setView(view: IView, width: number): void {
    this.view = view;
    this.width = width;
    this.render();
    if (width > 0) {
      this.fetcher.request(metricsWindow(view, width));
    }
  }

  dispose(): void {
    this.fetcher.dispose();
    this.themeObserver.disconnect();
    super.dispose();
  }

  private render(): void {
    const data = this.data;
    if (!data || this.width <= 0) {
      return;
    }
    this.notes.textContent = data.notes.join(' ');
    this.notes.hidden = data.notes.length === 0;
    const theme = currentTheme();
    const bg = cssVar('--jp-layout-color0', '#fff', this.node);
    const grid = cssVar('--jp-border-color2', '#ccc', this.node);
    const text = cssVar('--jp-ui-font-color2', '#666', this.node);
    const font = cssVar('--jp-ui-font-family', 'sans-serif', this.node);
    for (const g of GROUPS) {
      const entry = this.rows.get(g.key)!;
      const series = data.series.filter(s => s.group === g.key);
      entry.row.hidden = series.length === 0;
      if (series.length === 0) {
        continue;
      }
      this.drawChart(entry.canvas, series, { theme, bg, grid, text, font });
      const last = series
        .map(s => `${s.label}: ${formatValue(mean(s.mean), s.unit)} mean`)
        .join(', ');
      entry.canvas.setAttribute('aria-label', `${g.title} over time. ${last}`);
      entry.label.title = last;
    }
  }

  private drawChart(
    canvas: HTMLCanvasElement,
    series: IMetricSeries[],
    c: {
      theme: 'light' | 'dark';
      bg: string;
      grid: string;
      text: string;
      font: string;
    }
  ): void {
    const width = this.width;
    const height = CHART_HEIGHT;
    const ctx = hiDpiContext(canvas, width, height);
    if (!ctx) {
      return;
    }
    ctx.fillStyle = c.bg;
    ctx.fillRect(0, 0, width, height);
    ctx.strokeStyle = c.grid;
    ctx.strokeRect(0.5, 0.5, width - 1, height - 1);
    // one y scale per unit; the first series' unit labels the axis
    const unit = series[0].unit;
    const same = series.filter(s => s.unit === unit);
    const top = yMax(
      same.flatMap(s => s.max),
      unit
    );
    const span = this.view.t1 - this.view.t0;
    const x = (t: number) => ((t - this.view.t0) / span) * width;
    const y = (v: number) => height - 2 - (v / top) * (height - 14);
    same.forEach((s, i) => {
      // the total first and strongest; per-core and secondary series lighter
      const color = groupColor(`${s.group}:${i}`, c.theme).line;
      ctx.fillStyle = color;
      ctx.globalAlpha = 0.18;
      ctx.beginPath();
      tracePolyline(ctx, s.t, s.max, x, y);
      for (let j = s.t.length - 1; j >= 0; j--) {
        ctx.lineTo(x(s.t[j]), y(s.min[j]));
      }
      ctx.closePath();
      ctx.fill();
      ctx.globalAlpha = 1;
      ctx.strokeStyle = color;
      ctx.lineWidth = i === 0 ? 1.5 : 1;
      ctx.beginPath();
      tracePolyline(ctx, s.t, s.mean, x, y);
      ctx.stroke();
    });
    // legend: each series' label in its line colour
    ctx.font = `10px ${c.font}`;
    ctx.textBaseline = 'top';
    let lx = 4;
    same.slice(0, 6).forEach((s, i) => {
      const label = i === 0 ? s.label : `· ${s.label}`;
      ctx.fillStyle = groupColor(`${s.group}:${i}`, c.theme).line;
      ctx.fillText(label, lx, 2);
      lx += ctx.measureText(label).width + 6;
    });
    if (same.length > 6) {
      ctx.fillStyle = c.text;
      ctx.fillText(`+${same.length - 6}`, lx, 2);
    }
    ctx.fillStyle = c.text;
    const topLabel = formatValue(top, unit);
    ctx.fillText(topLabel, width - ctx.measureText(topLabel).width - 4, 2);
  }

  private data: IMetrics | null = null;
  private view: IView = { t0: 0, t1: 1 };
  private width = 0;
  private readonly rows = new Map<string, IMetricRow>();
  private readonly notes: HTMLDivElement;
  private readonly fetcher: WindowFetcher<IMetrics>;
  private readonly themeObserver: MutationObserver;
}

/**
 * The window to ask for: the view plus a margin on both sides, so that a view narrower than
 * the sampling interval still has the samples around it and the lines run through the chart
 * instead of leaving it empty. The width grows with the window to keep one point per pixel.
 */
/** One metric group's row: its label and its canvas (hidden until it has data). */
export interface IMetricRow {
  row: HTMLDivElement;
  canvas: HTMLCanvasElement;
  label: HTMLDivElement;
}

export function metricRow(key: string, title: string): IMetricRow {
  const row = el('div', 'jp-scorep-metric-row');
  row.dataset.group = key;
  row.hidden = true;
  const label = el('div', 'jp-scorep-metric-label', title);
  const canvas = el('canvas', 'jp-scorep-metric-canvas');
  canvas.setAttribute('role', 'img');
  canvas.setAttribute('aria-label', `${title} over time`);
  row.append(label, canvas);
  return { row, canvas, label };
}

export function metricsWindow(
  view: IView,
  width: number,
  minMarginNs = 250e6
): IWindowRequest {
  const span = Math.max(1, view.t1 - view.t0);
  const margin = Math.max(span * 0.5, minMarginNs);
  const t0 = Math.max(0, view.t0 - margin);
  const t1 = view.t1 + margin;
  const scaled = Math.round((width * (t1 - t0)) / span);
  return { t0, t1, width: Math.max(1, Math.min(scaled, 4 * width)) };
}

function mean(values: number[]): number {
  if (values.length === 0) {
    return NaN;
  }
  return values.reduce((a, b) => a + b, 0) / values.length;
}

/** Add the polyline through (t[j], v[j]) to the current path, starting a new subpath. */
function tracePolyline(
  ctx: CanvasRenderingContext2D,
  t: ArrayLike<number>,
  v: ArrayLike<number>,
  x: (t: number) => number,
  y: (v: number) => number
): void {
  for (let j = 0; j < t.length; j++) {
    if (j === 0) {
      ctx.moveTo(x(t[j]), y(v[j]));
    } else {
      ctx.lineTo(x(t[j]), y(v[j]));
    }
  }
}
