/**
 * The launch → kernel link: clicking a span of the timeline (a kernel, copy or set on a
 * device lane, or the `cudaLaunchKernel` that started it on a host lane) asks the server
 * for the other ends of its launch links (`GET link`, the correlation id CUPTI gave the
 * launch) and draws a line from the span to each, over the canvas, like Perfetto's flow
 * arrows. Drawn in an SVG element over the canvas: selecting never repaints the spans.
 */
import type { ILink } from '../../api/traceTypes';
import type { IDrawList, ILane, ILayout, IView } from './projection';

export type LinkLoader = (location: number, start: number) => Promise<ILink[]>;

const SVG = 'http://www.w3.org/2000/svg';

/** The lane (location) a y (px, below the axis) falls in, or null. */
export function laneAt(layout: ILayout, y: number): ILane | null {
  for (const lane of layout.lanes) {
    const rows = lane.flatten ? 1 : lane.rows;
    if (y >= lane.y && y < lane.y + rows * layout.rowHeight) {
      return lane;
    }
  }
  return null;
}

export interface ISelectedSpan {
  location: number;
  start: number;
  end: number;
}

/** Where a span of `location` starting at `start` is drawn: its item when it is in the
 * list (exact depth), else its lane's first row. */
export function spanPoint(
  list: IDrawList,
  layout: ILayout,
  view: IView,
  width: number,
  location: number,
  start: number
): { x: number; y: number } | null {
  const lane = layout.lanes.find(l => l.id === location);
  if (!lane) {
    return null;
  }
  const rows = lane.flatten ? 1 : lane.rows;
  for (let k = 0; k < list.n; k++) {
    if (
      list.start[k] === start &&
      list.y[k] >= lane.y &&
      list.y[k] < lane.y + rows * layout.rowHeight
    ) {
      return { x: list.x[k], y: list.y[k] + layout.rowHeight / 2 };
    }
  }
  const span = view.t1 - view.t0;
  return {
    x: ((start - view.t0) / span) * width,
    y: lane.y + layout.rowHeight / 2
  };
}

export class LaunchLinks {
  constructor(private readonly load: LinkLoader) {
    this.svg = document.createElementNS(SVG, 'svg');
    this.svg.classList.add('jp-scorep-links');
    this.svg.setAttribute('aria-hidden', 'true');
    this.status = document.createElement('div');
    this.status.className = 'jp-scorep-links-status';
    this.status.setAttribute('aria-live', 'polite');
    this.status.hidden = true;
  }

  readonly svg: SVGSVGElement;
  readonly status: HTMLDivElement;

  /** The links of the clicked span (none: clears). */
  async select(span: ISelectedSpan | null, redraw: () => void): Promise<void> {
    const token = ++this.token;
    this.selected = span;
    this.links = [];
    this.say('');
    redraw();
    if (!span) {
      return;
    }
    try {
      const links = await this.load(span.location, span.start);
      if (token !== this.token) {
        return;
      }
      this.links = links;
      this.say(
        links.length
          ? links.length === 1
            ? `Linked (correlation ${links[0].correlation}): ${
                links[0].kind === 'launch'
                  ? 'the launch on the host'
                  : 'the work on the device'
              }.`
            : `Linked to ${links.length} activities on the device.`
          : ''
      );
    } catch {
      this.links = [];
    }
    redraw();
  }

  get count(): number {
    return this.links.length;
  }

  /** Lay the lines out for the current view (called after each draw). */
  place(
    list: IDrawList,
    layout: ILayout,
    view: IView,
    width: number,
    top: number,
    height: number
  ): void {
    const svg = this.svg;
    svg.setAttribute('width', String(width));
    svg.setAttribute('height', String(height));
    svg.style.top = `${top}px`;
    while (svg.firstChild) {
      svg.removeChild(svg.firstChild);
    }
    const span = this.selected;
    if (!span || !this.links.length) {
      svg.dataset.links = '0';
      return;
    }
    const from = spanPoint(
      list,
      layout,
      view,
      width,
      span.location,
      span.start
    );
    if (!from) {
      return;
    }
    let drawn = 0;
    for (const link of this.links) {
      const to = spanPoint(
        list,
        layout,
        view,
        width,
        link.location,
        link.start
      );
      if (!to) {
        continue;
      }
      const line = document.createElementNS(SVG, 'path');
      const midY = (from.y + to.y) / 2;
      line.setAttribute(
        'd',
        `M ${from.x} ${from.y} C ${from.x} ${midY}, ${to.x} ${midY}, ${to.x} ${to.y}`
      );
      line.classList.add('jp-scorep-link-line');
      svg.appendChild(line);
      for (const p of [from, to]) {
        const dot = document.createElementNS(SVG, 'circle');
        dot.setAttribute('cx', String(p.x));
        dot.setAttribute('cy', String(p.y));
        dot.setAttribute('r', '3');
        dot.classList.add('jp-scorep-link-end');
        svg.appendChild(dot);
      }
      drawn++;
    }
    svg.dataset.links = String(drawn);
  }

  private say(text: string): void {
    this.status.textContent = text;
    this.status.hidden = !text;
  }

  private selected: ISelectedSpan | null = null;
  private links: ILink[] = [];
  private token = 0;
}
