/** The DOM around the timeline canvas: the group legend and the hover tooltip. */
import { groupColor, ThemeKind } from '../../util/colors';
import { el } from '../../util/dom';

/** Fill `legend` with one swatch per group, sorted by name. */
export function renderLegend(
  legend: HTMLElement,
  groups: Iterable<string>,
  theme: ThemeKind
): void {
  legend.textContent = '';
  for (const group of [...groups].sort()) {
    const item = el('span', 'jp-scorep-legend-item');
    const swatch = el('span', 'jp-scorep-legend-swatch');
    swatch.style.background = groupColor(group, theme).fill;
    item.appendChild(swatch);
    item.appendChild(document.createTextNode(group));
    legend.appendChild(item);
  }
}

/** Show `tooltip` near (x, y), flipped left when it would leave a `width` px wide area. */
export function showTooltip(
  tooltip: HTMLElement,
  content: { title: string; lines: string[] },
  x: number,
  y: number,
  width: number
): void {
  tooltip.textContent = '';
  tooltip.appendChild(el('div', 'jp-scorep-tooltip-title', content.title));
  for (const line of content.lines) {
    tooltip.appendChild(el('div', '', line));
  }
  tooltip.hidden = false;
  const tw = tooltip.offsetWidth;
  const left = x + 14 + tw > width ? Math.max(0, x - tw - 10) : x + 14;
  tooltip.style.left = `${left}px`;
  tooltip.style.top = `${y + 14}px`;
}
