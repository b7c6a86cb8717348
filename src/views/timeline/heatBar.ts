/**
 * The bar above a many-rank timeline: how the ranks are drawn (one row per rank, or a heat
 * map of rows of several ranks) and which are in view, the heat map's colour scale and what
 * it measures (time in MPI or busy), and the vertical zoom (taller rows; one row per rank
 * once they fit, rankRows.ts).
 */
import type { ThemeKind } from '../../util/colors';
import { el } from '../../util/dom';
import { HeatMeasure, heatLegend } from '../../util/heatScale';

export interface IHeatBarState {
  ranks: number;
  mode: { mode: 'rows' | 'heatmap'; rows: number };
  measure: HeatMeasure;
  vzoom: number;
  theme: ThemeKind;
  setMeasure: (measure: HeatMeasure) => void;
  /** multiply the vertical zoom by this */
  zoom: (factor: number) => void;
}

/** "1,024 ranks as a heat map: 147 rows of up to 7 ranks" (167 rows asked for) */
export function rankModeText(
  ranks: number,
  mode: { mode: 'rows' | 'heatmap'; rows: number }
): string {
  const n = ranks.toLocaleString('en-US');
  if (mode.mode === 'rows') {
    return `${n} ranks, one row per rank`;
  }
  // the server's buckets: ceil(ranks / rows) ranks each, so fewer rows than asked for
  const per = Math.ceil(ranks / mode.rows);
  const rows = Math.ceil(ranks / per);
  return `${n} ranks as a heat map: ${rows} rows of up to ${per} ranks`;
}

/** The bar's part that says which ranks are in view (updated as the plot scrolls). */
export const IN_VIEW_CLASS = 'jp-scorep-heatbar-inview';

export function renderHeatBar(bar: HTMLElement, s: IHeatBarState): void {
  bar.textContent = '';
  bar.appendChild(
    el('span', 'jp-scorep-heatbar-mode', rankModeText(s.ranks, s.mode))
  );
  const inView = el('span', IN_VIEW_CLASS);
  inView.setAttribute('aria-live', 'polite');
  inView.title = 'Scroll the ranks with the scrollbar or Page Up / Page Down';
  bar.appendChild(inView);
  const zoom = el('span', 'jp-scorep-heatbar-zoom');
  zoom.setAttribute('role', 'group');
  zoom.setAttribute('aria-label', 'Vertical zoom');
  const shorter = el('button', 'jp-scorep-link', '−');
  shorter.setAttribute('aria-label', 'Shorter rows');
  shorter.title = 'Shorter rows (more ranks per row)';
  shorter.disabled = s.vzoom <= 1;
  shorter.addEventListener('click', () => s.zoom(0.5));
  const taller = el('button', 'jp-scorep-link', '+');
  taller.setAttribute('aria-label', 'Taller rows');
  taller.title =
    'Taller rows (fewer ranks per row; one row per rank once they fit)';
  taller.disabled = s.mode.mode === 'rows';
  taller.addEventListener('click', () => s.zoom(2));
  zoom.append(el('span', '', 'Rows'), shorter, taller);
  bar.appendChild(zoom);
  if (s.mode.mode !== 'heatmap') {
    return;
  }
  const measures = el('span', 'jp-scorep-heatbar-measure');
  measures.setAttribute('role', 'group');
  measures.setAttribute('aria-label', 'What the colour shows');
  for (const m of ['mpi', 'active'] as HeatMeasure[]) {
    const b = el(
      'button',
      'jp-scorep-link',
      m === 'mpi' ? 'Time in MPI' : 'Busy'
    );
    b.setAttribute('aria-pressed', String(m === s.measure));
    b.addEventListener('click', () => s.setMeasure(m));
    measures.appendChild(b);
  }
  bar.appendChild(measures);
  bar.appendChild(
    heatLegend({
      measure: s.measure,
      theme: s.theme,
      low: '0 %',
      high: '100 %',
      label:
        `Colour scale: share of the ranks' time ` +
        `${s.measure === 'mpi' ? 'in MPI calls' : 'in a call'}, 0 to 100 %`
    })
  );
}
