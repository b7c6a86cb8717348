/**
 * Where a region's code is, in the words of the notebook: "cell [3], line 8" instead of the
 * file name IPython compiled the cell under (`/tmp/ipykernel_812/2769.py`,
 * `<ipython-input-3-5f2a…>`) or the name an exec'd cell's code gets (`<dynamic-code>`).
 *
 * The run's cell regions carry the file their code was compiled under (the builtin tracer's
 * `cell [n]` regions): a function defined in that cell has the same file. IPython's own
 * names hold the execution count. A pseudo-file (`<…>`) in a run of one cell is that cell.
 */
import type { ICallNode } from '../api/traceTypes';

/** A cell region of the run: its label ("cell [3]") and the file its code ran as. */
export interface ICellFile {
  label: string;
  file?: string | null;
}

/** IPython's name of a cell's code; Score-P's bindings write it with the working
 * directory in front (`/home/me/<ipython-input-3-5f2a…>`) */
const IPYTHON_INPUT = /(?:^|[/\\])<ipython-input-(\d+)-[0-9a-f]+>$/;
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

  /**
   * A function's name as a row shows it: an anonymous function's (`<listcomp>`,
   * `<lambda>`, ...) with its place, `__main__:<listcomp> cell [3]:5`, since two of one
   * module are two functions; other names as they are.
   */
  label(
    name: string,
    file: string | null | undefined,
    line?: number | null
  ): string {
    if (!isAnonymous(name) || !file) {
      return name;
    }
    const at = line ? `:${line}` : '';
    const cell = this.cellOf(file);
    return `${name} ${cell ?? file.split(/[/\\]/).pop()}${at}`;
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

/** Python's name for code without one of its own (`m:<listcomp>`, `m:<lambda>`). */
export function isAnonymous(name: string): boolean {
  return /^<[a-z]+>$/.test(name.slice(name.lastIndexOf(':') + 1));
}

/** The cells of a call tree (its nodes of group `cell`, near the root) as sources. */
export function treeCellSources(root: ICallNode): CellSources {
  const out: ICellFile[] = [];
  const visit = (n: ICallNode, depth: number) => {
    if (n.group === 'cell') {
      out.push({ label: n.name, file: n.file });
    }
    // cells are near the root: no need to walk a deep tree
    if (depth < 3) {
      n.children.forEach(c => visit(c, depth + 1));
    }
  };
  visit(root, 0);
  return new CellSources(out);
}
