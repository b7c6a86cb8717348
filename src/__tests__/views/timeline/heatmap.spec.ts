import {
  decodeHeat,
  heatCellAt,
  heatOf,
  heatRankTicks,
  heatText
} from '../../../views/timeline/heatmap';
import { heatRgba } from '../../../util/heatScale';
import { rankModeText } from '../../../views/timeline/heatBar';
import type { ITimelineHeatmap } from '../../../api/traceTypes';

function b64(bytes: number[]): string {
  return btoa(String.fromCharCode(...bytes));
}

/** 8 ranks in 2 rows of 4, 4 columns of 100 ns from t = 1000 */
const MAP: ITimelineHeatmap = {
  rows: [
    {
      locations: [0, 1, 2, 3],
      groups: ['MPI Rank 0', 'MPI Rank 1', 'MPI Rank 2', 'MPI Rank 3']
    },
    {
      locations: [4, 5, 6, 7],
      groups: ['MPI Rank 4', 'MPI Rank 5', 'MPI Rank 6', 'MPI Rank 7']
    }
  ],
  columns: 4,
  column_ns: 100,
  encoding: 'base64-uint8',
  active: b64([255, 255, 128, 0, 255, 255, 255, 255]),
  mpi: b64([0, 51, 255, 0, 10, 20, 30, 40])
};

describe('decoding and colours', () => {
  it('decodes the base64 bytes', () => {
    expect([...decodeHeat(MAP.mpi)]).toEqual([0, 51, 255, 0, 10, 20, 30, 40]);
  });

  it('paints one opaque pixel per cell', () => {
    const px = heatRgba(decodeHeat(MAP.mpi), 2 * 4, 'mpi', 'light');
    expect(px.length).toBe(2 * 4 * 4);
    expect([...px.slice(8, 12)]).toEqual([127, 39, 4, 255]);
    expect([...px.slice(0, 4)]).toEqual([245, 245, 245, 255]);
  });
});

describe('hit testing', () => {
  const heat = heatOf(MAP, [1000, 1400]);
  const view = { t0: 1000, t1: 1400 };

  it('names the rank range, time range and values under the pointer', () => {
    // 400 px wide, 100 px high: cells are 100 x 50 px
    const cell = heatCellAt(heat, view, 400, 100, 250, 20)!;
    expect(cell).toMatchObject({
      row: 0,
      column: 2,
      ranks: [0, 3],
      t: [1200, 1300],
      mpi: 1,
      active: 128 / 255
    });
    const text = heatText(cell);
    expect(text.title).toBe('Ranks 0–3 (4 ranks)');
    expect(text.lines).toEqual([
      '1.2 µs – 1.3 µs',
      'in MPI: 100 % of the time',
      'busy (in a call): 50 % of the time'
    ]);
    expect(heatCellAt(heat, view, 400, 100, 10, 60)).toMatchObject({
      row: 1,
      column: 0,
      ranks: [4, 7],
      mpi: 10 / 255
    });
  });

  it('follows a view that moved since the answer', () => {
    // the view panned 100 ns right: x = 0 is the second column
    const cell = heatCellAt(heat, { t0: 1100, t1: 1500 }, 400, 100, 0, 0)!;
    expect(cell.column).toBe(1);
    // past the answer's last column: nothing
    expect(
      heatCellAt(heat, { t0: 1100, t1: 1500 }, 400, 100, 350, 0)
    ).toBeNull();
  });

  it('answers nothing outside the plot', () => {
    expect(heatCellAt(heat, view, 400, 100, 10, -1)).toBeNull();
    expect(heatCellAt(heat, view, 400, 100, 10, 100)).toBeNull();
  });

  it('labels rows at least the gap apart, the first always', () => {
    expect(heatRankTicks(heat, 100, 40)).toEqual([
      { y: 0, label: 'Rank 0' },
      { y: 50, label: 'Rank 4' }
    ]);
    expect(heatRankTicks(heat, 60, 40)).toEqual([{ y: 0, label: 'Rank 0' }]);
  });

  it('says how the ranks are drawn', () => {
    // 167 rows asked for: buckets of ceil(1024 / 167) = 7 ranks, 147 of them
    expect(rankModeText(1024, { mode: 'heatmap', rows: 167 })).toBe(
      '1,024 ranks as a heat map: 147 rows of up to 7 ranks'
    );
    expect(rankModeText(1024, { mode: 'heatmap', rows: 1023 })).toBe(
      '1,024 ranks as a heat map: 512 rows of up to 2 ranks'
    );
    expect(rankModeText(9, { mode: 'rows', rows: 9 })).toBe(
      '9 ranks, one row per rank'
    );
  });
});
