import { describe, expect, it } from 'vitest';
import { COPY_BUDGET_BYTES, CopyBudget, copyable } from './copy-load.js';

describe("the source reader's copies in flight (CopyBudget)", () => {
  const MB = 1024 * 1024;

  it('runs copies side by side while their bytes fit, and holds back the one that would not', async () => {
    const budget = new CopyBudget();
    let inFlight = 0;
    let most = 0;
    const releases: (() => void)[] = [];
    const copy = (bytes: number) =>
      budget.spend(bytes, async () => {
        inFlight += bytes;
        most = Math.max(most, inFlight);
        await new Promise<void>((resolve) => releases.push(resolve));
        inFlight -= bytes;
      });
    const copies = [copy(100 * MB), copy(100 * MB), copy(100 * MB)];
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(releases).toHaveLength(2);
    releases.shift()?.();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(releases).toHaveLength(2);
    for (const release of releases.splice(0)) release();
    await new Promise((resolve) => setTimeout(resolve, 10));
    for (const release of releases.splice(0)) release();
    await Promise.all(copies);
    expect(most).toBeLessThanOrEqual(COPY_BUDGET_BYTES);
    expect(most).toBe(200 * MB);
  });

  it('gives the budget back when a copy fails', async () => {
    const budget = new CopyBudget();
    await expect(
      budget.spend(COPY_BUDGET_BYTES, async () => Promise.reject(new Error('refused'))),
    ).rejects.toThrow('refused');
    await expect(budget.spend(COPY_BUDGET_BYTES, async () => 'copied')).resolves.toBe('copied');
  });

  it('copies only files the budget holds whole', () => {
    expect(copyable(COPY_BUDGET_BYTES)).toBe(true);
    expect(copyable(COPY_BUDGET_BYTES + 1)).toBe(false);
  });
});
