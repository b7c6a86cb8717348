/**
 * The root the call tree shows. The server gives a tree whose top is a synthetic node (id
 * -1, named by the experiment's id) whenever the profile has several top-level paths (the
 * cell, and the threads it started): summed over every location, that node adds the
 * threads' times to the cell's (1.01 s for a 505 ms cell with one busy thread). The panel
 * opens the tree of the thread that ran the cell instead (the first location), whose top is
 * the cell itself; the sum over all threads stays one choice away, and says what it is.
 */
import type { ICallTree } from '../../api/traceTypes';

/** The location to open first: the thread that ran the cell, when the tree has several. */
export function firstLocation(tree: ICallTree): number | null {
  if (tree.location !== null || tree.locations.length < 2) {
    return null;
  }
  return tree.locations[0].id;
}

/** The tree with its synthetic top replaced: by its only child, or by a named sum. */
export function presentTree(tree: ICallTree): ICallTree {
  const root = tree.root;
  if (root.id !== -1) {
    return tree;
  }
  if (root.children.length === 1) {
    return { ...tree, root: root.children[0] };
  }
  const where =
    tree.location === null
      ? `All ${tree.locations.length} locations (summed)`
      : (tree.locations.find(l => l.id === tree.location)?.name ??
        `Location ${tree.location}`);
  return { ...tree, root: { ...root, name: where } };
}
