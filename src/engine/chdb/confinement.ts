import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * What an embedded service's engine may do, whoever asks: this is the boundary between a tenant's
 * SQL and the host (README, "Security"). chDB runs every connection as its one user, `default`, so
 * the user's grants bound Sluice's own runtime and every caller alike:
 *
 * - no source grant at all (FILE, URL, S3, AZURE, REMOTE, MYSQL, POSTGRES, HDFS, KAFKA, ...), so no
 *   table function, table engine or database engine reaches a file of the host or the network;
 *   object storage is read by a separate source-reader engine that runs no tenant SQL;
 * - no CREATE DICTIONARY, CREATE FUNCTION, named collections, SYSTEM, BACKUP, introspection or
 *   access management;
 * - settings that name a path or a disk cannot be changed (a dynamic `disk(type = web, ...)` would
 *   reach the network, an errors file path would write anywhere);
 * - executables are looked up in an empty directory of the service's own.
 *
 * What the grants cannot see is decided from the engine's own parse of each user statement
 * (statement.ts): INTO OUTFILE, FROM INFILE and ATTACH ... FROM run on the client side of chDB.
 */
const GRANTS = [
  'SELECT, INSERT, ALTER, CREATE TABLE, CREATE VIEW, CREATE DATABASE, DROP TABLE, DROP VIEW, DROP DATABASE, TRUNCATE, OPTIMIZE, SHOW, CREATE TEMPORARY TABLE ON *.*',
];

/** Settings no statement may change on a confined engine. */
export const FROZEN_SETTINGS = [
  'merge_tree_disk',
  'merge_tree_storage_policy',
  'input_format_record_errors_file_path',
  'output_format_schema',
  'format_schema',
  'format_template_resultset',
  'format_template_row',
  'allow_introspection_functions',
];

/**
 * One statement may use this share of its engine's memory (max_memory_usage), so a user's
 * statement leaves the rest to the pipes' work on the same service.
 */
const QUERY_MEMORY_SHARE = 0.5;

/**
 * The profile every connection runs with: the frozen settings, and the memory of one statement,
 * which a statement may lower but not raise, nor lift with 0 (hence the minimum of 1 byte).
 */
function profileXml(memoryLimitBytes: number | undefined): string {
  const frozen = FROZEN_SETTINGS.map((name) => `<${name}><readonly/></${name}>`).join('');
  if (!memoryLimitBytes) return `<default><constraints>${frozen}</constraints></default>`;
  const perQuery = Math.floor(memoryLimitBytes * QUERY_MEMORY_SHARE);
  return `<default><max_memory_usage>${perQuery}</max_memory_usage><constraints>${frozen}<max_memory_usage><min>1</min><max>${perQuery}</max></max_memory_usage></constraints></default>`;
}

function usersXml(memoryLimitBytes: number | undefined): string {
  const grants = GRANTS.map((grant) => `<query>GRANT ${grant}</query>`).join('');
  return `<clickhouse>
  <profiles>${profileXml(memoryLimitBytes)}</profiles>
  <users><default><password></password><profile>default</profile><quota>default</quota><grants>${grants}</grants></default></users>
  <quotas><default></default></quotas>
</clickhouse>
`;
}

/** A path as XML text (the data directory is the operator's choice and may hold any character). */
function xmlText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function configXml(dir: string, memoryLimitBytes: number | undefined): string {
  // The engine's whole memory, which no statement's settings lift (max_memory_usage = 0 does not).
  const memory = memoryLimitBytes
    ? `\n  <max_server_memory_usage>${memoryLimitBytes}</max_server_memory_usage>`
    : '';
  return `<clickhouse>${memory}
  <users_config>${xmlText(join(dir, 'users.xml'))}</users_config>
  <user_scripts_path>${xmlText(join(dir, 'no-scripts'))}/</user_scripts_path>
</clickhouse>
`;
}

/**
 * Writes the confinement of the engine at `path` (again at every start, so an older data directory
 * gets the current rules) and returns the configuration file to start the engine with.
 */
export async function writeConfinement(path: string, memoryLimitBytes?: number): Promise<string> {
  const dir = join(path, 'sluice-engine');
  await mkdir(join(dir, 'no-scripts'), { recursive: true });
  await writeFile(join(dir, 'users.xml'), usersXml(memoryLimitBytes), { mode: 0o600 });
  await writeFile(join(dir, 'config.xml'), configXml(dir, memoryLimitBytes), { mode: 0o600 });
  return join(dir, 'config.xml');
}
