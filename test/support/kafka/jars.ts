import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants } from 'node:fs';
import { access, copyFile, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * The broker the tests run: 4.1 is the newest line that @platformatic/kafka 1.x tests against in
 * its CI. SLUICE_TEST_KAFKA_VERSION runs the same tests against another 4.x release (4.3.1 passes).
 */
export const KAFKA_VERSION = process.env.SLUICE_TEST_KAFKA_VERSION || '4.1.1';
/**
 * The slf4j-to-log4j binding: the log4j that kafka_2.13 4.1.1 uses. The binding only calls the
 * stable log4j API, so it also serves brokers built against a later 2.x.
 */
const LOG4J_VERSION = '2.24.3';

const POM = join(dirname(fileURLToPath(import.meta.url)), 'pom.xml');
/** Written last into a finished download, so a directory without it is never used. */
const COMPLETE_MARKER = 'complete';

interface Tool {
  command: string;
  debianPackage: string;
  problem(): string | undefined;
}

const TOOLS: Tool[] = [
  { command: 'java', debianPackage: 'openjdk-17-jre-headless', problem: javaProblem },
  { command: 'mvn', debianPackage: 'maven', problem: () => missingFromPath('mvn') },
  { command: 'openssl', debianPackage: 'openssl', problem: () => missingFromPath('openssl') },
];

/**
 * Fails with what to install when a tool the broker needs is missing. Tests that need Kafka must
 * fail loudly on such a machine rather than skip, or a missing install step would go unnoticed.
 */
export function requireKafkaTools(): void {
  const missing = TOOLS.map((tool) => ({ tool, problem: tool.problem() })).filter((entry) => entry.problem);
  if (missing.length === 0) return;
  const problems = missing.map((entry) => entry.problem).join('; ');
  const packages = missing.map((entry) => entry.tool.debianPackage).join(' ');
  throw new Error(
    `The Kafka test broker needs Java 17 or newer, Maven and openssl on the PATH: ${problems}. ` +
      `Install them, e.g. \`apt-get install ${packages}\`.`,
  );
}

/** `java -version` costs a JVM start, so it runs once: null until then, then the problem or undefined. */
let javaChecked: string | undefined | null = null;

function javaProblem(): string | undefined {
  if (javaChecked !== null) return javaChecked;
  const probe = spawnSync('java', ['-version'], { encoding: 'utf8' });
  if (probe.error) {
    javaChecked = `java not found (${probe.error.message})`;
  } else {
    const major = javaMajorVersion(`${probe.stderr}${probe.stdout}`);
    javaChecked = major !== undefined && major >= 17 ? undefined : `java is version ${major ?? 'unknown'}`;
  }
  return javaChecked;
}

/** `java -version` prints `version "17.0.15"`, or `version "1.8.0_402"` for Java 8. */
function javaMajorVersion(output: string): number | undefined {
  const match = /version "(\d+)(?:\.(\d+))?/.exec(output);
  if (!match) return undefined;
  const first = Number(match[1]);
  return first === 1 ? Number(match[2]) : first;
}

function missingFromPath(command: string): string | undefined {
  const directories = (process.env.PATH ?? '').split(delimiter).filter(Boolean);
  const found = directories.some((directory) => isExecutable(join(directory, command)));
  return found ? undefined : `${command} not found`;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch (error) {
    // Absent or not executable here is the answer we are asking for; anything else is a real fault.
    if (['ENOENT', 'EACCES', 'ENOTDIR'].includes((error as NodeJS.ErrnoException).code ?? '')) return false;
    throw error;
  }
}

const downloads = new Map<string, Promise<string>>();

/**
 * The directory of the broker's jars (for `java -cp '<dir>/*'`), downloaded by Maven on first use
 * into a per-user cache outside the repository and reused afterwards.
 */
export function kafkaJars(version = KAFKA_VERSION): Promise<string> {
  let download = downloads.get(version);
  if (!download) {
    download = ensureKafkaJars(version);
    downloads.set(version, download);
    // A failed download must be retried by the next caller, not remembered.
    download.catch(() => downloads.delete(version));
  }
  return download;
}

function cacheRoot(): string {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'sluice-test');
}

async function ensureKafkaJars(version: string): Promise<string> {
  // The pom's hash is in the name so that editing the pom (another binding, an exclusion) fetches
  // anew instead of reusing jars resolved from the old one.
  const pomHash = createHash('sha256')
    .update(await readFile(POM))
    .update(LOG4J_VERSION)
    .digest('hex');
  const target = join(cacheRoot(), `kafka-${version}-${pomHash.slice(0, 8)}`);
  if (await exists(join(target, COMPLETE_MARKER))) return join(target, 'lib');
  await mkdir(cacheRoot(), { recursive: true });
  // Download beside the target and rename it into place: a rename is atomic, so two test files
  // downloading at once never see each other's half-written directory; the loser discards its copy.
  const staging = await mkdtemp(join(cacheRoot(), `.kafka-${version}-`));
  try {
    await downloadWithMaven(version, staging);
    await writeFile(join(staging, COMPLETE_MARKER), `${new Date().toISOString()}\n`);
    await moveIntoPlace(staging, target);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  return join(target, 'lib');
}

async function downloadWithMaven(version: string, staging: string): Promise<void> {
  // Maven runs on a copy of the pom so that nothing it writes lands in the repository.
  const pom = join(staging, 'pom.xml');
  await copyFile(POM, pom);
  const lib = join(staging, 'lib');
  const args = [
    '-q',
    '-B',
    '-f',
    pom,
    'dependency:copy-dependencies',
    '-DincludeScope=runtime',
    `-DoutputDirectory=${lib}`,
    `-Dkafka.version=${version}`,
    `-Dlog4j.version=${LOG4J_VERSION}`,
  ];
  try {
    await run('mvn', args, { cwd: staging, maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    const output = error as { stdout?: string; stderr?: string };
    throw new Error(
      `mvn could not fetch org.apache.kafka:kafka_2.13:${version}:\n${output.stdout ?? ''}${output.stderr ?? ''}`,
      { cause: error },
    );
  }
  const jars = await readdir(lib);
  if (!jars.includes(`kafka_2.13-${version}.jar`)) {
    throw new Error(`mvn finished but ${lib} has no kafka_2.13-${version}.jar (it has ${jars.join(', ')})`);
  }
}

async function moveIntoPlace(staging: string, target: string): Promise<void> {
  if ((await exists(target)) && !(await exists(join(target, COMPLETE_MARKER)))) {
    // Left by something other than this code (renames are atomic): unusable, so replace it.
    await rm(target, { recursive: true, force: true });
  }
  try {
    await rename(staging, target);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const lostTheRace =
      (code === 'ENOTEMPTY' || code === 'EEXIST') && (await exists(join(target, COMPLETE_MARKER)));
    if (!lostTheRace) throw error;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}
