/**
 * Window fetching, one request in flight, the newest view wins. A request is sent at once
 * when none is in flight; while one is, later requests only replace the pending view, which
 * is sent the moment the answer comes. A wheel step is redrawn as soon as the server answers,
 * and a burst of wheeling or dragging is paced by the server's own speed, never by a timer:
 * with a 120 ms debounce, steps that came while its timer ran waited it out, and a zoom took
 * ~105–115 ms (median) and ~190 ms (p95) from the wheel to the refined window drawn, of which
 * the server's answer was 30–55 ms (benchmarks/panel_frames.py, 1M and 10M events).
 * Every answer for the view last sent is drawn (an answer for an older view is still the
 * newest data: the view reprojects it until the next one); an answer to a request that
 * `flush()` superseded is dropped, and that request aborted.
 */

import type { ITimelineShape } from '../../api/traceTypes';

/** A window at a width; a timeline's also what of its locations (rows, ranks in view). */
export interface IWindowRequest extends ITimelineShape {
  t0: number;
  t1: number;
  width: number;
}

export type WindowLoader<T> = (
  request: IWindowRequest,
  signal: AbortSignal
) => Promise<T>;

export class WindowFetcher<T> {
  constructor(
    private readonly load: WindowLoader<T>,
    private readonly onData: (data: T, request: IWindowRequest) => void,
    private readonly onError: (error: Error) => void = () => undefined
  ) {}

  /** Ask for a window: sent now when no request is in flight, else when its answer comes. */
  request(req: IWindowRequest): void {
    this.pending = req;
    if (!this.waiting) {
      this.flush();
    }
  }

  /** Send the pending request now, aborting the one in flight. */
  flush(): void {
    const req = this.pending;
    if (!req || this.disposed) {
      return;
    }
    this.pending = null;
    this.controller?.abort();
    const controller = new AbortController();
    this.controller = controller;
    const seq = ++this.sequence;
    this.inFlight++;
    this.waiting = true;
    const settle = (): boolean => {
      this.inFlight--;
      const current = seq === this.sequence && !this.disposed;
      if (current) {
        this.waiting = false;
      } else {
        this.dropped++;
      }
      return current;
    };
    this.load(req, controller.signal).then(
      data => {
        if (settle()) {
          this.onData(data, req);
          this.sendPending();
        }
      },
      error => {
        if (settle()) {
          if ((error as Error)?.name !== 'AbortError') {
            this.onError(error as Error);
          }
          this.sendPending();
        }
      }
    );
  }

  /** Number of answers ignored because `flush()` had sent a newer request. */
  dropped = 0;
  /** Requests sent and not yet settled (an aborted one until its promise settles). */
  inFlight = 0;

  dispose(): void {
    this.disposed = true;
    this.pending = null;
    this.controller?.abort();
  }

  private sendPending(): void {
    if (!this.waiting) {
      this.flush();
    }
  }

  /** Whether the newest request sent has not been answered yet. */
  private waiting = false;
  private pending: IWindowRequest | null = null;
  private controller: AbortController | null = null;
  private sequence = 0;
  private disposed = false;
}
