import type { ICallNode } from '../../../api/traceTypes';
import { bottomUp, flameBoxes } from '../../../views/calltree/bottomUp';

function node(
  name: string,
  incl: number,
  excl: number,
  children: ICallNode[] = [],
  visits = 1
): ICallNode {
  return {
    id: 0,
    name,
    group: name.split(':')[0],
    incl_s: incl,
    excl_s: excl,
    visits,
    min_s: 0,
    max_s: 0,
    children
  };
}

// cell → a → leaf (0.3 s own), cell → b → leaf (0.1 s own), cell → b (0.2 s own)
const tree = node('cell [1]', 1.0, 0.1, [
  node('m:a', 0.5, 0.2, [node('m:leaf', 0.3, 0.3, [], 3)]),
  node('m:b', 0.4, 0.3, [node('m:leaf', 0.1, 0.1, [], 1)])
]);

describe('bottom-up', () => {
  it('ranks functions by own time over all paths, with their callers', () => {
    const rows = bottomUp(tree);
    expect(rows.map(r => [r.name, +r.self_s.toFixed(3), r.visits])).toEqual([
      ['m:leaf', 0.4, 4],
      ['m:b', 0.3, 1],
      ['m:a', 0.2, 1],
      ['cell [1]', 0.1, 1]
    ]);
    // leaf's own time split by caller: 0.3 s below a, 0.1 s below b, both from the cell
    const leaf = rows[0];
    expect(leaf.callers.map(c => [c.name, +c.self_s.toFixed(3)])).toEqual([
      ['m:a', 0.3],
      ['m:b', 0.1]
    ]);
    expect(leaf.callers[0].callers.map(c => c.name)).toEqual(['cell [1]']);
  });
  it('counts a recursive function’s own time once per frame', () => {
    const rec = node('cell', 1, 0, [
      node('m:f', 1, 0.5, [node('m:f', 0.5, 0.5)])
    ]);
    const f = bottomUp(rec).find(r => r.name === 'm:f')!;
    expect(f.self_s).toBe(1);
  });
});

describe('flame graph boxes', () => {
  it('lays children left to right by inclusive time under their parent', () => {
    const boxes = flameBoxes(tree);
    const at = (name: string, depth: number) =>
      boxes.find(b => b.name === name && b.depth === depth)!;
    expect(at('cell [1]', 0)).toMatchObject({ x: 0, w: 1 });
    expect(at('m:a', 1)).toMatchObject({ x: 0, w: 0.5 });
    expect(at('m:b', 1).x).toBeCloseTo(0.5);
    expect(at('m:b', 1).w).toBeCloseTo(0.4);
    const leaves = boxes.filter(b => b.name === 'm:leaf');
    expect(leaves.map(b => [+b.x.toFixed(2), +b.w.toFixed(2)])).toEqual([
      [0, 0.3],
      [0.5, 0.1]
    ]);
  });
  it('leaves out boxes narrower than the threshold', () => {
    expect(flameBoxes(tree, 0.2).map(b => b.name)).toEqual([
      'cell [1]',
      'm:a',
      'm:leaf',
      'm:b'
    ]);
  });
});

describe('anonymous functions', () => {
  // Score-P's bindings: the cell's file with the working directory in front
  const file = '/home/me/<ipython-input-3-5f2a9c01>';
  const at = (n: ICallNode, line: number): ICallNode => ({ ...n, file, line });
  const cell = { ...node('cell [3]', 1.0, 0.1), group: 'cell', file };
  cell.children = [
    node('__main__:squares', 0.3, 0.0, [
      at(node('__main__:<listcomp>', 0.3, 0.3), 2)
    ]),
    node('__main__:cubes', 0.6, 0.0, [
      at(node('__main__:<listcomp>', 0.6, 0.6), 5)
    ])
  ];

  it('keeps two list comprehensions apart, named by cell and line', () => {
    const rows = bottomUp(cell);
    expect(
      rows.slice(0, 2).map(r => [r.name, r.self_s, r.callers[0].name])
    ).toEqual([
      ['__main__:<listcomp> cell [3]:5', 0.6, '__main__:cubes'],
      ['__main__:<listcomp> cell [3]:2', 0.3, '__main__:squares']
    ]);
    const boxes = flameBoxes(cell).map(b => b.name);
    expect(boxes).toContain('__main__:<listcomp> cell [3]:5');
    expect(boxes).toContain('__main__:<listcomp> cell [3]:2');
  });

  it('leaves named functions as they are', () => {
    expect(bottomUp(cell).map(r => r.name)).toContain('__main__:cubes');
  });
});
