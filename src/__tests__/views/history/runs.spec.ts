import type { IManifest, IRunEntry } from '../../../api/experimentTypes';
import {
  bundleOf,
  formatWhen,
  panelCell,
  parentDir,
  previousRun,
  runRows
} from '../../../views/history/runs';

function manifest(
  id: string,
  startS: number,
  sha: string,
  extra: Partial<IManifest> = {}
): IManifest {
  return {
    format_version: 1,
    id,
    backend: 'builtin',
    isolation: 'inprocess',
    status: 'ok',
    files_status: 'ready',
    start_ns: startS * 1e9,
    wall_s: 0.5,
    cells: [{ cell_id: 'c1', execution_count: startS, source_sha256: sha }],
    ...extra
  };
}

function entry(m: IManifest): IRunEntry {
  return {
    path: `/nb/scorep-experiments/${m.id}`,
    manifest: m,
    disk_bytes: 10
  };
}

describe('a cell’s runs', () => {
  const r1 = manifest('r1', 100, 'aaa');
  const r2 = manifest('r2', 200, 'aaa', { status: 'error' });
  const r3 = manifest('r3', 300, 'bbb', { files_status: 'pending' });
  const r4 = manifest('r4', 400, 'bbb');
  const runs = [r4, r3, r2, r1].map(entry);

  it('finds the previous comparable run', () => {
    // r3's files are still being written: r2 (it ended, with an error) comes before r4
    expect(previousRun(runs, r4)?.manifest.id).toBe('r2');
    expect(previousRun(runs, r2)?.manifest.id).toBe('r1');
    expect(previousRun(runs, r1)).toBeNull();
    // the list's order does not matter
    expect(previousRun([...runs].reverse(), r4)?.manifest.id).toBe('r2');
    // a run that is still running is never the previous one
    const running = manifest('r5', 350, 'bbb', { status: 'running' });
    expect(previousRun([...runs, entry(running)], r4)?.manifest.id).toBe('r2');
  });

  it('describes each run against the one shown', () => {
    const rows = runRows([r1, r4, r2].map(entry), r4, 'c1');
    expect(rows.map(r => r.id)).toEqual(['r4', 'r2', 'r1']);
    expect(rows.map(r => r.sourceChanged)).toEqual([false, true, true]);
    expect(rows.map(r => r.current)).toEqual([true, false, false]);
    expect(rows[1]).toMatchObject({
      status: 'error',
      backend: 'builtin',
      wallS: 0.5,
      executionCount: 200,
      startNs: 200e9
    });
    // without the cell's hash the change is unknown
    const bare = manifest('r0', 50, 'x', { cells: [{ cell_id: 'c1' }] });
    expect(runRows([entry(bare)], r4, 'c1')[0].sourceChanged).toBeNull();
  });

  it('names times, folders, cells and bundles', () => {
    const now = new Date(2026, 11, 1, 12, 0, 0);
    const today = new Date(2026, 11, 1, 9, 5, 7).getTime() * 1e6;
    const earlier = new Date(2026, 10, 30, 23, 59, 1).getTime() * 1e6;
    expect(formatWhen(today, now)).toBe('09:05:07');
    expect(formatWhen(earlier, now)).toBe('2026-11-30 23:59:01');
    expect(formatWhen(null, now)).toBe('unknown time');
    expect(parentDir('/nb/scorep-experiments/r1/')).toBe(
      '/nb/scorep-experiments'
    );
    const multi = manifest('m', 1, 'a', {
      cells: [{ cell_id: 'x' }, { cell_id: 'y' }]
    });
    expect(panelCell(multi)?.cell_id).toBe('y');
    expect(panelCell(multi, { cell_index_in_run: 0 })?.cell_id).toBe('x');
    expect(panelCell(manifest('e', 1, 'a', { cells: [] }))).toBeNull();
    expect(bundleOf(entry(r4))).toEqual({
      id: 'r4',
      path: '/nb/scorep-experiments/r4',
      backend: 'builtin',
      isolation: 'inprocess',
      status: 'ok',
      summary: { wall_s: 0.5 }
    });
  });
});
