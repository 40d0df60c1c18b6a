import { describe, expect, it } from 'vitest';
import { EarlyStages } from './early-stages.js';

const resolveIn = (ms: number, value: string) =>
  new Promise<string>((resolve) => setTimeout(() => resolve(value), ms));

describe("slot 0's stages ahead of a run's first batch (EarlyStages)", () => {
  it('makes them beside a slow first answer, and only for the first', async () => {
    let made = 0;
    const early = new EarlyStages(async () => {
      made += 1;
    }, 20);
    expect(await early.answer(resolveIn(80, 'claim'))).toBe('claim');
    await early.settled();
    expect(made).toBe(1);
    expect(await early.answer(resolveIn(80, 'claim'))).toBe('claim');
    expect(made).toBe(1);
  });

  it('leaves them to the first batch when the source answers at once, or fails', async () => {
    let made = 0;
    const make = async () => {
      made += 1;
    };
    const fast = new EarlyStages(make, 50);
    expect(await fast.answer(resolveIn(1, 'idle'))).toBe('idle');
    const failing = new EarlyStages(make, 50);
    await expect(failing.answer(Promise.reject(new Error('no such bucket')))).rejects.toThrow(
      'no such bucket',
    );
    const skipped = new EarlyStages(make, 1);
    skipped.skip();
    await skipped.answer(resolveIn(30, 'claim'));
    await Promise.all([fast.settled(), failing.settled(), skipped.settled()]);
    expect(made).toBe(0);
  });

  it('lets settled() wait for stages still being made', async () => {
    let done = false;
    const early = new EarlyStages(async () => {
      await resolveIn(50, '');
      done = true;
    }, 5);
    await early.answer(resolveIn(20, 'claim'));
    expect(done).toBe(false);
    await early.settled();
    expect(done).toBe(true);
  });
});
