/**
 * How the panel (a MIME renderer, which knows nothing of notebooks) reaches the notebook cell
 * it is shown under, to write that cell's `scorep` metadata: the notebook plugin (../index)
 * registers a locator that finds the cell whose node holds the panel's node. Both live in
 * this extension's bundle, so they share this module.
 */
import type { IScorepMetadata } from './cellSettings';

export interface ICellHandle {
  /** the notebook's path, relative to the server root */
  readonly notebookPath: string;
  /** the cell's `scorep` metadata (undefined when it has none) */
  getScorep(): IScorepMetadata | undefined;
  setScorep(metadata: IScorepMetadata): void;
}

export type CellLocator = (node: HTMLElement) => ICellHandle | null;

let locator: CellLocator | null = null;

/** Set by the notebook plugin at activation (null: forget it). */
export function setCellLocator(fn: CellLocator | null): void {
  locator = fn;
}

/** The cell that holds `node`, or null (no notebook plugin, or not under a cell). */
export function cellOf(node: HTMLElement): ICellHandle | null {
  return locator ? locator(node) : null;
}
