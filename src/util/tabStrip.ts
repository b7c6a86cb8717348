/**
 * A row of tabs over their pages, the WAI-ARIA tabs pattern: one tab in the tab order, the
 * arrow keys move between tabs. The panel's tabs and the Compare view's use it.
 */
import { el } from './dom';

export interface ITabStripOptions<T extends string> {
  /** id and title of each tab, in order */
  tabs: [T, string][];
  /** classes of the tab bar, of the pages' container and of one page */
  barClass: string;
  pagesClass: string;
  pageClass: (id: T) => string;
  /** a tab's element id (its page's aria-labelledby) */
  elementId: (id: T) => string;
  /** the data attribute that carries a tab's id ('tab': data-tab) */
  dataKey: string;
  /** the user picked a tab (click or arrow key); show it with select() */
  onPick: (id: T) => void;
}

export class TabStrip<T extends string> {
  readonly bar: HTMLDivElement;
  readonly pages: HTMLDivElement;

  constructor(private readonly options: ITabStripOptions<T>) {
    this.bar = el('div', options.barClass);
    this.bar.setAttribute('role', 'tablist');
    this.pages = el('div', options.pagesClass);
    for (const [id, title] of options.tabs) {
      const tab = el('button', 'jp-scorep-tab', title);
      tab.setAttribute('role', 'tab');
      tab.id = options.elementId(id);
      tab.dataset[options.dataKey] = id;
      tab.addEventListener('click', () => options.onPick(id));
      tab.addEventListener('keydown', e => this.onKey(e, id));
      const page = el('div', options.pageClass(id));
      page.setAttribute('role', 'tabpanel');
      page.setAttribute('aria-labelledby', tab.id);
      this.bar.appendChild(tab);
      this.pages.appendChild(page);
      this.entries.set(id, { tab, page });
    }
  }

  tab(id: T): HTMLButtonElement {
    return this.entries.get(id)!.tab;
  }

  page(id: T): HTMLDivElement {
    return this.entries.get(id)!.page;
  }

  /** Show the page of `id`, hide the others. */
  select(id: T): void {
    for (const [key, { tab, page }] of this.entries) {
      const on = key === id;
      tab.setAttribute('aria-selected', String(on));
      tab.tabIndex = on ? 0 : -1;
      tab.classList.toggle('jp-scorep-tab-current', on);
      page.hidden = !on;
    }
  }

  private onKey(e: KeyboardEvent, id: T): void {
    const ids = [...this.entries.keys()];
    const i = ids.indexOf(id);
    let next: T | null = null;
    if (e.key === 'ArrowRight') {
      next = ids[(i + 1) % ids.length];
    } else if (e.key === 'ArrowLeft') {
      next = ids[(i + ids.length - 1) % ids.length];
    }
    if (next) {
      e.preventDefault();
      this.options.onPick(next);
      this.tab(next).focus();
    }
  }

  private readonly entries = new Map<
    T,
    { tab: HTMLButtonElement; page: HTMLDivElement }
  >();
}
