/**
 * The communication matrix of many ranks as a canvas (matrixBlocks.ts): senders down,
 * receivers across, rank ticks on both axes, a log colour scale legend, and a tooltip naming
 * the hovered block's senders, receivers, bytes and messages.
 */
import type { IRanks } from '../../api/analysisTypes';
import { cssVar, currentTheme, hiDpiContext } from '../../util/colors';
import { el } from '../../util/dom';
import { formatBytes } from '../metrics/format';
import { heatCss, heatLegend } from '../../util/heatScale';
import { showTooltip } from '../timeline/overlays';
import { MatrixMeasure } from './balanceAndTraffic';
import {
  blockAt,
  blockGrid,
  blockText,
  IBlockGrid,
  MATRIX_SCALE_FROM,
  matrixCells,
  paintBlocks,
  rankTicks
} from './matrixBlocks';

/** Room for the receivers' ticks above and the senders' ticks left of the matrix. */
const MARGIN = { left: 44, top: 28 };
export const MATRIX_PX = 512;

export function matrixCanvas(r: IRanks, measure: MatrixMeasure): HTMLElement {
  const wrap = el('div', 'jp-scorep-matrix-canvas');
  const cells = matrixCells(r);
  const grid = blockGrid(cells, MATRIX_PX);
  const px = MATRIX_PX;
  const width = MARGIN.left + px + 8;
  const height = MARGIN.top + px + 8;
  const canvas = el('canvas');
  canvas.setAttribute('role', 'img');
  canvas.setAttribute(
    'aria-label',
    `Communication matrix of ${grid.size} ranks: ${measure} sent from each rank (down) to ` +
      `each rank (across), ${grid.block > 1 ? `in blocks of ${grid.block} x ${grid.block} ranks` : 'one cell per pair'}.`
  );
  const tooltip = el('div', 'jp-scorep-tooltip');
  tooltip.setAttribute('role', 'tooltip');
  tooltip.hidden = true;
  const caption = el(
    'div',
    'jp-scorep-help',
    `Sender down, receiver across; ${
      grid.block > 1
        ? `each cell sums ${grid.block} x ${grid.block} ranks`
        : 'one cell per pair of ranks'
    }; ${cells.sender.length.toLocaleString('en-US')} pairs communicated.`
  );
  wrap.append(legend(grid, measure), caption, canvas, tooltip);
  wrap.dataset.block = String(grid.block);

  const paint = (): void => {
    const ctx = hiDpiContext(canvas, width, height);
    if (!ctx) {
      return;
    }
    const theme = currentTheme();
    const bg = cssVar(
      '--jp-layout-color0',
      theme === 'dark' ? '#111' : '#fff',
      wrap
    );
    const text = cssVar(
      '--jp-ui-font-color1',
      theme === 'dark' ? '#eee' : '#222',
      wrap
    );
    const border = cssVar('--jp-border-color2', '#ccc', wrap);
    const font = cssVar('--jp-ui-font-family', 'sans-serif', wrap);
    ctx.fillStyle = bg;
    ctx.fillRect(0, 0, width, height);
    ctx.fillStyle = heatCss(0, 'active', theme);
    ctx.fillRect(MARGIN.left, MARGIN.top, px, px);
    paintBlocks(ctx, grid, measure, theme, {
      x: MARGIN.left,
      y: MARGIN.top,
      px
    });
    ctx.strokeStyle = border;
    ctx.strokeRect(MARGIN.left - 0.5, MARGIN.top - 0.5, px + 1, px + 1);
    ctx.fillStyle = text;
    ctx.font = `11px ${font}`;
    const ticks = rankTicks(grid.size, px);
    ctx.textBaseline = 'bottom';
    ctx.textAlign = 'center';
    ctx.fillText('to rank →', MARGIN.left + px / 2, 12);
    for (const t of ticks) {
      ctx.fillText(String(t.rank), MARGIN.left + t.at, MARGIN.top - 3);
      ctx.fillRect(MARGIN.left + t.at, MARGIN.top - 3, 1, 3);
    }
    ctx.textBaseline = 'middle';
    ctx.textAlign = 'right';
    for (const t of ticks) {
      ctx.fillText(String(t.rank), MARGIN.left - 5, MARGIN.top + t.at);
      ctx.fillRect(MARGIN.left - 3, MARGIN.top + t.at, 3, 1);
    }
  };
  requestAnimationFrame(paint);
  canvas.addEventListener('pointermove', e => {
    const box = canvas.getBoundingClientRect();
    const x = e.clientX - box.left;
    const y = e.clientY - box.top;
    const hit = blockAt(grid, px, x - MARGIN.left, y - MARGIN.top);
    if (!hit) {
      tooltip.hidden = true;
      return;
    }
    showTooltip(
      tooltip,
      { title: blockText(hit), lines: blockLines(grid, hit) },
      x,
      y,
      width
    );
  });
  canvas.addEventListener('pointerleave', () => (tooltip.hidden = true));
  return wrap;
}

function blockLines(
  grid: IBlockGrid,
  hit: { senders: [number, number]; receivers: [number, number] }
): string[] {
  return grid.block > 1
    ? [
        `${hit.senders[1] - hit.senders[0] + 1} senders x ${hit.receivers[1] - hit.receivers[0] + 1} receivers summed`
      ]
    : [];
}

/** The colour scale: log from the smallest to the largest block. */
function legend(grid: IBlockGrid, measure: MatrixMeasure): HTMLElement {
  const max = grid.max[measure];
  const top =
    measure === 'bytes' ? formatBytes(max) : max.toLocaleString('en-US');
  return heatLegend({
    measure: 'active',
    theme: currentTheme(),
    from: MATRIX_SCALE_FROM * 255,
    low: measure === 'bytes' ? '1 B' : '1 message',
    high: `${top} per cell (log scale)`,
    label: `Colour scale (logarithmic): 0 to ${max} ${measure} per cell`
  });
}
