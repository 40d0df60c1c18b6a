import type { Problem } from '../errors.js';
import { redactAll, secretValues } from './runtime-port.js';

/**
 * Where secrets live in a pipe's configuration. They are taken out before the configuration is
 * stored or returned, sealed on their own (README, "Security"), and put back only for the runtime.
 */
export const SECRET_PATHS: readonly (readonly string[])[] = [
  ['source', 'kafka', 'credentials'],
  ['source', 'kafka', 'schemaRegistry', 'credentials'],
  ['source', 'objectStorage', 'accessKey'],
  ['source', 'objectStorage', 'connectionString'],
  ['source', 'objectStorage', 'serviceAccountKey'],
  ['source', 'kinesis', 'accessKey'],
  ['source', 'postgres', 'credentials'],
];

type Json = Record<string, unknown>;

/** Problems whose messages quote no secret of `config` (engine and SDK messages quote their input). */
export function withoutSecrets(problems: Problem[], config: object): Problem[] {
  const secrets = secretValues(splitSecrets(config as Json).secrets);
  return problems.map((p) => ({ ...p, message: redactAll(p.message, secrets) }));
}

/** Splits a configuration into its public part (a deep copy) and its secrets, keyed by dotted path. */
export function splitSecrets<T extends Json>(
  config: T,
): { publicConfig: T; secrets: Record<string, unknown> } {
  const publicConfig = structuredClone(config);
  const secrets: Record<string, unknown> = {};
  for (const path of SECRET_PATHS) {
    const parent = walk(publicConfig, path.slice(0, -1));
    const leaf = path[path.length - 1] as string;
    if (parent && parent[leaf] !== undefined) {
      secrets[path.join('.')] = parent[leaf];
      delete parent[leaf];
    }
  }
  return { publicConfig, secrets };
}

/** The inverse of splitSecrets: a deep copy of the configuration with its secrets back in place. */
export function joinSecrets<T extends Json>(publicConfig: T, secrets: Record<string, unknown>): T {
  const config = structuredClone(publicConfig);
  for (const [dotted, value] of Object.entries(secrets)) {
    const path = dotted.split('.');
    const parent = walk(config, path.slice(0, -1));
    if (parent) parent[path[path.length - 1] as string] = value;
  }
  return config;
}

function walk(root: Json, path: readonly string[]): Json | undefined {
  let node: unknown = root;
  for (const part of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Json)[part];
  }
  return node !== null && typeof node === 'object' ? (node as Json) : undefined;
}
