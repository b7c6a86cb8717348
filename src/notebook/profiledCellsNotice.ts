/**
 * Tell the kernel which profiled cells a notebook holds, before any of them runs, so it can
 * prepare its spare worker while the user still reads or types (the `jupyterlab-scorep`
 * comm; the kernel's side and the why: kernel/scorep_kernel/profiled_cells_notice.py;
 * docs/API.md, "Kernel comm"). Sent when a Score-P kernel is ready and whenever the
 * notebook's profiled cells change; a notice the kernel already has is not sent again.
 */
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { JSONObject, UUID } from '@lumino/coreutils';
import {
  IScorepMetadata,
  IUserSettings,
  isProfiled,
  refreshedMetadata
} from './cellSettings';

export const NOTICE_TARGET = 'jupyterlab-scorep';
export const NOTICE_VERSION = 1;

/** Frontend → kernel: the comm's open message. */
export interface IProfiledCellsNotice {
  version: typeof NOTICE_VERSION;
  /** the `scorep` metadata of each profiled cell, with the current JupyterLab settings */
  profiled_cells: IScorepMetadata[];
}

/** Kernel → frontend: its one message on the comm, before it closes it. */
export interface INoticeReply {
  version: typeof NOTICE_VERSION;
  spare: 'preparing' | 'not needed' | 'off';
  why: string;
}

/**
 * The notice for these cells' metadata (cells that are not profiled are left out), or
 * null when none is profiled: a notebook without profiled cells tells the kernel nothing.
 */
export function noticeFor(
  cells: ReadonlyArray<unknown>,
  settings: IUserSettings | null
): IProfiledCellsNotice | null {
  const profiled = cells
    .filter(isProfiled)
    .map(meta => refreshedMetadata(meta as IScorepMetadata, settings));
  return profiled.length
    ? { version: NOTICE_VERSION, profiled_cells: profiled }
    : null;
}

/**
 * Send a notice; resolves with the kernel's answer (null if none came before the kernel
 * was idle again). The comm is opened and closed with plain shell messages, not through
 * `kernel.createComm`: JupyterLab would start a kernel subshell (a thread) for the comm's
 * target, and that thread would show in cells profiled in the kernel while it lives.
 */
export function sendNotice(
  kernel: Kernel.IKernelConnection,
  notice: IProfiledCellsNotice
): Promise<INoticeReply | null> {
  const commId = UUID.uuid4();
  return new Promise(resolve => {
    let answer: INoticeReply | null = null;
    const onIopub = (
      _: Kernel.IKernelConnection,
      msg: KernelMessage.IIOPubMessage
    ) => {
      if (
        msg.header.msg_type === 'comm_msg' &&
        (msg.content as KernelMessage.ICommMsgMsg['content']).comm_id === commId
      ) {
        answer = (msg.content as KernelMessage.ICommMsgMsg['content'])
          .data as unknown as INoticeReply;
      }
    };
    kernel.iopubMessage.connect(onIopub);
    const done = () => {
      kernel.iopubMessage.disconnect(onIopub);
      if (!kernel.isDisposed) {
        // the kernel keeps the comm until told: close it (no answer comes back)
        const close = KernelMessage.createMessage({
          msgType: 'comm_close',
          channel: 'shell',
          session: kernel.clientId,
          username: kernel.username,
          content: { comm_id: commId, data: {} }
        });
        kernel.sendShellMessage(close, false, true);
      }
      resolve(answer);
    };
    // no reply to a comm_open: its future is done when the kernel is idle again, after
    // the answer was published
    const open = KernelMessage.createMessage({
      msgType: 'comm_open',
      channel: 'shell',
      session: kernel.clientId,
      username: kernel.username,
      content: {
        comm_id: commId,
        target_name: NOTICE_TARGET,
        data: notice as unknown as JSONObject
      }
    });
    kernel.sendShellMessage(open, false, true).done.then(done, done);
  });
}

/**
 * Sends a notebook's notices: `update` is called when the kernel may have changed or the
 * cells did; it sends only what this kernel has not been told yet. `reset` after a kernel
 * restart (same kernel id, empty kernel).
 */
export class NoticeSender {
  private told = '';

  constructor(
    private readonly kernel: () => Kernel.IKernelConnection | null | undefined,
    private readonly cells: () => ReadonlyArray<unknown>,
    private readonly settings: () => IUserSettings | null
  ) {}

  update(): Promise<INoticeReply | null> {
    const kernel = this.kernel();
    const notice = noticeFor(this.cells(), this.settings());
    if (!kernel || !notice) {
      return Promise.resolve(null);
    }
    const key = `${kernel.id}|${JSON.stringify(notice)}`;
    if (key === this.told) {
      return Promise.resolve(null);
    }
    this.told = key;
    return sendNotice(kernel, notice).catch(reason => {
      this.told = ''; // try again on the next change
      console.warn(
        'jupyterlab-scorep: the kernel did not take the notice.',
        reason
      );
      return null;
    });
  }

  reset(): void {
    this.told = '';
  }
}
