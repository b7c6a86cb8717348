/**
 * Painting the timeline canvas: lanes, spans, labels, the time ruler, selections and the
 * measured span. Colours come from JupyterLab's CSS variables, read when painting, so the
 * canvas follows light and dark themes. The hovered span's outline is not painted: it is an
 * element over the canvas (timelineView.ts), so moving the pointer never repaints.
 */
import type { IRegionInfo } from '../../api/traceTypes';
import { cssVar, groupColor, ThemeKind } from '../../util/colors';
import { IDrawList, ILayout, IView, timeToX } from './projection';
import { ITitlePlace, titlePlaces } from './laneTitles';
import { formatDuration, ticks } from '../../util/timeaxis';

export const AXIS_HEIGHT = 22;

export interface IThemeColors {
  theme: ThemeKind;
  background: string;
  text: string;
  muted: string;
  grid: string;
  accent: string;
  highlight: string;
  font: string;
}

export function readThemeColors(el: Element, theme: ThemeKind): IThemeColors {
  return {
    theme,
    background: cssVar(
      '--jp-layout-color0',
      theme === 'dark' ? '#111' : '#fff',
      el
    ),
    text: cssVar('--jp-ui-font-color1', theme === 'dark' ? '#eee' : '#222', el),
    muted: cssVar('--jp-ui-font-color2', '#888', el),
    grid: cssVar('--jp-border-color2', '#ccc', el),
    accent: cssVar('--jp-brand-color1', '#1976d2', el),
    highlight: cssVar('--jp-warn-color0', '#f57c00', el),
    font: cssVar('--jp-ui-font-family', 'sans-serif', el)
  };
}

export interface IPaintState {
  width: number;
  height: number;
  view: IView;
  layout: ILayout;
  list: IDrawList;
  regions: Record<string, IRegionInfo>;
  /** region ids to emphasise (a call-tree selection); empty = none */
  highlight: Set<number>;
  /** shift-drag selection in px */
  selection: [number, number] | null;
  /** alt/ctrl-drag measurement in px */
  measure: [number, number] | null;
  colors: IThemeColors;
  /** the time the ruler counts from (0: the run's start; the Compare view's shared axis
   * counts from the run's cells' start) */
  origin?: number;
  /** paints the plot instead of spans (the heat map of many ranks), below the overlays;
   * called with the origin at the plot's top left */
  plot?: (ctx: CanvasRenderingContext2D) => void;
}

/** Leave a 1 px gap after spans wide enough, so back-to-back calls stay distinguishable. */
function spanWidth(w: number): number {
  return w > 3 ? w - 1 : w;
}

function shortName(name: string): string {
  const i = name.lastIndexOf(':');
  return i >= 0 ? name.slice(i + 1) : name;
}

export function paint(ctx: CanvasRenderingContext2D, s: IPaintState): void {
  const { width, height, view, layout, list, colors } = s;
  ctx.fillStyle = colors.background;
  ctx.fillRect(0, 0, width, height);

  // ruler and grid
  ctx.font = `11px ${colors.font}`;
  ctx.textBaseline = 'middle';
  const origin = s.origin ?? 0;
  const tickList = ticks(view.t0 - origin, view.t1 - origin, width, 90);
  ctx.strokeStyle = colors.grid;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (const t of tickList) {
    const x = Math.round(t.x) + 0.5;
    ctx.moveTo(x, AXIS_HEIGHT - 6);
    ctx.lineTo(x, height);
  }
  ctx.moveTo(0, AXIS_HEIGHT - 0.5);
  ctx.lineTo(width, AXIS_HEIGHT - 0.5);
  ctx.stroke();
  ctx.fillStyle = colors.muted;
  for (const t of tickList) {
    // a label that would be cut at the right edge is left out
    if (t.x + 3 + ctx.measureText(t.label).width <= width) {
      ctx.fillText(t.label, t.x + 3, AXIS_HEIGHT / 2 - 1);
    }
  }

  // lane titles
  ctx.save();
  ctx.translate(0, AXIS_HEIGHT);
  // lanes scrolled partly above the plot (many ranks) stay off the ruler
  ctx.beginPath();
  ctx.rect(0, 0, width, height - AXIS_HEIGHT);
  ctx.clip();
  s.plot?.(ctx);
  ctx.fillStyle = colors.text;
  ctx.textBaseline = 'bottom';
  const titles = titlePlaces(layout);
  for (const title of titles) {
    if (!title.sticky) {
      ctx.fillText(title.name, 4, title.top + layout.laneGap - 2);
    }
  }

  // spans, batched by colour; a region's colour is worked out once per paint, not per span
  // (a full view holds ~20,000 spans of a few hundred regions)
  const rh = layout.rowHeight;
  const byColor = new Map<string, number[]>();
  const bucketOf = new Map<number, number[]>();
  const dimmed = s.highlight.size > 0;
  for (let k = 0; k < list.n; k++) {
    const id = list.region[k];
    let bucket = bucketOf.get(id);
    if (!bucket) {
      const info = s.regions[String(id)];
      const fill = groupColor(info?.group ?? '?', colors.theme).fill;
      bucket = byColor.get(fill);
      if (!bucket) {
        bucket = [];
        byColor.set(fill, bucket);
      }
      bucketOf.set(id, bucket);
    }
    bucket.push(k);
  }
  for (const [fill, ks] of byColor) {
    ctx.fillStyle = fill;
    ctx.globalAlpha = dimmed ? 0.3 : 1;
    for (const k of ks) {
      if (dimmed && s.highlight.has(list.region[k])) {
        continue;
      }
      ctx.fillRect(list.x[k], list.y[k] + 1, spanWidth(list.w[k]), rh - 2);
    }
    ctx.globalAlpha = 1;
    if (dimmed) {
      for (const k of ks) {
        if (s.highlight.has(list.region[k])) {
          ctx.fillRect(list.x[k], list.y[k] + 1, spanWidth(list.w[k]), rh - 2);
        }
      }
    }
  }
  if (dimmed) {
    ctx.strokeStyle = colors.highlight;
    ctx.lineWidth = 2;
    for (let k = 0; k < list.n; k++) {
      if (s.highlight.has(list.region[k])) {
        ctx.strokeRect(
          list.x[k],
          list.y[k] + 1,
          Math.max(list.w[k], 1),
          rh - 2
        );
      }
    }
  }

  // labels where they fit
  ctx.textBaseline = 'middle';
  const textColor = groupColor('', colors.theme).text;
  ctx.fillStyle = textColor;
  for (let k = 0; k < list.n; k++) {
    const w = list.w[k];
    if (w < 28) {
      continue;
    }
    const info = s.regions[String(list.region[k])];
    let label = shortName(info?.name ?? '?');
    if (list.count[k] > 1) {
      label += ` ×${list.count[k]}`;
    }
    const x = Math.max(list.x[k], 0) + 3;
    const room = Math.min(list.x[k] + w, width) - x - 2;
    if (room < 12) {
      continue;
    }
    if (ctx.measureText(label).width > room) {
      const fit = Math.max(
        1,
        Math.floor((room / ctx.measureText(label).width) * label.length) - 1
      );
      label = label.slice(0, fit) + '…';
    }
    ctx.fillText(label, x, list.y[k] + rh / 2);
  }

  // the top lane's title, kept at the plot's top over its rows (laneTitles.ts)
  for (const title of titles) {
    if (title.sticky) {
      paintStickyTitle(ctx, title, layout.laneGap, colors);
    }
  }

  ctx.restore();

  // shift-drag selection
  if (s.selection) {
    const [a, b] = s.selection;
    ctx.fillStyle = colors.accent;
    ctx.globalAlpha = 0.2;
    ctx.fillRect(Math.min(a, b), 0, Math.abs(b - a), height);
    ctx.globalAlpha = 1;
  }
  // alt/ctrl-drag measurement
  if (s.measure) {
    const [a, b] = s.measure;
    const x0 = Math.min(a, b);
    const x1 = Math.max(a, b);
    ctx.strokeStyle = colors.highlight;
    ctx.fillStyle = colors.highlight;
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(x0 + 0.5, 0);
    ctx.lineTo(x0 + 0.5, height);
    ctx.moveTo(x1 + 0.5, 0);
    ctx.lineTo(x1 + 0.5, height);
    ctx.moveTo(x0, AXIS_HEIGHT + 6);
    ctx.lineTo(x1, AXIS_HEIGHT + 6);
    ctx.stroke();
    const dt = ((x1 - x0) / width) * (view.t1 - view.t0);
    const label = formatDuration(dt);
    const lw = ctx.measureText(label).width + 8;
    const lx = Math.min(Math.max(0, (x0 + x1) / 2 - lw / 2), width - lw);
    ctx.fillRect(lx, AXIS_HEIGHT + 8, lw, 16);
    ctx.fillStyle = colors.background;
    ctx.textBaseline = 'middle';
    ctx.fillText(label, lx + 4, AXIS_HEIGHT + 16);
  }
}

/** A title over the rows it names: on a backdrop of the plot's background, so the spans
 * under it do not garble it. */
function paintStickyTitle(
  ctx: CanvasRenderingContext2D,
  title: ITitlePlace,
  gap: number,
  colors: IThemeColors
): void {
  const w = ctx.measureText(title.name).width + 6;
  ctx.globalAlpha = 0.85;
  ctx.fillStyle = colors.background;
  ctx.fillRect(1, title.top, w, gap);
  ctx.globalAlpha = 1;
  ctx.fillStyle = colors.text;
  ctx.textBaseline = 'bottom';
  ctx.fillText(title.name, 4, title.top + gap - 2);
}

/** Left edge of a time in px (re-exported for views that draw over the timeline). */
export { timeToX };
