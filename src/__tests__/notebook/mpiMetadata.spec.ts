import { parseRanks, readMpi, withMpi } from '../../notebook/mpi/metadata';

describe('the MPI dialog → cell metadata', () => {
  it('makes a profiled MPI cell, with the JupyterLab settings as the toggle writes them', () => {
    expect(withMpi(undefined, { ranks: 4 }, { backend: 'builtin' })).toEqual({
      profile: true,
      mpi: { ranks: 4 },
      lab_settings: { backend: 'builtin' }
    });
    expect(
      withMpi(
        { profile: true, backend: 'scorep' },
        { ranks: 2, launcher: 'srun', args: ' --hostfile h ' },
        null
      )
    ).toEqual({
      profile: true,
      backend: 'scorep',
      mpi: { ranks: 2, launcher: 'srun', args: '--hostfile h' }
    });
  });

  it('keeps the keys it does not show, and drops a launcher set back to the default', () => {
    const current = {
      profile: true,
      mpi: { ranks: 2, launcher: 'mpiexec', gather: ['x'], timeout: 60 }
    };
    expect(withMpi(current, { ranks: 8, launcher: '' }, null).mpi).toEqual({
      ranks: 8,
      gather: ['x'],
      timeout: 60
    });
    // Not MPI: the cell stays profiled
    expect(withMpi(current, null, null)).toEqual({ profile: true });
  });

  it('reads the current choice and checks the ranks', () => {
    expect(readMpi(undefined)).toBeNull();
    expect(readMpi({ profile: true })).toBeNull();
    expect(readMpi({ mpi: { ranks: 3, args: ['-H', 'a'] } })).toEqual({
      ranks: 3,
      launcher: '',
      args: '-H a'
    });
    expect(parseRanks(' 4 ')).toBe(4);
    expect(parseRanks('0')).toBeNull();
    expect(parseRanks('2.5')).toBeNull();
    expect(parseRanks('5000')).toBeNull();
  });
});
