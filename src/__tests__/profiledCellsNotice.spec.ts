import type { Kernel } from '@jupyterlab/services';
import {
  INoticeReply,
  IProfiledCellsNotice,
  NOTICE_TARGET,
  NoticeSender,
  noticeFor
} from '../profiledCellsNotice';

/** A kernel connection that records the comms opened on it and answers like the kernel. */
function fakeKernel(id: string, answer: INoticeReply | null) {
  const opened: { target: string; data: IProfiledCellsNotice }[] = [];
  const kernel = {
    id,
    createComm(target: string) {
      const comm = {
        onMsg: (_msg: unknown) => undefined,
        onClose: () => undefined,
        dispose: jest.fn(),
        open(data: IProfiledCellsNotice) {
          opened.push({ target, data });
          // the kernel answers once, then closes the comm
          setTimeout(() => {
            if (answer) {
              comm.onMsg({ content: { data: answer } });
            }
            comm.onClose();
          }, 0);
        }
      };
      return comm;
    }
  };
  return { kernel: kernel as unknown as Kernel.IKernelConnection, opened };
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
    const { kernel, opened } = fakeKernel('k1', PREPARING);
    let cells: unknown[] = [SUB];
    const sender = new NoticeSender(
      () => kernel,
      () => cells,
      () => null
    );
    await expect(sender.update()).resolves.toEqual(PREPARING);
    expect(opened).toEqual([
      {
        target: NOTICE_TARGET,
        data: { version: 1, profiled_cells: [SUB] }
      }
    ]);
    await expect(sender.update()).resolves.toBeNull(); // told already
    expect(opened.length).toBe(1);
    cells = [SUB, { profile: true, isolation: 'inprocess' }]; // a cell toggled on
    await sender.update();
    expect(opened.length).toBe(2);
    expect(opened[1].data.profiled_cells.length).toBe(2);
    sender.reset(); // the kernel restarted: same id, knows nothing
    await sender.update();
    expect(opened.length).toBe(3);
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
    expect(opened).toEqual([]);
  });

  it('resolves null when the kernel closes the comm without an answer', async () => {
    const { kernel } = fakeKernel('k2', null);
    const sender = new NoticeSender(
      () => kernel,
      () => [SUB],
      () => null
    );
    await expect(sender.update()).resolves.toBeNull();
  });
});
