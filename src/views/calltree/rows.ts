/**
 * Call tree logic: flatten the tree into visible rows, sort siblings, search, and find the
 * hottest path. Nodes are named by their path of child indices ("0/2/1") because cnode ids
 * need not be unique once the server merges locations.
 */
import type { ICallNode } from '../../api/traceTypes';

export type SortKey =
  'name' | 'incl_s' | 'excl_s' | 'pct' | 'visits' | 'min_s' | 'max_s';

export interface ISort {
  key: SortKey;
  descending: boolean;
}

export interface ITreeRow {
  key: string;
  node: ICallNode;
  depth: number;
  hasChildren: boolean;
  expanded: boolean;
  /** inclusive time as % of the total */
  pct: number;
  /** the row matches the current search */
  match: boolean;
}

function sortValue(node: ICallNode, key: SortKey): number | string {
  if (key === 'name') {
    return node.name.toLowerCase();
  }
  if (key === 'pct') {
    return node.incl_s;
  }
  return node[key] ?? 0;
}

/** Children indices of `node` in display order; ties keep the server's order. */
export function sortedChildIndices(node: ICallNode, sort: ISort): number[] {
  const idx = node.children.map((_, i) => i);
  const sign = sort.descending ? -1 : 1;
  idx.sort((a, b) => {
    const va = sortValue(node.children[a], sort.key);
    const vb = sortValue(node.children[b], sort.key);
    if (va < vb) {
      return -sign;
    }
    if (va > vb) {
      return sign;
    }
    return a - b;
  });
  return idx;
}

export function childKey(parent: string, index: number): string {
  return `${parent}/${index}`;
}

export const ROOT_KEY = '0';

/** The node at a key, or undefined. */
export function nodeAt(root: ICallNode, key: string): ICallNode | undefined {
  const parts = key.split('/').map(Number);
  if (parts[0] !== 0) {
    return undefined;
  }
  let node: ICallNode | undefined = root;
  for (const i of parts.slice(1)) {
    node = node?.children[i];
  }
  return node;
}

/**
 * Visible rows: the root, then the children of every expanded node, depth first, siblings in
 * sort order. `total` is the run's total time for the % column.
 */
export function flatten(
  root: ICallNode,
  expanded: ReadonlySet<string>,
  sort: ISort,
  total: number,
  matches: ReadonlySet<string> = new Set()
): ITreeRow[] {
  const rows: ITreeRow[] = [];
  const denom = total > 0 ? total : root.incl_s || 1;
  const visit = (node: ICallNode, key: string, depth: number) => {
    const isExpanded = expanded.has(key);
    rows.push({
      key,
      node,
      depth,
      hasChildren: node.children.length > 0,
      expanded: isExpanded && node.children.length > 0,
      pct: (100 * node.incl_s) / denom,
      match: matches.has(key)
    });
    if (isExpanded) {
      for (const i of sortedChildIndices(node, sort)) {
        visit(node.children[i], childKey(key, i), depth + 1);
      }
    }
  };
  visit(root, ROOT_KEY, 0);
  return rows;
}

export interface ISearchResult {
  /** keys of nodes whose name (or file) contains the query */
  matches: Set<string>;
  /** keys to expand so every match is visible (the matches' ancestors) */
  expand: Set<string>;
}

/** Case-insensitive substring search over node names and files. */
export function search(root: ICallNode, text: string): ISearchResult {
  const matches = new Set<string>();
  const expand = new Set<string>();
  const q = text.trim().toLowerCase();
  if (!q) {
    return { matches, expand };
  }
  const visit = (node: ICallNode, key: string, ancestors: string[]) => {
    const hay = `${node.name} ${node.file ?? ''}`.toLowerCase();
    if (hay.includes(q)) {
      matches.add(key);
      for (const a of ancestors) {
        expand.add(a);
      }
    }
    node.children.forEach((child, i) =>
      visit(child, childKey(key, i), [...ancestors, key])
    );
  };
  visit(root, ROOT_KEY, []);
  return { matches, expand };
}

/**
 * The hottest path: from the root, follow the child with the most inclusive time while that
 * child holds at least `minShare` of its parent's time. Returns the keys along the path.
 */
export function hottestPath(root: ICallNode, minShare = 0): string[] {
  const path = [ROOT_KEY];
  let node = root;
  let key = ROOT_KEY;
  while (node.children.length > 0) {
    let best = 0;
    for (let i = 1; i < node.children.length; i++) {
      if (node.children[i].incl_s > node.children[best].incl_s) {
        best = i;
      }
    }
    const child = node.children[best];
    if (node.incl_s > 0 && child.incl_s < minShare * node.incl_s) {
      break;
    }
    key = childKey(key, best);
    path.push(key);
    node = child;
  }
  return path;
}

/** Sum of visits of all nodes with the given name (a region called from several places). */
export function totalVisits(root: ICallNode, name: string): number {
  let sum = 0;
  const visit = (node: ICallNode) => {
    if (node.name === name) {
      sum += node.visits;
    }
    node.children.forEach(visit);
  };
  visit(root);
  return sum;
}

/**
 * Every call path of a region (by name; a cell's 'cell [n]' and the ':cell [n]' of older
 * Score-P experiments are one):
 * the keys of its nodes in pre-order, and the ancestors to expand so all are visible.
 */
export function regionPaths(root: ICallNode, name: string): ISearchResult {
  const norm = (s: string) => (/^:cell \[\d+\]$/.test(s) ? s.slice(1) : s);
  const wanted = norm(name);
  const matches = new Set<string>();
  const expand = new Set<string>();
  const visit = (node: ICallNode, key: string, ancestors: string[]) => {
    if (norm(node.name) === wanted) {
      matches.add(key);
      for (const a of ancestors) {
        expand.add(a);
      }
    }
    node.children.forEach((child, i) =>
      visit(child, childKey(key, i), [...ancestors, key])
    );
  };
  visit(root, ROOT_KEY, []);
  return { matches, expand };
}
