/**
 * Waits a sandbox partner can end now (CONTRACT §14, POST /sandbox/fast-forward): `wait` is
 * `condition(until, duration)` that the fastForward update also ends, as if the duration had
 * passed (it then answers false unless `until` holds). The update is accepted only during such a
 * wait (its validator refuses otherwise, so a refused one leaves no trace in the history) and is
 * answered once the workflow calls `settled()` after the step the wait leads to, so a partner who
 * reads the object next finds it expired, accrued or moved on.
 *
 * A `condition` with a timeout starts the same timer as the `sleep` it replaces, so histories
 * recorded before replay unchanged (test/workflows/replay.test.ts).
 */
import { allHandlersFinished, CancellationScope, condition, patched, setHandler } from '@temporalio/workflow';
import { FAST_FORWARD_OUTLIVES_CANCEL } from './patches';
import type { Duration } from '@temporalio/common';
import { fastForwardUpdate, type FastForwardWait } from './messages';

export interface FastForward {
  wait(name: FastForwardWait, until: () => boolean, duration: Duration, summary: string): Promise<boolean>;
  /** The step after a wait is done (or the workflow ends): a fast-forward waiting for it is answered. */
  settled(): void;
  /** Whether the last wait was ended by a fast-forward (until settled). */
  readonly fired: boolean;
  /**
   * The workflow ends: a fast-forward still waiting is answered, and every handler is let finish
   * (also in a cancelled run), so no caller is left with "workflow completed before the update".
   * Adds no command when nothing is waiting.
   */
  finish(): Promise<void>;
}

export function fastForwardable(): FastForward {
  let waiting: FastForwardWait | undefined;
  let fired: FastForwardWait | undefined;
  let answered = true;
  // Registered when the first wait begins, not before: an update that came with the run's first
  // task (a partner fast-forwarding an object just made) is held by the SDK until its handler is
  // set, and is then validated against that wait rather than refused as waiting on nothing.
  let registered = false;
  const register = () => {
    if (registered) return;
    registered = true;
    setHandler(
      fastForwardUpdate,
      async () => {
        const wait = waiting!;
        fired = wait;
        answered = false;
        // Answered when the step after the wait is done, also in a run being cancelled. Runs before
        // this patch failed it (CancelledFailure) when the run was cancelled meanwhile, and replay so.
        if (patched(FAST_FORWARD_OUTLIVES_CANCEL)) await CancellationScope.nonCancellable(() => condition(() => answered));
        else await condition(() => answered);
        return wait;
      },
      {
        validator: () => {
          if (!waiting || fired) throw new Error('nothing to fast-forward: the object waits on nothing now');
        },
      },
    );
  };
  return {
    async wait(name, until, duration, summary) {
      waiting = name;
      register();
      try {
        const met = await condition(() => until() || fired !== undefined, duration, { summary });
        return met && until();
      } finally {
        waiting = undefined;
      }
    },
    settled() {
      fired = undefined;
      answered = true;
    },
    get fired() {
      return fired !== undefined;
    },
    async finish() {
      this.settled();
      await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
    },
  };
}
