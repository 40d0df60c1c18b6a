import { connect as tlsConnect } from 'node:tls';
import { Admin, Consumer, type Message, MessagesStreamModes, Producer } from '@platformatic/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type KafkaConnectionOptions, type RunningKafka, startKafka } from './support/kafka.js';

// The real broker the Kafka source will be tested against, reached through @platformatic/kafka
// on every listener and mechanism that Sluice supports. Fails (never skips) without Java/Maven.

let kafka: RunningKafka;

beforeAll(async () => {
  kafka = await startKafka();
}, 600_000); // the first run on a machine downloads the broker's jars

afterAll(async () => {
  await kafka?.stop();
});

const PARTITIONS = 3;
const MESSAGES = 9;

const listeners: Array<[name: string, options: () => KafkaConnectionOptions]> = [
  ['PLAINTEXT', () => kafka.connection('plaintext')],
  ['SASL_SSL with PLAIN', () => kafka.connection('saslSsl', kafka.users.plain)],
  ['SASL_SSL with SCRAM-SHA-256', () => kafka.connection('saslSsl', kafka.users.scramSha256)],
  ['SASL_SSL with SCRAM-SHA-512', () => kafka.connection('saslSsl', kafka.users.scramSha512)],
  ['SSL with a client certificate', () => kafka.connection('ssl')],
];

describe.each(listeners)('over %s', (name, options) => {
  it('produces records and consumes them back in a consumer group', async () => {
    const topic = `roundtrip-${name.replace(/[^A-Za-z0-9]+/g, '-').toLowerCase()}`;
    await kafka.createTopic(topic, PARTITIONS);
    const sent = recordsFor(topic);

    const produced = await produce(options(), sent);
    // The broker reports each partition's first offset of the batch: all partitions were empty.
    expect(produced.map((entry) => [entry.partition, entry.offset]).sort()).toEqual([
      [0, 0n],
      [1, 0n],
      [2, 0n],
    ]);

    const { received, committed, highWatermarks } = await consumeAll(options(), topic, sent.length);
    expect(received.map(summary)).toEqual(expectedInPartitionOrder(sent));
    expect(highWatermarks).toEqual([3n, 3n, 3n]);
    expect(committed).toEqual([3n, 3n, 3n]);
  });
});

describe('authentication is enforced', () => {
  it.each([
    ['PLAIN', () => kafka.users.plain],
    ['SCRAM-SHA-256', () => kafka.users.scramSha256],
    ['SCRAM-SHA-512', () => kafka.users.scramSha512],
  ])('refuses a wrong %s password', async (_mechanism, user) => {
    const wrong = { ...user(), password: 'not-the-password' };
    const error = await metadataError(kafka.connection('saslSsl', wrong));
    expect(errorCodes(error)).toContain('PLT_KFK_AUTHENTICATION');
  });

  it('accepts the same users with the right password', async () => {
    // The control for the test above: the refusals are about the password, not the set-up.
    for (const user of Object.values(kafka.users)) {
      await expect(brokerCount(kafka.connection('saslSsl', user))).resolves.toBe(1);
    }
  });

  it('refuses a TLS client without a certificate on the SSL listener', async () => {
    const withoutCertificate = { ...kafka.connection('ssl'), tls: { ca: kafka.caPem } };
    const error = await metadataError(withoutCertificate);
    expect(errorCodes(error)).toContain('PLT_KFK_NETWORK');
    // The refusal comes from the broker's TLS layer: it alerts that the certificate is missing.
    await expect(tlsAlertWithoutCertificate()).resolves.toMatch(
      /ALERT_(BAD_CERTIFICATE|CERTIFICATE_REQUIRED)/,
    );
  });
});

interface SentRecord {
  topic: string;
  partition: number;
  key: Buffer;
  value: Buffer;
  headers: Map<Buffer, Buffer>;
  timestamp: bigint;
}

/** MESSAGES records spread round-robin over the partitions, each with a distinct key and value. */
function recordsFor(topic: string): SentRecord[] {
  const timestamp = BigInt(Date.now());
  return Array.from({ length: MESSAGES }, (_, index) => ({
    topic,
    partition: index % PARTITIONS,
    key: Buffer.from(`key-${index}`),
    value: Buffer.concat([Buffer.from(`value-${index}-`), Buffer.from([0x00, 0xff, 0xfe, index])]),
    headers: new Map([[Buffer.from('trace'), Buffer.from(`trace-${index}`)]]),
    timestamp: timestamp + BigInt(index),
  }));
}

async function produce(options: KafkaConnectionOptions, records: SentRecord[]) {
  // Idempotent, so that a retried batch cannot write a record twice and shift the expected offsets.
  const producer = new Producer({ clientId: 'sluice-test-producer', ...options, idempotent: true });
  try {
    const result = await producer.send({ messages: records });
    return result.offsets ?? [];
  } finally {
    await producer.close();
  }
}

/** Joins a fresh group, reads `count` messages from the earliest offsets, and commits them. */
async function consumeAll(options: KafkaConnectionOptions, topic: string, count: number) {
  const consumer = new Consumer({
    clientId: 'sluice-test-consumer',
    groupId: `group-${topic}`,
    ...options,
    sessionTimeout: 10_000,
    heartbeatInterval: 500,
  });
  try {
    const stream = await consumer.consume({
      topics: [topic],
      mode: MessagesStreamModes.EARLIEST,
      autocommit: false,
    });
    const received: Message[] = [];
    try {
      for await (const message of stream) {
        received.push(message);
        if (received.length === count) break;
      }
      // The committed offset is the next one to read. Committed explicitly: Message.commit() of
      // @platformatic/kafka 1.22 commits the message's own offset (fixed in later releases).
      await consumer.commit({
        offsets: lastPerPartition(received).map((last) => ({
          topic: last.topic,
          partition: last.partition,
          offset: last.offset + 1n,
          leaderEpoch: -1,
        })),
      });
    } finally {
      await stream.close();
    }
    received.sort((a, b) => a.partition - b.partition || Number(a.offset - b.offset));
    const partitions = [0, 1, 2];
    const commits = await consumer.listCommittedOffsets({ topics: [{ topic, partitions }] });
    const ends = await consumer.listOffsets({ topics: [topic] });
    return { received, committed: commits.get(topic), highWatermarks: ends.get(topic) };
  } finally {
    await consumer.close();
  }
}

function lastPerPartition(messages: Message[]): Message[] {
  const last = new Map<number, Message>();
  for (const message of messages) {
    const seen = last.get(message.partition);
    if (!seen || seen.offset < message.offset) last.set(message.partition, message);
  }
  return [...last.values()];
}

/** A record as comparable data; the value in hex shows raw bytes (not valid UTF-8) survive. */
function summary(message: Pick<Message, 'partition' | 'offset' | 'key' | 'value' | 'headers' | 'timestamp'>) {
  return {
    partition: message.partition,
    offset: message.offset,
    key: message.key.toString(),
    value: message.value.toString('hex'),
    timestamp: message.timestamp,
    headers: [...message.headers].map(([key, value]) => `${key}=${value}`),
  };
}

/** The sent records as the consumer must see them: by partition, numbered from offset 0 in send order. */
function expectedInPartitionOrder(sent: SentRecord[]) {
  return Array.from({ length: PARTITIONS }, (_, partition) =>
    sent
      .filter((record) => record.partition === partition)
      .map((record, offset) => summary({ ...record, offset: BigInt(offset) })),
  ).flat();
}

async function brokerCount(options: KafkaConnectionOptions): Promise<number> {
  const admin = new Admin({ clientId: 'sluice-test-probe', ...options, retries: 0 });
  try {
    return (await admin.metadata({ topics: [] })).brokers.size;
  } finally {
    await admin.close();
  }
}

async function metadataError(options: KafkaConnectionOptions): Promise<unknown> {
  try {
    await brokerCount(options);
  } catch (error) {
    return error;
  }
  throw new Error('the broker accepted a client it should have refused');
}

/** The codes of an error and of all the errors it wraps (`errors` of an aggregate, `cause`). */
function errorCodes(error: unknown): string[] {
  if (!error || typeof error !== 'object') return [];
  const { code, errors, cause } = error as { code?: unknown; errors?: unknown[]; cause?: unknown };
  const nested = [...(errors ?? []), cause].flatMap(errorCodes);
  return typeof code === 'string' ? [code, ...nested] : nested;
}

/** Opens a TLS connection to the SSL listener without a certificate; resolves with the error code. */
function tlsAlertWithoutCertificate(): Promise<string> {
  const [host, port] = kafka.bootstrap.ssl.split(':') as [string, string];
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host, port: Number(port), ca: kafka.caPem });
    // With TLS 1.3 the server checks the client's (empty) certificate after the client's side of
    // the handshake is done, so the alert arrives on the first read.
    socket.once('secureConnect', () => socket.write(Buffer.alloc(8)));
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    socket.once('close', () =>
      reject(new Error('the SSL listener closed the connection without a TLS alert')),
    );
  });
}
