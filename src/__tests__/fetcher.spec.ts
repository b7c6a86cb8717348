import { IWindowRequest, WindowFetcher } from '../timeline/fetcher';

describe('WindowFetcher', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('sends the first request at once and only the last of the burst after it', async () => {
    const sent: IWindowRequest[] = [];
    const got: number[] = [];
    const f = new WindowFetcher<number>(
      async req => {
        sent.push(req);
        return req.t0;
      },
      data => got.push(data),
      undefined,
      100
    );
    f.request({ t0: 1, t1: 2, width: 10 }); // after a quiet spell: sent now
    expect(sent).toEqual([{ t0: 1, t1: 2, width: 10 }]);
    f.request({ t0: 2, t1: 3, width: 10 });
    f.request({ t0: 3, t1: 4, width: 10 });
    jest.advanceTimersByTime(99);
    expect(sent).toHaveLength(1); // the rest of the burst waits
    jest.advanceTimersByTime(1);
    await Promise.resolve();
    await Promise.resolve();
    expect(sent).toEqual([
      { t0: 1, t1: 2, width: 10 },
      { t0: 3, t1: 4, width: 10 }
    ]);
    expect(got).toEqual([3]); // the first answer came after a newer request: dropped
    // quiet again: the next request goes at once, and nothing follows it
    jest.advanceTimersByTime(100);
    f.request({ t0: 7, t1: 8, width: 10 });
    expect(sent).toHaveLength(3);
    jest.advanceTimersByTime(200);
    expect(sent).toHaveLength(3);
  });

  it('drops a stale answer that arrives after a newer one and aborts it', async () => {
    const resolvers: ((v: number) => void)[] = [];
    const signals: AbortSignal[] = [];
    const got: number[] = [];
    const f = new WindowFetcher<number>(
      (req, signal) => {
        signals.push(signal);
        return new Promise<number>(resolve => resolvers.push(resolve));
      },
      data => got.push(data)
    );
    f.request({ t0: 1, t1: 2, width: 10 });
    f.flush();
    f.request({ t0: 5, t1: 6, width: 10 });
    f.flush();
    expect(signals[0].aborted).toBe(true);
    expect(signals[1].aborted).toBe(false);
    resolvers[1](5);
    resolvers[0](1); // the old answer comes last
    for (let i = 0; i < 5; i++) {
      await Promise.resolve();
    }
    expect(got).toEqual([5]);
    expect(f.dropped).toBe(1);
  });
});
