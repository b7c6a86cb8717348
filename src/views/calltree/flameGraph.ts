/**
 * The call tree as a flame graph (an icicle, root on top): a box per call path, as wide as
 * its share of the root's inclusive time, coloured by its module as in the timeline; the
 * box under the pointer is named with its times.
 */
import { Widget } from '@lumino/widgets';
import type { ICallNode } from '../../api/traceTypes';
import {
  claimGroups,
  cssVar,
  currentTheme,
  groupColor,
  hiDpiContext,
  observeTheme
} from '../../util/colors';
import { el } from '../../util/dom';
import { formatSeconds } from '../../util/timeaxis';
import { flameBoxes, IFlameBox } from './bottomUp';

const ROW = 18;

export class FlameGraph extends Widget {
  constructor(root: ICallNode) {
    super();
    this.addClass('jp-scorep-flame');
    this.boxes = flameBoxes(root);
    claimGroups(this.boxes.map(b => b.group || '?'));
    this.canvas = el('canvas', 'jp-scorep-flame-canvas');
    this.canvas.setAttribute('role', 'img');
    this.canvas.setAttribute(
      'aria-label',
      `Flame graph of the call tree: ${this.boxes.length} call paths`
    );
    this.info = el('div', 'jp-scorep-hint jp-scorep-flame-info', ' ');
    this.node.append(this.canvas, this.info);
    this.canvas.addEventListener('mousemove', e => this.hover(e));
    this.canvas.addEventListener('mouseleave', () => {
      this.info.textContent = ' ';
    });
    this.themeObserver = observeTheme(() => this.draw());
    this.resize = new ResizeObserver(() => this.draw());
    this.resize.observe(this.node);
  }

  /** The boxes drawn (the flame graph's data, for tests). */
  get data(): IFlameBox[] {
    return this.boxes;
  }

  dispose(): void {
    this.themeObserver.disconnect();
    this.resize.disconnect();
    super.dispose();
  }

  protected onAfterAttach(): void {
    this.draw();
  }

  private draw(): void {
    const width = this.node.clientWidth;
    if (width <= 0) {
      return;
    }
    const depth = Math.max(0, ...this.boxes.map(b => b.depth)) + 1;
    const ctx = hiDpiContext(this.canvas, width, depth * ROW);
    if (!ctx) {
      return;
    }
    const theme = currentTheme();
    ctx.fillStyle = cssVar('--jp-layout-color0', '#fff', this.node);
    ctx.fillRect(0, 0, width, depth * ROW);
    ctx.font = `11px ${cssVar('--jp-ui-font-family', 'sans-serif', this.node)}`;
    ctx.textBaseline = 'middle';
    for (const b of this.boxes) {
      const x = b.x * width;
      const w = b.w * width;
      const c = groupColor(b.group || '?', theme);
      ctx.fillStyle = c.fill;
      ctx.fillRect(x, b.depth * ROW, Math.max(1, w - 1), ROW - 1);
      if (w > 30) {
        ctx.save();
        ctx.beginPath();
        ctx.rect(x, b.depth * ROW, w - 2, ROW);
        ctx.clip();
        ctx.fillStyle = c.text;
        ctx.fillText(b.name, x + 3, b.depth * ROW + ROW / 2);
        ctx.restore();
      }
    }
  }

  private hover(e: MouseEvent): void {
    const box = this.canvas.getBoundingClientRect();
    const fx = (e.clientX - box.left) / Math.max(1, box.width);
    const depth = Math.floor((e.clientY - box.top) / ROW);
    const hit = this.boxes.find(
      b => b.depth === depth && fx >= b.x && fx < b.x + b.w
    );
    this.info.textContent = hit
      ? `${hit.name}: ${formatSeconds(hit.incl_s)} inclusive (${(hit.w * 100).toFixed(1)} %), ${formatSeconds(hit.excl_s)} own`
      : ' ';
  }

  private readonly boxes: IFlameBox[];
  private readonly canvas: HTMLCanvasElement;
  private readonly info: HTMLDivElement;
  private readonly themeObserver: MutationObserver;
  private readonly resize: ResizeObserver;
}
