/** The DOM around the timeline canvas: the group legend and the hover tooltip. */
import { groupColor, ThemeKind } from '../colors';

/** Fill `legend` with one swatch per group, sorted by name. */
export function renderLegend(
  legend: HTMLElement,
  groups: Iterable<string>,
  theme: ThemeKind
): void {
  legend.textContent = '';
  for (const group of [...groups].sort()) {
    const item = document.createElement('span');
    item.className = 'jp-scorep-legend-item';
    const swatch = document.createElement('span');
    swatch.className = 'jp-scorep-legend-swatch';
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
  const title = document.createElement('div');
  title.className = 'jp-scorep-tooltip-title';
  title.textContent = content.title;
  tooltip.appendChild(title);
  for (const line of content.lines) {
    const div = document.createElement('div');
    div.textContent = line;
    tooltip.appendChild(div);
  }
  tooltip.hidden = false;
  const tw = tooltip.offsetWidth;
  const left = x + 14 + tw > width ? Math.max(0, x - tw - 10) : x + 14;
  tooltip.style.left = `${left}px`;
  tooltip.style.top = `${y + 14}px`;
}
