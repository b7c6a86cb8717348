import type { Kernel } from '@jupyterlab/services';
import { Signal } from '@lumino/signaling';
import {
  INoticeReply,
  NOTICE_TARGET,
  NoticeSender,
  noticeFor
} from '../../notebook/profiledCellsNotice';

/**
 * A kernel connection that records the shell messages sent to it and answers a notice as
 * the kernel does: a comm_msg on iopub, then idle (the open's future is done). It has no
 * `createComm`: a comm made that way would get a kernel subshell (a thread in the kernel).
 */
function fakeKernel(id: string, answer: INoticeReply | null) {
  const sent: { msgType: string; content: any; subshell?: string }[] = [];
  const kernel: any = {
    id,
    clientId: 'client',
    username: 'user',
    isDisposed: false,
    iopubMessage: new Signal<any, any>({}),
    sendShellMessage(msg: any) {
      sent.push({
        msgType: msg.header.msg_type,
        content: msg.content,
        subshell: msg.header.subshell_id
      });
      const done = new Promise<void>(resolve => {
        setTimeout(() => {
          if (msg.header.msg_type === 'comm_open' && answer) {
            kernel.iopubMessage.emit({
              header: { msg_type: 'comm_msg' },
              content: { comm_id: msg.content.comm_id, data: answer }
            });
          }
          resolve();
        }, 0);
      });
      return { done };
    }
  };
  const opened = () =>
    sent
      .filter(m => m.msgType === 'comm_open')
      .map(m => ({ target: m.content.target_name, data: m.content.data }));
  return {
    kernel: kernel as Kernel.IKernelConnection,
    opened,
    sent
  };
}

const SUB = { profile: true, isolation: 'subprocess' };
const PREPARING: INoticeReply = {
  version: 1,
  spare: 'preparing',
  why: 'a cell runs under builtin in a subprocess'
};

describe('the notice of profiled cells', () => {
  it('names only profiled cells, with the current JupyterLab settings', () => {
    expect(noticeFor([undefined, { profile: false }, 'x'], null)).toBeNull();
    const notice = noticeFor([undefined, SUB, { profile: true }], {
      backend: 'builtin'
    });
    expect(notice).toEqual({
      version: 1,
      profiled_cells: [
        { ...SUB, lab_settings: { backend: 'builtin' } },
        { profile: true, lab_settings: { backend: 'builtin' } }
      ]
    });
  });

  it('is sent once per kernel and content, and again after a restart', async () => {
    const { kernel, opened, sent } = fakeKernel('k1', PREPARING);
    let cells: unknown[] = [SUB];
    const sender = new NoticeSender(
      () => kernel,
      () => cells,
      () => null
    );
    await expect(sender.update()).resolves.toEqual(PREPARING);
    expect(opened()).toEqual([
      {
        target: NOTICE_TARGET,
        data: { version: 1, profiled_cells: [SUB] }
      }
    ]);
    // the sender closes the comm after the answer: the kernel would keep it; neither
    // message names a subshell
    expect(sent.map(m => m.msgType)).toEqual(['comm_open', 'comm_close']);
    expect(sent.every(m => !m.subshell)).toBe(true);
    expect(sent[1].content.comm_id).toBe(sent[0].content.comm_id);
    await expect(sender.update()).resolves.toBeNull(); // told already
    expect(opened().length).toBe(1);
    cells = [SUB, { profile: true, isolation: 'inprocess' }]; // a cell toggled on
    await sender.update();
    expect(opened().length).toBe(2);
    expect(opened()[1].data.profiled_cells.length).toBe(2);
    sender.reset(); // the kernel restarted: same id, knows nothing
    await sender.update();
    expect(opened().length).toBe(3);
  });

  it('tells nothing without profiled cells or without a Score-P kernel', async () => {
    const { kernel, opened } = fakeKernel('k1', PREPARING);
    const none = new NoticeSender(
      () => kernel,
      () => [{ profile: false }],
      () => null
    );
    await expect(none.update()).resolves.toBeNull();
    const notScorep = new NoticeSender(
      () => null,
      () => [SUB],
      () => null
    );
    await expect(notScorep.update()).resolves.toBeNull();
    expect(opened()).toEqual([]);
  });

  it('resolves null when the kernel is idle again without an answer', async () => {
    const { kernel } = fakeKernel('k2', null);
    const sender = new NoticeSender(
      () => kernel,
      () => [SUB],
      () => null
    );
    await expect(sender.update()).resolves.toBeNull();
  });
});
