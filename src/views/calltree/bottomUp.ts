/**
 * The call tree turned around (Chrome DevTools' Bottom-Up): every function by its own time
 * over all its call paths, and under it the functions that called it, each with the part of
 * that own time spent below it; and the flame graph's boxes (an icicle: x is the share of
 * the inclusive time, y the call depth), both computed from the top-down tree the server
 * sends.
 */
import type { ICallNode } from '../../api/traceTypes';
import { treeCellSources } from '../cellSources';

export interface IBottomUpNode {
  /** the function's name, an anonymous one's with its place (`m:<listcomp> cell [3]:5`):
   * two list comprehensions are two functions */
  name: string;
  group: string;
  /** own (exclusive) time of the function reached through this path, s */
  self_s: number;
  visits: number;
  /** callers (bottom-up children) */
  callers: IBottomUpNode[];
}

/** Functions by own time, each with its callers (paths up to the root, merged by name,
 * an anonymous function's by name and place). */
export function bottomUp(root: ICallNode): IBottomUpNode[] {
  const sources = treeCellSources(root);
  const labels = new Map<ICallNode, string>();
  const labelOf = (n: ICallNode): string => {
    let label = labels.get(n);
    if (label === undefined) {
      label = sources.label(n.name, n.file, n.line);
      labels.set(n, label);
    }
    return label;
  };
  const top = new Map<string, IBottomUpNode>();
  const child = (
    list: IBottomUpNode[],
    index: Map<IBottomUpNode[], Map<string, IBottomUpNode>>,
    n: ICallNode
  ): IBottomUpNode => {
    let byName = index.get(list);
    if (!byName) {
      byName = new Map(list.map(x => [x.name, x]));
      index.set(list, byName);
    }
    const name = labelOf(n);
    let e = byName.get(name);
    if (!e) {
      e = {
        name,
        group: n.group ?? '',
        self_s: 0,
        visits: 0,
        callers: []
      };
      byName.set(name, e);
      list.push(e);
    }
    return e;
  };
  const index = new Map<IBottomUpNode[], Map<string, IBottomUpNode>>();
  const topList: IBottomUpNode[] = [];
  index.set(topList, top);
  const visit = (n: ICallNode, path: ICallNode[]) => {
    if (n.excl_s > 0 || n.visits > 0) {
      // the function itself, then its callers from the nearest up, each on the chain; a
      // recursive function's own time is counted once per path, at its deepest frame
      let e = child(topList, index, n);
      e.self_s += n.excl_s;
      e.visits += n.visits;
      const seen = new Set<string>([labelOf(n)]);
      for (let i = path.length - 1; i >= 0; i--) {
        const caller = path[i];
        e = child(e.callers, index, caller);
        e.self_s += n.excl_s;
        e.visits += n.visits;
        if (seen.has(labelOf(caller))) {
          break;
        }
        seen.add(labelOf(caller));
      }
    }
    path.push(n);
    n.children.forEach(c => visit(c, path));
    path.pop();
  };
  visit(root, []);
  const sort = (list: IBottomUpNode[]) => {
    list.sort((a, b) => b.self_s - a.self_s || a.name.localeCompare(b.name));
    list.forEach(x => sort(x.callers));
  };
  sort(topList);
  return topList;
}

export interface IFlameBox {
  name: string;
  group: string;
  depth: number;
  /** left edge and width as shares of the root's inclusive time, 0..1 */
  x: number;
  w: number;
  incl_s: number;
  excl_s: number;
}

/** The flame graph's boxes, children left to right by inclusive time; boxes narrower than
 * `minShare` of the root (with their subtrees) are left out. */
export function flameBoxes(root: ICallNode, minShare = 0.001): IFlameBox[] {
  const total = root.incl_s > 0 ? root.incl_s : 1;
  const sources = treeCellSources(root);
  const out: IFlameBox[] = [];
  const visit = (n: ICallNode, depth: number, x: number) => {
    const w = n.incl_s / total;
    if (w < minShare) {
      return;
    }
    out.push({
      name: sources.label(n.name, n.file, n.line),
      group: n.group ?? '',
      depth,
      x,
      w,
      incl_s: n.incl_s,
      excl_s: n.excl_s
    });
    let cx = x;
    for (const c of [...n.children].sort((a, b) => b.incl_s - a.incl_s)) {
      visit(c, depth + 1, cx);
      cx += c.incl_s / total;
    }
  };
  visit(root, 0, 0);
  return out;
}
