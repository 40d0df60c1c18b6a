import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { Member, type MemberHost, PartitionState } from './member.js';
import { KafkaRecord } from './record-batches.js';

// The consumer is the real @platformatic/kafka client (it connects only when asked to); the host
// is a stand-in that records what the member tells it.
function hostWith(signal: AbortSignal, failures: unknown[]): MemberHost {
  return {
    topics: ['t'],
    logger: pino({ level: 'silent' }),
    signal,
    fetchable: () => [],
    fetchLimits: () => ({ bytes: 1 }),
    assigned: async () => {},
    outOfRange: async () => {},
    fetched: () => {},
    failed: (error) => failures.push(error),
  };
}

const connection = { bootstrapBrokers: ['127.0.0.1:1'] };

describe('a Kafka member (real client, stand-in host)', () => {
  it("stops the run when its consumer emits 'error' (a failed rejoin), instead of ending the process", async () => {
    const failures: unknown[] = [];
    const member = new Member(hostWith(new AbortController().signal, failures), 0, 'g', connection);
    const lost = new Error('Connection pool is closed.');
    // An 'error' event without a listener throws out of emit (and, from the client's callbacks,
    // out of the process).
    expect(() => member.consumer.emit('error', lost)).not.toThrow();
    expect(failures).toEqual([lost]);
    await member.consumer.close();
  });

  it('only logs an error the consumer reports while the run closes', async () => {
    const failures: unknown[] = [];
    const stopping = new AbortController();
    stopping.abort();
    const member = new Member(hostWith(stopping.signal, failures), 0, 'g', connection);
    expect(() => member.consumer.emit('error', new Error('late'))).not.toThrow();
    expect(failures).toEqual([]);
    await member.consumer.close();
  });
});

describe("a partition's state", () => {
  const value = Buffer.from('{}');
  const message = (offset: bigint) =>
    new KafkaRecord('t', 0, offset, 0, value, -1, 0, 0, value.length, 0, 0, undefined);

  it('is behind while the log holds more messages not fetched than it holds, so its batches take the whole wait', () => {
    const state = new PartitionState('t', 0, 0n);
    // A backlog: 10 fetched of 1,000.
    state.add(
      [...Array(10).keys()].map((i) => message(BigInt(i))),
      10n,
      1_000n,
    );
    expect(state.behind).toBe(true);
    // Caught up but for a few appended while the fetch was answered.
    state.add(
      [...Array(985).keys()].map((i) => message(BigInt(i + 10))),
      995n,
      1_000n,
    );
    expect(state.behind).toBe(false);
    state.moveTo(1_000n);
    expect(state.behind).toBe(false);
  });
});
