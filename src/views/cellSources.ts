/**
 * Where a region's code is, in the words of the notebook: "cell [3], line 8" instead of the
 * file name IPython compiled the cell under (`/tmp/ipykernel_812/2769.py`,
 * `<ipython-input-3-5f2a…>`) or the name an exec'd cell's code gets (`<dynamic-code>`).
 *
 * The run's cell regions carry the file their code was compiled under (the builtin tracer's
 * `cell [n]` regions): a function defined in that cell has the same file. IPython's own
 * names hold the execution count. A pseudo-file (`<…>`) in a run of one cell is that cell.
 */

/** A cell region of the run: its label ("cell [3]") and the file its code ran as. */
export interface ICellFile {
  label: string;
  file?: string | null;
}

const IPYTHON_INPUT = /^<ipython-input-(\d+)-[0-9a-f]+>$/;
const IPYKERNEL_FILE = /[/\\]ipykernel_\d+[/\\][^/\\]+\.py$/;
/** what exec'd code is compiled as (not `<frozen importlib._bootstrap>` and the like) */
const EXEC_FILE = /^<(dynamic-code|string)>$/;

export class CellSources {
  constructor(cells: ICellFile[]) {
    this.cells = cells;
    for (const c of cells) {
      if (c.file) {
        this.byFile.set(c.file, c.label);
      }
    }
  }

  /** "cell [3], line 8", or the file and line as they are ("numpy/core/…py:120"). */
  where(file: string | null | undefined, line?: number | null): string {
    if (!file) {
      return '';
    }
    const at = line ? `, line ${line}` : '';
    const cell = this.cellOf(file);
    if (cell) {
      return `${cell}${at}`;
    }
    return `${file}${line ? `:${line}` : ''}`;
  }

  private cellOf(file: string): string | null {
    const known = this.byFile.get(file);
    if (known) {
      return known;
    }
    const input = IPYTHON_INPUT.exec(file);
    if (input) {
      return `cell [${input[1]}]`;
    }
    if (IPYKERNEL_FILE.test(file)) {
      // a notebook cell, but none of this run's: one run before
      return 'an earlier cell';
    }
    if (EXEC_FILE.test(file) && this.cells.length === 1) {
      return this.cells[0].label;
    }
    return null;
  }

  private readonly cells: ICellFile[];
  private readonly byFile = new Map<string, string>();
}
