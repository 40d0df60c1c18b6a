import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Admin, type BaseOptions, Consumer } from '@platformatic/kafka';
import { type KafkaCertificates, makeCertificates } from './kafka/certs.js';
import {
  type BrokerPorts,
  type KafkaUser,
  LOG4J2_PROPERTIES,
  type MskIamKey,
  type SaslMechanism,
  scramArgument,
  serverProperties,
} from './kafka/config.js';
import { KAFKA_VERSION, kafkaJars, requireKafkaTools } from './kafka/jars.js';
import {
  type BrokerPaths,
  compileBrokerClasses,
  exited,
  formatStorage,
  jvmOutput,
  killProcess,
  runKafkaTool,
  serverLog,
  spawnBroker,
  stopProcess,
  tail,
} from './kafka/process.js';
import { waitFor } from './wait.js';

export type { BrokerPorts, KafkaUser, SaslMechanism };
export { KAFKA_VERSION };

/** The client-facing listeners: no security, SASL over TLS, and TLS with client certificates. */
export type KafkaListener = 'plaintext' | 'saslSsl' | 'ssl';

/** What a @platformatic/kafka client needs to reach one listener (spread it into its options). */
export type KafkaConnectionOptions = Pick<BaseOptions, 'bootstrapBrokers' | 'tls' | 'sasl'>;

export interface RunningKafka {
  version: string;
  /** `127.0.0.1:<port>` of each listener. */
  bootstrap: Record<KafkaListener, string>;
  ports: BrokerPorts;
  /** The CA that signed the broker's certificate (trust it) and the client's. */
  caPem: string;
  /** A certificate and key the SSL listener accepts (it requires one). */
  clientCertPem: string;
  clientKeyPem: string;
  /** The AWS key the SASL_SSL listener's MSK IAM stand-in accepts (OAUTHBEARER, SigV4 tokens). */
  mskIam: MskIamKey;
  /** The SASL users that exist from the first start, one for each mechanism. */
  users: { plain: KafkaUser; scramSha256: KafkaUser; scramSha512: KafkaUser };
  /** The broker's temp directory (data, certificates, configuration, logs). */
  dir: string;
  /** The broker's own log, for a failing test to look at. */
  logFile: string;
  /** Client options for a listener; SASL_SSL needs a user, SSL gets the client certificate. */
  connection(listener: 'plaintext' | 'ssl'): KafkaConnectionOptions;
  connection(listener: 'saslSsl', user: KafkaUser): KafkaConnectionOptions;
  /** Creates a topic through the admin API; returns once every partition's leader serves it. */
  createTopic(name: string, partitions: number): Promise<void>;
  /** Kafka's Java producer writes these transactions ("commit:0-99", "abort:100-149") in order. */
  produceTransactions(topic: string, partition: number, transactions: string[]): Promise<void>;
  /** Grows a topic to `count` partitions (Kafka's Java admin client). */
  addPartitions(topic: string, count: number): Promise<void>;
  /** Controlled shutdown (SIGTERM, SIGKILL after `graceMs`); data and ports are kept for start(). */
  shutdown(graceMs?: number): Promise<void>;
  /** SIGKILL, as a crash; data and ports are kept for start(). */
  kill(): Promise<void>;
  /** Starts the broker again, on the same ports and data, after shutdown() or kill(). */
  start(): Promise<void>;
  /** shutdown() then start(). */
  restart(): Promise<void>;
  /** Shuts the broker down for good and removes its temp directory. */
  stop(): Promise<void>;
}

const HOST = '127.0.0.1';
/** A cold JVM on a busy two-core machine can take tens of seconds to open its listeners. */
const READY_TIMEOUT_MS = 120_000;
const SHUTDOWN_GRACE_MS = 30_000;
/** Each attempt chooses new ports; only a port taken by someone else makes a new attempt. */
const START_ATTEMPTS = 3;

/**
 * Starts a real Apache Kafka broker (KRaft, one combined broker and controller node) in a temp
 * directory of its own, on free ports, with fresh certificates and users. The first call on a
 * machine downloads the broker's jars with Maven into a per-user cache.
 */
export async function startKafka(): Promise<RunningKafka> {
  requireKafkaTools();
  const libDir = await kafkaJars();
  const root = await mkdtemp(join(tmpdir(), 'sluice-kafka-'));
  try {
    return await startIn(root, libDir);
  } catch (error) {
    await rm(root, { recursive: true, force: true });
    throw error;
  }
}

async function startIn(root: string, libDir: string): Promise<RunningKafka> {
  const paths: BrokerPaths = {
    root,
    libDir,
    classesDir: join(root, 'classes'),
    serverProperties: join(root, 'config', 'server.properties'),
    log4jProperties: join(root, 'config', 'log4j2.properties'),
    dataDir: join(root, 'data'),
    logDir: join(root, 'logs'),
  };
  const certificates = await makeCertificates(join(root, 'certs'));
  const users = {
    plain: newUser('PLAIN', 'plain_user'),
    scramSha256: newUser('SCRAM-SHA-256', 'scram256_user'),
    scramSha512: newUser('SCRAM-SHA-512', 'scram512_user'),
  };
  const mskIam = {
    accessKeyId: `AKIA${randomBytes(8).toString('hex').toUpperCase()}`,
    secretKey: randomBytes(20).toString('base64'),
    region: 'eu-west-1',
    role: {
      accessKeyId: `ASIA${randomBytes(8).toString('hex').toUpperCase()}`,
      secretKey: randomBytes(20).toString('base64'),
      sessionToken: randomBytes(24).toString('hex'),
    },
  };
  await compileBrokerClasses(paths);
  const setup: BrokerSetup = { paths, certificates, users, mskIam };
  const { ports, child } = await firstStart(setup);
  return runningKafka(setup, ports, child);
}

interface BrokerSetup {
  paths: BrokerPaths;
  certificates: KafkaCertificates;
  users: RunningKafka['users'];
  mskIam: MskIamKey;
}

function newUser(mechanism: SaslMechanism, username: string): KafkaUser {
  return { mechanism, username, password: randomBytes(12).toString('hex') };
}

async function firstStart(setup: BrokerSetup): Promise<{ ports: BrokerPorts; child: ChildProcess }> {
  for (let attempt = 1; ; attempt += 1) {
    const ports = await choosePorts();
    await prepareStorage(setup, ports);
    try {
      return { ports, child: await launch(setup.paths, ports) };
    } catch (error) {
      if (attempt >= START_ATTEMPTS || !(await portWasTaken(setup.paths))) throw error;
    }
  }
}

/** Writes the configuration for `ports` and formats an empty data directory. */
async function prepareStorage(setup: BrokerSetup, ports: BrokerPorts): Promise<void> {
  const { paths, certificates, users } = setup;
  await rm(paths.dataDir, { recursive: true, force: true });
  await rm(paths.logDir, { recursive: true, force: true });
  await mkdir(paths.dataDir, { recursive: true });
  await mkdir(paths.logDir, { recursive: true });
  await mkdir(join(paths.root, 'config'), { recursive: true });
  const properties = serverProperties({
    ports,
    dataDir: paths.dataDir,
    certificates,
    plainUsers: [users.plain],
    mskIam: setup.mskIam,
  });
  await writeFile(paths.serverProperties, properties);
  await writeFile(paths.log4jProperties, LOG4J2_PROPERTIES);
  await formatStorage(paths, newClusterId(), [
    scramArgument(users.scramSha256),
    scramArgument(users.scramSha512),
  ]);
}

/** A Kafka UUID: 16 random bytes in unpadded base64url. Kafka never makes one starting with '-'. */
function newClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

async function portWasTaken(paths: BrokerPaths): Promise<boolean> {
  const logs = `${await tail(serverLog(paths), 200)}\n${await tail(jvmOutput(paths), 200)}`;
  return logs.includes('Address already in use');
}

/**
 * Four distinct free ports below the kernel's ephemeral range. Ports in that range could be
 * taken between this check and the broker's bind (or, after a restart, by any outgoing
 * connection's local port), since the kernel hands them out to every connect().
 */
async function choosePorts(): Promise<BrokerPorts> {
  const chosen = new Set<number>();
  const ephemeralStart = await ephemeralRangeStart();
  while (chosen.size < 4) {
    const port = 10_000 + Math.floor(Math.random() * (ephemeralStart - 10_000));
    if (!chosen.has(port) && (await isFree(port))) chosen.add(port);
  }
  const [plaintext, saslSsl, ssl, controller] = [...chosen] as [number, number, number, number];
  return { plaintext, saslSsl, ssl, controller };
}

async function ephemeralRangeStart(): Promise<number> {
  const range = await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').catch((error: unknown) => {
    // Not Linux: the IANA ephemeral range starts at 49152.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return '49152';
    throw error;
  });
  const start = Number(range.trim().split(/\s+/)[0]);
  return start > 11_000 ? start : 49_152;
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, HOST, () => probe.close(() => resolve(true)));
  });
}

/** Spawns the broker and waits until it serves metadata; kills it if it never does. */
async function launch(paths: BrokerPaths, ports: BrokerPorts): Promise<ChildProcess> {
  const child = spawnBroker(paths);
  try {
    await waitUntilReady(child, ports);
    // After a restart the topics' partitions come back one by one; "started" means all serve.
    const bootstrap = `${HOST}:${ports.plaintext}`;
    await withAdmin(bootstrap, async (admin) =>
      // The tests' own topics: the client's listOffsets of an internal topic (__consumer_offsets)
      // throws outside its promise.
      waitUntilPartitionsServe(admin, bootstrap, await admin.listTopics()),
    );
    return child;
  } catch (error) {
    await killProcess(child);
    throw new Error(
      `${(error as Error).message}\n${await tail(serverLog(paths))}\n${await tail(jvmOutput(paths))}`,
      {
        cause: error,
      },
    );
  }
}

/**
 * Ready means a metadata request on PLAINTEXT lists the broker: KRaft lists a broker only once it
 * is registered and unfenced, so topics can be created from then on. An open port is not enough.
 */
async function waitUntilReady(child: ChildProcess, ports: BrokerPorts): Promise<void> {
  const gone = exited(child).then((how): Probe => ({ ready: false, exited: how }));
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let lastReason: unknown;
  while (Date.now() < deadline) {
    const probe = await Promise.race([probeMetadata(ports), gone]);
    if (probe.ready) return;
    if (probe.exited) throw new Error(`the Kafka broker exited (${probe.exited}) before it was ready`);
    lastReason = probe.reason;
    await sleep(250);
  }
  throw new Error(`the Kafka broker was not ready after ${READY_TIMEOUT_MS} ms: ${String(lastReason)}`);
}

type Probe = { ready: true } | { ready: false; reason?: unknown; exited?: string };

/** Asks the broker for metadata once; a refusal is expected while it starts, so it is returned. */
async function probeMetadata(ports: BrokerPorts): Promise<Probe> {
  const admin = new Admin({
    clientId: 'sluice-test-readiness',
    bootstrapBrokers: [`${HOST}:${ports.plaintext}`],
    retries: 0,
    connectTimeout: 2_000,
    timeout: 5_000,
  });
  try {
    const metadata = await admin.metadata({ topics: [] });
    return metadata.brokers.size > 0
      ? { ready: true }
      : { ready: false, reason: 'no broker in the metadata yet' };
  } catch (error) {
    return { ready: false, reason: error };
  } finally {
    await admin.close();
  }
}

function runningKafka(setup: BrokerSetup, ports: BrokerPorts, firstChild: ChildProcess): RunningKafka {
  const { paths, certificates, users } = setup;
  let child: ChildProcess | undefined = firstChild;
  let removed = false;
  const bootstrap: Record<KafkaListener, string> = {
    plaintext: `${HOST}:${ports.plaintext}`,
    saslSsl: `${HOST}:${ports.saslSsl}`,
    ssl: `${HOST}:${ports.ssl}`,
  };

  function connection(listener: KafkaListener, user?: KafkaUser): KafkaConnectionOptions {
    const bootstrapBrokers = [bootstrap[listener]];
    if (listener === 'plaintext') return { bootstrapBrokers };
    if (listener === 'ssl') {
      const tls = {
        ca: certificates.caPem,
        cert: certificates.clientCertPem,
        key: certificates.clientKeyPem,
      };
      return { bootstrapBrokers, tls };
    }
    if (!user) throw new Error('the SASL_SSL listener needs a user: pass one of RunningKafka.users');
    const sasl = { mechanism: user.mechanism, username: user.username, password: user.password };
    return { bootstrapBrokers, tls: { ca: certificates.caPem }, sasl };
  }

  async function shutdown(graceMs = SHUTDOWN_GRACE_MS): Promise<void> {
    if (child) await stopProcess(child, graceMs);
    child = undefined;
  }

  async function kill(): Promise<void> {
    if (child) await killProcess(child);
    child = undefined;
  }

  async function start(): Promise<void> {
    if (removed) throw new Error('this Kafka broker was stopped for good; call startKafka() for a new one');
    if (child) throw new Error('the Kafka broker is already running');
    child = await launch(paths, ports);
  }

  return {
    version: KAFKA_VERSION,
    bootstrap,
    ports,
    caPem: certificates.caPem,
    clientCertPem: certificates.clientCertPem,
    clientKeyPem: certificates.clientKeyPem,
    mskIam: setup.mskIam,
    users,
    dir: paths.root,
    logFile: serverLog(paths),
    connection,
    createTopic: (name, partitions) => createTopic(bootstrap.plaintext, name, partitions),
    produceTransactions: (topic, partition, transactions) =>
      runKafkaTool(paths, bootstrap.plaintext, ['transactions', topic, String(partition), ...transactions]),
    addPartitions: (topic, count) =>
      runKafkaTool(paths, bootstrap.plaintext, ['add-partitions', topic, String(count)]),
    shutdown,
    kill,
    start,
    async restart() {
      await shutdown();
      await start();
    },
    async stop() {
      await shutdown();
      removed = true;
      await rm(paths.root, { recursive: true, force: true });
    },
  };
}

async function createTopic(bootstrap: string, name: string, partitions: number): Promise<void> {
  await withAdmin(bootstrap, async (admin) => {
    await admin.createTopics({ topics: [name], partitions, replicas: 1 });
    await waitUntilPartitionsServe(admin, bootstrap, [name]);
  });
}

async function withAdmin<T>(bootstrap: string, use: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: [bootstrap] });
  try {
    return await use(admin);
  } finally {
    await admin.close();
  }
}

/**
 * Waits until the leader serves every partition of `topics`. The metadata names a leader as soon
 * as the controller has chosen it, but the broker refuses produce and fetch for a while longer
 * (NOT_LEADER_OR_FOLLOWER); a client that retries a whole batch then writes its other partitions
 * twice. ListOffsets is refused in the same way, so its success means the partitions serve.
 */
async function waitUntilPartitionsServe(admin: Admin, bootstrap: string, topics: string[]): Promise<void> {
  if (topics.length === 0) return;
  // A consumer that never joins its group: only its ListOffsets is used.
  const probe = new Consumer({
    clientId: 'sluice-test-probe',
    groupId: 'sluice-test-probe',
    bootstrapBrokers: [bootstrap],
  });
  try {
    await waitFor(`the partitions of ${topics.join(', ')} to have a serving leader`, async () => {
      await admin.metadata({ topics, forceUpdate: true });
      // The client's listOffsets throws outside its promise when its metadata lacks a topic.
      const known = await probe.metadata({ topics, forceUpdate: true });
      if (topics.some((topic) => !known.topics.has(topic))) return undefined;
      await probe.listOffsets({ topics, timestamp: -1n });
      return true;
    });
  } finally {
    await probe.close();
  }
}
