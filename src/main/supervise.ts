/**
 * `npm start` keeps its parts running (issue: nothing lost when any part dies): each part
 * (Postgres, Redis, the Temporal dev server, the search process, the worker) runs under a
 * Supervisor that, when the part exits without being asked to, logs it and starts it again after
 * a back-off (0.5 s, doubling to 30 s; back to 0.5 s once a run has lasted a minute), until the
 * stack stops. A restart that fails is retried the same way (a part whose dependency is still
 * down, say). The others reconnect on their own meanwhile: the API answers 503 with Retry-After.
 */

/** One run of a part: it has exited when `exited` settles; `stop` ends it on purpose. */
export interface PartRun {
  /** Settles with how it ended (`code 1`, `signal SIGKILL`), whenever it ends. */
  exited: Promise<string>;
  stop(): Promise<void>;
  /** Shown in the log when the part is back (a pid, an address). */
  detail?: string;
}

export interface SupervisorOptions {
  log: (message: string) => void;
  firstBackoffMs?: number;
  maxBackoffMs?: number;
  /** A run this long resets the back-off. */
  healthyAfterMs?: number;
  /** Called after each restart that succeeded (a test or the chaos run counts them). */
  onRestart?: (name: string, downMs: number) => void;
}

export class Supervisor {
  private current?: PartRun;
  private stopping = false;
  private wake?: () => void;
  private watching?: Promise<void>;
  /** Restarts that succeeded. */
  restarts = 0;

  constructor(
    readonly name: string,
    private readonly start: () => Promise<PartRun>,
    private readonly options: SupervisorOptions,
  ) {}

  /** Starts the part the first time (a failure here is the caller's: npm start fails), then watches it. */
  async run(): Promise<PartRun> {
    const first = await this.start();
    this.current = first;
    this.watching = this.watch(first);
    return first;
  }

  /** The run now under way, if any. */
  get running(): PartRun | undefined {
    return this.current;
  }

  private async watch(first: PartRun): Promise<void> {
    const { log } = this.options;
    const firstBackoff = this.options.firstBackoffMs ?? 500;
    const maxBackoff = this.options.maxBackoffMs ?? 30_000;
    const healthyAfter = this.options.healthyAfterMs ?? 60_000;
    let run: PartRun | undefined = first;
    let backoff = firstBackoff;
    let startedAt = Date.now();
    let downSince = 0;
    for (;;) {
      let how = 'failed to start';
      if (run) {
        how = await run.exited;
        if (this.stopping) return;
        this.current = undefined;
        downSince = Date.now();
        if (Date.now() - startedAt >= healthyAfter) backoff = firstBackoff;
        log(`${this.name} exited (${how}): starting it again in ${(backoff / 1000).toFixed(1)} s`);
      }
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        setTimeout(resolve, backoff).unref();
      });
      this.wake = undefined;
      if (this.stopping) return;
      backoff = Math.min(backoff * 2, maxBackoff);
      try {
        run = await this.start();
      } catch (err) {
        run = undefined;
        const why = err instanceof Error ? err.message.split('\n')[0] : String(err ?? 'no reason given');
        log(`${this.name} did not start again (${why}): next try in ${(backoff / 1000).toFixed(1)} s`);
        continue;
      }
      if (this.stopping) {
        await run.stop().catch(() => undefined);
        return;
      }
      this.current = run;
      startedAt = Date.now();
      this.restarts++;
      const downMs = Date.now() - downSince;
      log(`${this.name} is back${run.detail ? ` (${run.detail})` : ''} after ${(downMs / 1000).toFixed(1)} s`);
      this.options.onRestart?.(this.name, downMs);
    }
  }

  /**
   * No more restarts (the stack is stopping: Ctrl-C reaches every child at once, and a part
   * that exits then must stay down); the run under way is left to stop().
   */
  halt(): void {
    this.stopping = true;
    this.wake?.();
  }

  /** Stops the part and any restart; resolves once the run under way (or one starting meanwhile) has stopped. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    const run = this.current;
    this.current = undefined;
    await run?.stop();
    await this.watching;
  }
}
