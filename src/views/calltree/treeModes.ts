/**
 * The Call tree tab's three ways of showing one tree: top-down (the tree table), bottom-up
 * (functions by own time with their callers) and a flame graph, switched by a button row;
 * the two others are made when first asked for.
 */
import { Widget } from '@lumino/widgets';
import type { ICallTree } from '../../api/traceTypes';
import { el } from '../../util/dom';
import { BottomUpTable } from './bottomUpTable';
import { FlameGraph } from './flameGraph';

export type TreeMode = 'top-down' | 'bottom-up' | 'flame';

const MODES: [TreeMode, string][] = [
  ['top-down', 'Top-down'],
  ['bottom-up', 'Bottom-up'],
  ['flame', 'Flame graph']
];

export class TreeModes {
  constructor(
    page: HTMLElement,
    private readonly tree: ICallTree,
    private readonly topDown: Widget
  ) {
    const bar = el('div', 'jp-scorep-switch jp-scorep-tree-modes');
    bar.setAttribute('role', 'group');
    bar.setAttribute('aria-label', 'How to show the call tree');
    for (const [mode, label] of MODES) {
      const b = el('button', 'jp-scorep-switch-button', label);
      b.dataset.mode = mode;
      b.addEventListener('click', () => this.show(mode));
      bar.appendChild(b);
      this.buttons.set(mode, b);
    }
    this.holder = el('div', 'jp-scorep-tree-holder');
    page.append(bar, this.holder);
    Widget.attach(topDown, this.holder);
    this.show('top-down');
  }

  /** The views made so far (the panel forwards attach messages to them and disposes them). */
  get views(): Widget[] {
    return [this.topDown, ...this.others.values()];
  }

  show(mode: TreeMode): void {
    for (const [m, b] of this.buttons) {
      b.setAttribute('aria-pressed', String(m === mode));
    }
    let view = mode === 'top-down' ? this.topDown : this.others.get(mode);
    if (!view) {
      view =
        mode === 'bottom-up'
          ? new BottomUpTable(this.tree.root)
          : new FlameGraph(this.tree.root);
      this.others.set(mode, view);
      Widget.attach(view, this.holder);
    }
    for (const v of this.views) {
      v.node.hidden = v !== view;
    }
  }

  dispose(): void {
    for (const v of this.others.values()) {
      v.dispose();
    }
    this.others.clear();
  }

  private readonly holder: HTMLDivElement;
  private readonly buttons = new Map<TreeMode, HTMLButtonElement>();
  private readonly others = new Map<TreeMode, Widget>();
}
