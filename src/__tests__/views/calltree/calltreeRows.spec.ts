import { firstLocation, presentTree } from '../../../views/calltree/treeRoot';
import type { ICallNode } from '../../../api/traceTypes';
import {
  flatten,
  hottestPath,
  nodeAt,
  search,
  sortedChildIndices,
  totalVisits
} from '../../../views/calltree/rows';

function node(
  name: string,
  incl: number,
  excl: number,
  visits: number,
  children: ICallNode[] = []
): ICallNode {
  return {
    id: 0,
    name,
    group: name.split(':')[0],
    file: '<cell 1>',
    line: 1,
    incl_s: incl,
    excl_s: excl,
    visits,
    min_s: incl / visits,
    max_s: incl / visits,
    children
  };
}

// cell → g → f×3, cell → h; h → f×1
const tree = node('cell', 1.0, 0.1, 1, [
  node('__main__:h', 0.2, 0.1, 1, [node('__main__:f', 0.1, 0.1, 1)]),
  node('__main__:g', 0.7, 0.1, 1, [node('__main__:f', 0.6, 0.6, 3)])
]);

describe('call tree', () => {
  it('sorts siblings by the chosen column', () => {
    expect(
      sortedChildIndices(tree, { key: 'incl_s', descending: true })
    ).toEqual([1, 0]);
    expect(
      sortedChildIndices(tree, { key: 'name', descending: false })
    ).toEqual([1, 0]);
    expect(sortedChildIndices(tree, { key: 'name', descending: true })).toEqual(
      [0, 1]
    );
  });

  it('flattens only expanded nodes, depth first, in sort order', () => {
    const rows = flatten(
      tree,
      new Set(['0', '0/1']),
      { key: 'incl_s', descending: true },
      1.0
    );
    expect(rows.map(r => [r.node.name, r.depth])).toEqual([
      ['cell', 0],
      ['__main__:g', 1],
      ['__main__:f', 2],
      ['__main__:h', 1]
    ]);
    expect(rows[1].pct).toBeCloseTo(70);
    expect(rows[2].node.visits).toBe(3);
    expect(rows[3].expanded).toBe(false);
    expect(rows[3].hasChildren).toBe(true);
  });

  it('finds matches and the ancestors to expand', () => {
    const { matches, expand } = search(tree, 'F');
    expect([...matches].sort()).toEqual(['0/0/0', '0/1/0']);
    expect([...expand].sort()).toEqual(['0', '0/0', '0/1']);
    expect(search(tree, '  ').matches.size).toBe(0);
  });

  it('follows the hottest child from the root', () => {
    const path = hottestPath(tree);
    expect(path).toEqual(['0', '0/1', '0/1/0']);
    expect(nodeAt(tree, path[2])!.name).toBe('__main__:f');
    expect(hottestPath(tree, 0.9)).toEqual(['0']);
  });

  it('sums the visits of a region called from several places', () => {
    expect(totalVisits(tree, '__main__:f')).toBe(4);
  });
});

describe("the call tree's root", () => {
  const node = (
    id: number,
    name: string,
    incl: number,
    children: any[] = []
  ) => ({
    id,
    name,
    incl_s: incl,
    excl_s: 0,
    visits: 1,
    min_s: incl,
    max_s: incl,
    children
  });
  const locations = [
    { id: 0, name: 'Master thread' },
    { id: 1, name: 'Thread 1 (heartbeat)' }
  ];
  it('is the cell on one thread, not the experiment id', () => {
    const tree = {
      source: 'cubex' as const,
      location: 0,
      total_s: 0.505,
      locations,
      root: node(-1, '20261202T061351_088892Z-8eb2aa', 0.505, [
        node(0, 'cell [1]', 0.505)
      ])
    };
    expect(firstLocation({ ...tree, location: null })).toBe(0);
    expect(firstLocation(tree)).toBeNull();
    expect(presentTree(tree).root.name).toBe('cell [1]');
  });
  it('says that the sum over the threads is a sum', () => {
    const all = {
      source: 'cubex' as const,
      location: null,
      total_s: 1.01,
      locations,
      root: node(-1, '20261202T061351_088892Z-8eb2aa', 1.01, [
        node(0, 'cell [1]', 0.505),
        node(1, '__main__:heartbeat', 0.505)
      ])
    };
    expect(presentTree(all).root.name).toBe('All 2 locations (summed)');
  });
});
