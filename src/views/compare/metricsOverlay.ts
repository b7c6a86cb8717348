/**
 * Two runs' system metrics on one chart per group (CPU, memory, I/O, network, GPU): each
 * group's first series (the total) of run A dashed, of run B solid, on the shared axis of
 * the Compare view's timelines (times counted from each run's cells' start).
 */
import { Widget } from '@lumino/widgets';
import type { IMetricSeries, IMetrics } from '../../api/traceTypes';
import {
  cssVar,
  currentTheme,
  seriesColor,
  hiDpiContext,
  observeTheme
} from '../../util/colors';
import { el } from '../../util/dom';
import { formatValue } from '../metrics/format';
import { tickLabels, yRange } from '../metrics/scale';
import {
  IMetricRow,
  MetricsLoader,
  metricRow,
  metricsWindow
} from '../metrics/metricsView';
import { WindowFetcher } from '../timeline/fetcher';
import type { IView } from '../timeline/projection';
import { toRun } from './sharedAxis';

const GROUPS: [string, string][] = [
  ['cpu', 'CPU'],
  ['memory', 'Memory'],
  ['io', 'I/O'],
  ['network', 'Network'],
  ['gpu', 'GPU']
];
const HEIGHT = 64;

interface ISide {
  offset: number;
  data: IMetrics | null;
  fetcher: WindowFetcher<IMetrics> | null;
}

export class MetricsOverlay extends Widget {
  constructor(
    loadA: MetricsLoader | null,
    loadB: MetricsLoader | null,
    offsetA: number,
    offsetB: number
  ) {
    super();
    this.addClass('jp-scorep-metrics');
    this.addClass('jp-scorep-compare-metrics');
    const side = (load: MetricsLoader | null, offset: number): ISide => {
      const s: ISide = { offset, data: null, fetcher: null };
      if (load) {
        s.fetcher = new WindowFetcher<IMetrics>(
          load,
          data => {
            s.data = data;
            this.render();
          },
          error => {
            this.notes.textContent = `Metrics: ${error.message}`;
          }
        );
      }
      return s;
    };
    this.a = side(loadA, offsetA);
    this.b = side(loadB, offsetB);
    for (const [key, title] of GROUPS) {
      const row = metricRow(key, title);
      this.node.appendChild(row.row);
      this.rows.set(key, row);
    }
    this.notes = el('div', 'jp-scorep-metrics-notes');
    if (!loadA || !loadB) {
      this.notes.textContent = `Run ${loadA ? 'B' : 'A'} has no metric samples.`;
    }
    this.node.appendChild(this.notes);
    this.themeObserver = observeTheme(() => this.render());
  }

  /** Follow the timelines: `view` on the shared axis, `width` the plot's px. */
  setView(view: IView, width: number): void {
    this.view = view;
    this.width = width;
    this.render();
    if (width > 0) {
      for (const s of [this.a, this.b]) {
        s.fetcher?.request(metricsWindow(toRun(view, s.offset), width));
      }
    }
  }

  dispose(): void {
    this.a.fetcher?.dispose();
    this.b.fetcher?.dispose();
    this.themeObserver.disconnect();
    super.dispose();
  }

  private render(): void {
    if (this.width <= 0) {
      return;
    }
    const theme = currentTheme();
    const bg = cssVar('--jp-layout-color0', '#fff', this.node);
    const grid = cssVar('--jp-border-color2', '#ccc', this.node);
    const text = cssVar('--jp-ui-font-color2', '#666', this.node);
    const font = cssVar('--jp-ui-font-family', 'sans-serif', this.node);
    for (const [key, title] of GROUPS) {
      const entry = this.rows.get(key)!;
      const sa = this.a.data?.series.find(s => s.group === key) ?? null;
      const sb = this.b.data?.series.find(s => s.group === key) ?? null;
      entry.row.hidden = !sa && !sb;
      if (!sa && !sb) {
        continue;
      }
      const unit = (sb ?? sa)!.unit;
      const ctx = hiDpiContext(entry.canvas, this.width, HEIGHT);
      if (!ctx) {
        continue;
      }
      const w = this.width;
      ctx.fillStyle = bg;
      ctx.fillRect(0, 0, w, HEIGHT);
      ctx.strokeStyle = grid;
      ctx.strokeRect(0.5, 0.5, w - 1, HEIGHT - 1);
      const same = [sa, sb].filter(
        (s): s is IMetricSeries => s !== null && s.unit === unit
      );
      // memory over the two runs' own range, as in a run's charts (scale.ts)
      const range = yRange(
        same.flatMap(s => s.mean),
        unit
      );
      const span = this.view.t1 - this.view.t0;
      const y = (v: number) =>
        HEIGHT - 2 - ((v - range.lo) / (range.hi - range.lo)) * (HEIGHT - 14);
      const color = seriesColor(0, theme);
      const draw = (
        s: IMetricSeries | null,
        offset: number,
        dashed: boolean
      ) => {
        if (!s || s.unit !== unit) {
          return;
        }
        const x = (t: number) => ((t - offset - this.view.t0) / span) * w;
        ctx.strokeStyle = color;
        ctx.globalAlpha = dashed ? 0.75 : 1;
        ctx.lineWidth = dashed ? 1.25 : 1.5;
        ctx.setLineDash(dashed ? [4, 3] : []);
        ctx.beginPath();
        let started = false;
        for (let j = 0; j < s.t.length; j++) {
          const v = s.mean[j];
          if (v === null || !Number.isFinite(v)) {
            started = false;
            continue;
          }
          if (started) {
            ctx.lineTo(x(s.t[j]), y(v));
          } else {
            ctx.moveTo(x(s.t[j]), y(v));
            started = true;
          }
        }
        ctx.stroke();
        ctx.setLineDash([]);
        ctx.globalAlpha = 1;
      };
      draw(sa, this.a.offset, true);
      draw(sb, this.b.offset, false);
      ctx.font = `10px ${font}`;
      ctx.textBaseline = 'top';
      ctx.fillStyle = text;
      const label = `${(sb ?? sa)!.label}: A dashed, B solid`;
      ctx.fillText(label, 4, 2);
      const [low, , high] = tickLabels(range, unit);
      ctx.fillText(high, w - ctx.measureText(high).width - 4, 2);
      ctx.textBaseline = 'bottom';
      ctx.fillText(low, w - ctx.measureText(low).width - 4, HEIGHT - 2);
      const mean = (s: IMetricSeries | null) => {
        const v = (s?.mean ?? []).filter(
          (m): m is number => m !== null && Number.isFinite(m)
        );
        return v.length ? v.reduce((p, q) => p + q, 0) / v.length : NaN;
      };
      const words = `${title}: run A ${formatValue(mean(sa), unit)}, run B ${formatValue(mean(sb), unit)} on average in view`;
      entry.canvas.setAttribute('aria-label', words);
      entry.label.title = words;
    }
  }

  private readonly a: ISide;
  private readonly b: ISide;
  private view: IView = { t0: 0, t1: 1 };
  private width = 0;
  private readonly rows = new Map<string, IMetricRow>();
  private readonly notes: HTMLDivElement;
  private readonly themeObserver: MutationObserver;
}
