import type { IRanks, IRankRow } from '../../../api/analysisTypes';
import { slowestText } from '../../../views/ranks/balanceAndTraffic';
import {
  blockAt,
  blockGrid,
  blockShades,
  blockText,
  denseOf,
  matrixCells,
  rankTicks
} from '../../../views/ranks/matrixBlocks';

function row(rank: number, compute: number): IRankRow {
  return {
    rank,
    name: `MPI Rank ${rank}`,
    locations: [rank],
    cell_s: compute + 0.001,
    mpi_s: 0.001,
    compute_s: compute,
    bytes_sent: 0,
    messages_sent: 0,
    collective_calls: 0,
    collective_bytes_sent: 0,
    collective_bytes_received: 0
  };
}

/** n ranks in a ring: rank r sends 4096 B in 2 messages to r + 1 */
function ring(n: number, slow: (r: number) => boolean): IRanks {
  const sender = Array.from({ length: n }, (_, r) => r);
  return {
    ranks: sender.map(r => row(r, slow(r) ? 0.0015 : 0.001)),
    load_balance: null,
    imbalance_pct: null,
    slowest_rank: null,
    communication_share: null,
    slowest_ranks: sender.filter(slow).slice(0, 5),
    matrix: {
      bytes: [],
      messages: [],
      size: n,
      pairs: {
        sender,
        receiver: sender.map(r => (r + 1) % n),
        bytes: sender.map(() => 4096),
        messages: sender.map(() => 2)
      }
    },
    received: [],
    unmatched: 0,
    mpi: null
  };
}

describe('the matrix in blocks', () => {
  it('reads the pairs and the dense matrix alike', () => {
    const r = ring(3, () => false);
    const dense = denseOf(matrixCells(r));
    expect(dense.bytes).toEqual([
      [0, 4096, 0],
      [0, 0, 4096],
      [4096, 0, 0]
    ]);
    const again = matrixCells({
      ...r,
      matrix: { ...dense }
    });
    expect(again.sender).toEqual([0, 1, 2]);
    expect(again.receiver).toEqual([1, 2, 0]);
    expect(again.messages).toEqual([2, 2, 2]);
  });

  it('keeps one rank per cell when the ranks fit the pixels', () => {
    const grid = blockGrid(matrixCells(ring(256, () => false)), 512);
    expect(grid.block).toBe(1);
    expect(grid.side).toBe(256);
    expect(grid.bytes[0 * 256 + 1]).toBe(4096);
    expect(grid.bytes[255 * 256 + 0]).toBe(4096);
  });

  it('sums 1,024 ranks into blocks of 2 x 2 in 512 px', () => {
    const grid = blockGrid(matrixCells(ring(1024, () => false)), 512);
    expect(grid.block).toBe(2);
    expect(grid.side).toBe(512);
    // ranks 0 -> 1 fall in the diagonal block, 1 -> 2 in the next one
    expect(grid.bytes[0]).toBe(4096);
    expect(grid.bytes[1]).toBe(4096);
    expect(grid.messages[1]).toBe(2);
    // every byte is in some block
    expect(grid.bytes.reduce((a, b) => a + b, 0)).toBe(1024 * 4096);
    expect(grid.max.bytes).toBe(4096);
  });

  it('names the senders, receivers, bytes and messages of the block hovered', () => {
    const grid = blockGrid(matrixCells(ring(1024, () => false)), 512);
    // 512 px: block (0, 1) is x in [1, 2), y in [0, 1)
    const hit = blockAt(grid, 512, 1.5, 0.5)!;
    expect(hit).toEqual({
      senders: [0, 1],
      receivers: [2, 3],
      bytes: 4096,
      messages: 2
    });
    expect(blockText(hit)).toBe(
      'ranks 0–1 → ranks 2–3: 4.00 KiB in 2 messages'
    );
    expect(blockAt(grid, 512, 512, 0)).toBeNull();
    expect(blockAt(grid, 512, -1, 0)).toBeNull();
    // the last block of an uneven split ends at the last rank
    const odd = blockGrid(matrixCells(ring(1000, () => false)), 512);
    expect(odd.block).toBe(2);
    expect(blockAt(odd, 512, 511.5, 511.5)!.senders).toEqual([998, 999]);
  });

  it('ticks the axes at round ranks at least the gap apart', () => {
    const ticks = rankTicks(1024, 512, 48);
    expect(ticks.slice(0, 3)).toEqual([
      { at: 0, rank: 0 },
      { at: 50, rank: 100 },
      { at: 100, rank: 200 }
    ]);
    expect(ticks.length).toBe(11);
  });
});

describe("the blocks' shades", () => {
  it('leave empty blocks blank and start a step above the background', () => {
    // 4 ranks in a ring, one a block: rank 3 -> 0 sends 8 KiB, the others 4 KiB
    const cells = matrixCells(ring(4, () => false));
    const grid = blockGrid({ ...cells, bytes: [4096, 4096, 4096, 8192] }, 4);
    const shades = blockShades(grid, 'bytes');
    const at = (from: number, to: number): number => shades[from * 4 + to];
    expect(at(0, 0)).toBe(-1);
    expect(at(1, 0)).toBe(-1);
    expect(at(3, 0)).toBe(255);
    const low = at(0, 1);
    // log scale: log(4097) / log(8193) of the way from 0.15 to 1
    expect(low).toBeCloseTo(
      255 * (0.15 + 0.85 * (Math.log1p(4096) / Math.log1p(8192))),
      6
    );
    expect(at(1, 2)).toBe(low);
    expect([...shades].filter(v => v >= 0)).toHaveLength(4);
  });
});

describe('the slowest ranks verdict', () => {
  it('names the slowest ranks and how many are close to them', () => {
    const text = slowestText(ring(1024, r => r >= 1000))!;
    expect(text).toContain('Slowest ranks: 1000, 1001, 1002, 1003, 1004');
    expect(text).toContain('24 ranks within 5 % of the slowest');
    expect(text).toMatch(/1\.\d\d× the mean/);
  });

  it('says nothing for one rank', () => {
    expect(slowestText(ring(1, () => true))).toBeNull();
  });
});
