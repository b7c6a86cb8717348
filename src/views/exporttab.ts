/** The Export tab: download links for the trace, the profile and a Perfetto JSON, and the
 * buttons that start Vampir or Cube on the server's machine when the server found them. */
import type {
  DownloadKind,
  IExperiment,
  IVersion,
  ToolKind
} from '../api/experimentTypes';
import type { ScorepAPI } from '../api/apiClient';
import { el, errorText } from '../util/dom';

const DOWNLOADS: [string, DownloadKind, 'otf2' | 'cubex', string][] = [
  [
    'OTF2 trace (.zip)',
    'otf2',
    'otf2',
    'for Vampir, otf2-print, Score-P tools'
  ],
  ['CUBE4 profile (.cubex)', 'cubex', 'cubex', 'for Cube'],
  [
    'Chrome trace JSON',
    'perfetto',
    'otf2',
    'for ui.perfetto.dev or chrome://tracing'
  ]
];

const TOOLS: [string, ToolKind, 'otf2' | 'cubex'][] = [
  ['Open in Vampir', 'vampir', 'otf2'],
  ['Open in Cube', 'cube', 'cubex']
];

export function renderExport(
  page: HTMLElement,
  options: {
    api: ScorepAPI;
    path: string;
    experiment: IExperiment;
    version: IVersion | null;
    onMessage: (text: string, isError: boolean) => void;
  }
): void {
  const { api, path, experiment, version, onMessage } = options;
  page.textContent = '';
  const list = el('div', 'jp-scorep-export');
  for (const [label, what, needs, hint] of DOWNLOADS) {
    const row = el('div', 'jp-scorep-export-row');
    if (experiment.available[needs]) {
      const a = el('a', 'jp-scorep-download', label);
      a.href = api.downloadUrl(path, what);
      a.setAttribute('download', '');
      a.dataset.what = what;
      row.appendChild(a);
    } else {
      row.appendChild(
        el('span', 'jp-scorep-unavailable', `${label} (not written)`)
      );
    }
    row.appendChild(el('span', 'jp-scorep-hint', hint));
    list.appendChild(row);
  }
  const buttons = el('div', 'jp-scorep-export-row');
  for (const [label, tool, needs] of TOOLS) {
    const found =
      Boolean(experiment.tools?.[tool]) || Boolean(version?.tools?.[tool]);
    const button = el('button', 'jp-scorep-button jp-mod-styled', label);
    button.disabled = !(found && experiment.available[needs]);
    button.title = found
      ? `Start ${tool} on this experiment on the server's machine`
      : `${tool} was not found on the server's PATH`;
    button.addEventListener('click', async () => {
      try {
        const { pid } = await api.open(path, tool);
        onMessage(`Started ${tool} (pid ${pid}).`, false);
      } catch (error) {
        onMessage(errorText(error), true);
      }
    });
    buttons.appendChild(button);
  }
  list.appendChild(buttons);
  list.appendChild(
    el('div', 'jp-scorep-hint', `Experiment directory: ${path}`)
  );
  page.appendChild(list);
}
