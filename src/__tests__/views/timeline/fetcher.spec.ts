import { IWindowRequest, WindowFetcher } from '../../../views/timeline/fetcher';

/** A loader whose answers the test gives by hand, in any order. */
function manualLoader() {
  const sent: IWindowRequest[] = [];
  const signals: AbortSignal[] = [];
  const answers: ((v: number) => void)[] = [];
  const failures: ((e: Error) => void)[] = [];
  const load = (req: IWindowRequest, signal: AbortSignal) => {
    sent.push(req);
    signals.push(signal);
    return new Promise<number>((resolve, reject) => {
      answers.push(resolve);
      failures.push(reject);
    });
  };
  return { sent, signals, answers, failures, load };
}

const settle = async () => {
  for (let i = 0; i < 5; i++) {
    await Promise.resolve();
  }
};

const win = (t0: number): IWindowRequest => ({ t0, t1: t0 + 1, width: 10 });

describe('WindowFetcher', () => {
  it('sends at once, keeps only the newest view while one is in flight, sends it on the answer', async () => {
    const l = manualLoader();
    const got: number[] = [];
    const f = new WindowFetcher<number>(l.load, data => got.push(data));
    f.request(win(1)); // nothing in flight: sent now, no timer
    expect(l.sent).toEqual([win(1)]);
    f.request(win(2));
    f.request(win(3)); // replaces 2: a burst costs one request per answer
    expect(l.sent).toHaveLength(1);
    expect(l.signals[0].aborted).toBe(false); // the one in flight is not thrown away
    l.answers[0](1);
    await settle();
    expect(got).toEqual([1]); // drawn: the newest data there is until 3's answer
    expect(l.sent).toEqual([win(1), win(3)]);
    l.answers[1](3);
    await settle();
    expect(got).toEqual([1, 3]);
    expect(l.sent).toHaveLength(2); // nothing pending: nothing more sent
    f.request(win(7)); // idle again: sent at once
    expect(l.sent).toHaveLength(3);
    expect(f.dropped).toBe(0);
  });

  it('flush() sends the pending view now, aborting the one in flight, whose late answer is dropped', async () => {
    const l = manualLoader();
    const got: number[] = [];
    const f = new WindowFetcher<number>(l.load, data => got.push(data));
    f.request(win(1));
    f.request(win(5));
    f.flush();
    expect(l.sent).toEqual([win(1), win(5)]);
    expect(l.signals[0].aborted).toBe(true);
    expect(l.signals[1].aborted).toBe(false);
    l.answers[1](5);
    l.answers[0](1); // the old answer comes last
    await settle();
    expect(got).toEqual([5]);
    expect(f.dropped).toBe(1);
    // the newest request answered: the next goes out at once
    f.request(win(8));
    expect(l.sent).toHaveLength(3);
  });

  it('reports an error, not an abort, and still sends the pending view', async () => {
    const l = manualLoader();
    const errors: string[] = [];
    const f = new WindowFetcher<number>(
      l.load,
      () => undefined,
      e => errors.push(e.message)
    );
    f.request(win(1));
    f.request(win(2));
    l.failures[0](new Error('server gone'));
    await settle();
    expect(errors).toEqual(['server gone']);
    expect(l.sent).toEqual([win(1), win(2)]);
    const abort = new Error('aborted');
    abort.name = 'AbortError';
    l.failures[1](abort);
    await settle();
    expect(errors).toEqual(['server gone']);
  });

  it('sends nothing and draws nothing after dispose', async () => {
    const l = manualLoader();
    const got: number[] = [];
    const f = new WindowFetcher<number>(l.load, data => got.push(data));
    f.request(win(1));
    f.request(win(2));
    f.dispose();
    expect(l.signals[0].aborted).toBe(true);
    l.answers[0](1);
    await settle();
    expect(got).toEqual([]);
    expect(l.sent).toHaveLength(1);
    f.request(win(3));
    expect(l.sent).toHaveLength(1);
  });
});
