/**
 * The tools a profiled cell's bundle asks to open its files in (`open`, set by the kernel
 * while `%%enable_vampir_launch_on_scorep_instrumented` is on): started once the files are
 * ready, as the Export tab's "Open in Vampir" would, but once per experiment (the server
 * remembers), so reopening the notebook does not start Vampir again.
 */
import type {
  IExperiment,
  IExperimentBundle,
  ToolKind
} from '../api/experimentTypes';
import type { ScorepAPI } from '../api/apiClient';
import { errorText } from '../util/dom';

const NEEDS: Record<ToolKind, 'otf2' | 'cubex'> = {
  vampir: 'otf2',
  cube: 'cubex'
};
const NAMES: Record<ToolKind, string> = { vampir: 'Vampir', cube: 'Cube' };

/** Open what the bundle asks for; says what happened through `message` (null: nothing). */
export async function openRequested(
  api: ScorepAPI,
  bundle: IExperimentBundle,
  experiment: IExperiment,
  message: (text: string, isError: boolean) => void
): Promise<void> {
  for (const tool of bundle.open ?? []) {
    if (!(tool in NEEDS)) {
      continue; // a tool of a later version
    }
    if (!experiment.available[NEEDS[tool]]) {
      message(
        `${NAMES[tool]} was asked for, but this run has no ${NEEDS[tool] === 'otf2' ? 'trace' : 'profile'} to open.`,
        true
      );
      continue;
    }
    try {
      const { pid, already } = await api.openOnce(bundle.path, tool);
      if (!already) {
        message(`Opened in ${NAMES[tool]} (pid ${pid}).`, false);
      }
    } catch (error) {
      message(errorText(error), true);
    }
  }
}
