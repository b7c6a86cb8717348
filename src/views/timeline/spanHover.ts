/**
 * The span under the pointer: its outline (an element over the canvas, so hovering moves it
 * and never repaints the canvas, where a full view repaints ~20,000 spans) and its tooltip
 * (what it is, how long, where its code is). It reads what is drawn through
 * {@link IHoverSource}.
 */
import type { IRegionInfo } from '../../api/traceTypes';
import { el } from '../../util/dom';
import { AXIS_HEIGHT } from './draw';
import { cellSourcesOf, tooltipLines } from './interaction';
import { showTooltip } from './overlays';
import { hitTest, IDrawList } from './projection';

/** What the hover reads of the timeline view: what is drawn, how, and of which regions. */
export interface IHoverSource {
  list(): IDrawList;
  rowHeight(): number;
  /** the plot's width in CSS pixels */
  width(): number;
  regions(): Record<string, IRegionInfo>;
}

export class SpanHover {
  constructor(private readonly source: IHoverSource) {
    this.tooltip = el('div', 'jp-scorep-tooltip');
    this.tooltip.setAttribute('role', 'tooltip');
    this.tooltip.hidden = true;
    this.box = el('div', 'jp-scorep-timeline-hover');
    this.box.hidden = true;
  }

  /** The pointer is at (x, y) of the canvas: outline the span there and show its tooltip. */
  pointAt(x: number, y: number): void {
    const list = this.source.list();
    const k = hitTest(list, this.source.rowHeight(), x, y - AXIS_HEIGHT);
    if (k !== this.hover) {
      this.hover = k;
      this.place();
    }
    if (k >= 0) {
      this.showTooltip(k, x, y);
    } else {
      this.hideTooltip();
    }
  }

  /** The pointer left the canvas: nothing is hovered. */
  leave(): void {
    this.hover = -1;
    this.hideTooltip();
    this.place();
  }

  /** Outline the hovered span of the drawn list (hidden when none). */
  place(): void {
    const k = this.hover;
    const box = this.box;
    const list = this.source.list();
    const width = this.source.width();
    if (k < 0 || k >= list.n) {
      box.hidden = true;
      return;
    }
    const left = Math.max(list.x[k], 0);
    const right = Math.min(list.x[k] + Math.max(list.w[k], 1), width);
    box.style.left = `${left}px`;
    box.style.top = `${AXIS_HEIGHT + list.y[k] + 1}px`;
    box.style.width = `${Math.max(right - left, 1) + 1}px`;
    box.style.height = `${this.source.rowHeight() - 2}px`;
    box.hidden = false;
  }

  hideTooltip(): void {
    this.tooltip.hidden = true;
  }

  private showTooltip(k: number, x: number, y: number): void {
    const list = this.source.list();
    const regions = this.source.regions();
    const id = list.region[k];
    const content = tooltipLines(
      regions[String(id)],
      id,
      list.start[k],
      list.end[k],
      list.count[k],
      cellSourcesOf(regions)
    );
    showTooltip(this.tooltip, content, x, y, this.source.width());
  }

  /** the hovered span's outline */
  readonly box: HTMLDivElement;
  readonly tooltip: HTMLDivElement;
  /** index of the hovered span in the drawn list, -1 when none */
  private hover = -1;
}
