import { Panel, Widget } from '@lumino/widgets';
import { ExperimentRenderer } from '../../mime';
import { ExperimentPanel } from '../../panel/panel';
import { bundle, experiment, fakeApi } from './panelFakes';

// the panel's and the renderer's life in a notebook: attached, detached, disposed
describe('ExperimentPanel', () => {
  afterEach(() => jest.useRealTimers());

  it('follows its panel when detached, re-attached and disposed with the notebook', async () => {
    const api = fakeApi([async () => experiment('ready')]);
    const panel = new ExperimentPanel(bundle, api);
    // the output area: a layout that holds the panel, in a notebook attached to the page
    const notebook = new Panel();
    notebook.addWidget(panel);
    Widget.attach(notebook, document.body);
    for (let i = 0; i < 20; i++) {
      await Promise.resolve();
    }
    expect(panel.node.dataset.state).toBe('ready');
    const timeline = panel.node.querySelector('.jp-scorep-timeline');
    expect(timeline).not.toBeNull();
    // scrolled out of the notebook's window and back: the views come and go with it
    Widget.detach(notebook);
    Widget.attach(notebook, document.body);
    // closing: the shell detaches the notebook first, then disposes it
    Widget.detach(notebook);
    expect(() => notebook.dispose()).not.toThrow();
    expect(panel.isDisposed).toBe(true);
  });
});

describe('ExperimentRenderer', () => {
  it('is removed and disposed on a re-run without "Widget is not attached."', async () => {
    const api = fakeApi([async () => experiment('ready')]);
    const renderer = new ExperimentRenderer(api);
    // the output area: a layout holding the renderer, attached to the page
    const outputArea = new Panel();
    outputArea.addWidget(renderer);
    Widget.attach(outputArea, document.body);
    await renderer.renderModel({
      data: { 'application/vnd.scorep.experiment+json': bundle as any }
    } as any);
    for (let i = 0; i < 20; i++) {
      await Promise.resolve();
    }
    const panel = renderer.node.querySelector('.jp-scorep-panel');
    expect(panel?.getAttribute('data-state')).toBe('ready');
    // a re-run clears the outputs: the layout removes the renderer, then disposes it
    const errors: unknown[] = [];
    const spy = jest
      .spyOn(console, 'error')
      .mockImplementation((...a) => void errors.push(a));
    renderer.parent = null;
    expect(() => renderer.dispose()).not.toThrow();
    spy.mockRestore();
    expect(errors).toEqual([]);
    outputArea.dispose();
  });
});
