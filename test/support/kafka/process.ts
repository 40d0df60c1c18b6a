import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Where one broker keeps its files, all under its own temp directory. */
export interface BrokerPaths {
  root: string;
  libDir: string;
  /** Classes the tests compile onto the broker's classpath (MskIamValidator). */
  classesDir: string;
  serverProperties: string;
  log4jProperties: string;
  dataDir: string;
  logDir: string;
}

/** The broker's own log (log4j), kept in its temp directory rather than on the test output. */
export const serverLog = (paths: BrokerPaths) => join(paths.logDir, 'server.log');
/** What the JVM itself prints (crashes, an unhandled startup error) before log4j is up. */
export const jvmOutput = (paths: BrokerPaths) => join(paths.logDir, 'jvm.out');

/**
 * The JVM's arguments. The heap is capped because the test machines have two cores and run
 * other servers beside the broker; C1 only (TieredStopAtLevel=1) cuts the JIT work at start-up,
 * which dominates a test broker's short life.
 */
function javaArgs(paths: BrokerPaths, logFile: string, mainClass: string, args: string[]): string[] {
  return [
    '-Xms128m',
    '-Xmx512m',
    '-XX:TieredStopAtLevel=1',
    '-XX:+UseSerialGC',
    '-Djava.awt.headless=true',
    `-Dlog4j2.configurationFile=${paths.log4jProperties}`,
    `-Dsluice.kafka.log=${logFile}`,
    '-cp',
    `${join(paths.libDir, '*')}:${paths.classesDir}`,
    mainClass,
    ...args,
  ];
}

/**
 * Runs KafkaTool.java (beside this file) with the broker's jars: Kafka's own Java client doing
 * what the tests' client cannot (transactions, adding partitions); see the file for commands.
 */
export async function runKafkaTool(paths: BrokerPaths, bootstrap: string, args: string[]): Promise<void> {
  const source = fileURLToPath(new URL('./KafkaTool.java', import.meta.url));
  const logFile = join(paths.logDir, 'kafka-tool.log');
  try {
    await run('java', javaArgs(paths, logFile, source, [bootstrap, ...args]), { cwd: paths.root });
  } catch (error) {
    const output = error as { stdout?: string; stderr?: string };
    throw new Error(`KafkaTool ${args[0]} failed:\n${output.stdout ?? ''}${output.stderr ?? ''}`, {
      cause: error,
    });
  }
}

/** Compiles MskIamValidator.java (beside this file) into the broker's classes directory. */
export async function compileBrokerClasses(paths: BrokerPaths): Promise<void> {
  const source = fileURLToPath(new URL('./MskIamValidator.java', import.meta.url));
  try {
    await run('javac', ['-cp', join(paths.libDir, '*'), '-d', paths.classesDir, source], { cwd: paths.root });
  } catch (error) {
    const output = error as { stdout?: string; stderr?: string };
    throw new Error(`javac MskIamValidator.java failed:\n${output.stdout ?? ''}${output.stderr ?? ''}`, {
      cause: error,
    });
  }
}

/** Formats the data directory for KRaft, creating the SCRAM users so they exist at first start. */
export async function formatStorage(paths: BrokerPaths, clusterId: string, scram: string[]): Promise<void> {
  const args = ['format', '--config', paths.serverProperties, '--cluster-id', clusterId];
  for (const user of scram) args.push('--add-scram', user);
  const logFile = join(paths.logDir, 'format.log');
  try {
    await run('java', javaArgs(paths, logFile, 'kafka.tools.StorageTool', args), { cwd: paths.root });
  } catch (error) {
    const output = error as { stdout?: string; stderr?: string };
    throw new Error(
      `kafka-storage format failed:\n${output.stdout ?? ''}${output.stderr ?? ''}\n${await tail(logFile)}`,
      { cause: error },
    );
  }
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

/**
 * Starts `kafka.Kafka`. Its output goes to files, never to the test output. A broker must not
 * outlive the test process (a crashed test file would leave a JVM holding 0.5 GB), so the
 * process kills every broker it still has when it exits.
 */
export function spawnBroker(paths: BrokerPaths): ChildProcess {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const child of live) child.kill('SIGKILL');
    });
  }
  const output = openSync(jvmOutput(paths), 'a');
  try {
    const child = spawn('java', javaArgs(paths, serverLog(paths), 'kafka.Kafka', [paths.serverProperties]), {
      cwd: paths.root,
      stdio: ['ignore', output, output],
    });
    live.add(child);
    child.once('exit', () => live.delete(child));
    return child;
  } finally {
    // The child has its own copy of the descriptor.
    closeSync(output);
  }
}

/** Resolves with the exit code (or signal) once `child` has exited; at once if it already has. */
export function exited(child: ChildProcess): Promise<string> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve(describeExit(child.exitCode, child.signalCode));
  }
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve(describeExit(code, signal)));
  });
}

function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  return signal ? `signal ${signal}` : `exit code ${code}`;
}

/** SIGTERM for a controlled shutdown, then SIGKILL if the broker has not gone after `graceMs`. */
export async function stopProcess(child: ChildProcess, graceMs: number): Promise<void> {
  const gone = exited(child);
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), graceMs);
  });
  const outcome = await Promise.race([gone, timedOut]);
  clearTimeout(timer);
  if (outcome === 'timeout') await killProcess(child);
}

/** SIGKILL: the broker dies as in a crash, without flushing or a controlled shutdown. */
export async function killProcess(child: ChildProcess): Promise<void> {
  const gone = exited(child);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await gone;
}

/** The end of a log, for error messages. */
export async function tail(file: string, lines = 40): Promise<string> {
  try {
    const text = await readFile(file, 'utf8');
    return `--- last lines of ${file} ---\n${text.split('\n').slice(-lines).join('\n')}`;
  } catch (error) {
    return `(${file} could not be read: ${(error as Error).message})`;
  }
}
