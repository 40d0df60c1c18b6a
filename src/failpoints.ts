import { writeSync } from 'node:fs';

/**
 * The steps of a batch's way to committed (src/pipes/runtime/batch.ts) at which a test may have the
 * process kill itself, to show that a crash at each one loses and doubles nothing (README,
 * "Development": SLUICE_TEST_KILL_AT); `inserted` falls between a destination's insert and its
 * stage's emptying (passOn), where a stop inserts the batch again and says so.
 */
export const BATCH_STEPS = ['claimed', 'staged', 'between-moves', 'moved', 'inserted'] as const;
export type BatchStep = (typeof BATCH_STEPS)[number];

/** Called as a batch passes each step; kills the process at the one it was told. */
export type Failpoint = (step: BatchStep, batch: { seq: number }) => void;

/** Where to kill: a step, of one pipe (by name) or any, at its `hit`-th passing (from 1). */
export interface KillAt {
  step: BatchStep;
  pipeName: string | undefined;
  hit: number;
}

/**
 * Reads SLUICE_TEST_KILL_AT: `<step>[@<pipe name>][#<n>]`, for example `between-moves@orders#2`.
 * A string that is not one is an error naming the forms.
 */
export function parseKillAt(text: string): KillAt | string {
  const match = /^([a-z-]+)(?:@([^#]+))?(?:#([1-9]\d{0,5}))?$/.exec(text);
  const step = match?.[1] as BatchStep | undefined;
  if (!match || !step || !BATCH_STEPS.includes(step)) {
    return `SLUICE_TEST_KILL_AT must be <step>[@<pipe name>][#<n>] with a step of ${BATCH_STEPS.join(', ')}, got "${text}"`;
  }
  return { step, pipeName: match[2], hit: Number(match[3] ?? 1) };
}

/**
 * The failpoint of one pipe's run, or undefined when none is set for it. At its hit it writes one
 * line to stderr (synchronously: nothing after SIGKILL is flushed) and sends itself SIGKILL, as a
 * crash or an OOM kill would end it: no shutdown of any kind.
 */
export function failpointFor(killAt: KillAt | undefined, pipeName: string): Failpoint | undefined {
  if (!killAt || (killAt.pipeName !== undefined && killAt.pipeName !== pipeName)) return undefined;
  let passed = 0;
  return (step, batch) => {
    if (step !== killAt.step || ++passed < killAt.hit) return;
    writeSync(
      2,
      `sluice: SLUICE_TEST_KILL_AT: killed at ${step} of batch ${batch.seq} of pipe ${pipeName}\n`,
    );
    process.kill(process.pid, 'SIGKILL');
  };
}
