import type { Problem } from '../errors.js';
import { secretPaths } from '../schema/index.js';
import { copyJson } from './json-copy.js';
import { redactAll, secretValues } from './runtime-port.js';
import type { AnySourceKind } from './sources/index.js';

/**
 * Where secrets live in a pipe's configuration: every field a kind's schema marks Secret
 * (src/schema/secret.ts), under `source.<kind>`. They are taken out before the configuration is
 * stored or returned, sealed on their own (README, "Security"), and put back only for the runtime.
 */
export type SecretPaths = readonly (readonly string[])[];

export function secretPathsOf(kinds: readonly AnySourceKind[]): SecretPaths {
  return kinds.flatMap((kind) => secretPaths(kind.config, ['source', kind.name]));
}

type Json = Record<string, unknown>;

/** Problems whose messages quote no secret of `config` (engine and SDK messages quote their input). */
export function withoutSecrets(problems: Problem[], config: object, paths: SecretPaths): Problem[] {
  const secrets = secretValues(splitSecrets(config as Json, paths).secrets);
  return problems.map((p) => ({ ...p, message: redactAll(p.message, secrets) }));
}

/** Splits a configuration into its public part (a deep copy) and its secrets, keyed by dotted path. */
export function splitSecrets<T extends Json>(
  config: T,
  paths: SecretPaths,
): { publicConfig: T; secrets: Record<string, unknown> } {
  const publicConfig = copyJson(config);
  const secrets: Record<string, unknown> = {};
  for (const path of paths) {
    const parent = objectAt(publicConfig, path.slice(0, -1));
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
  const config = copyJson(publicConfig);
  for (const [dotted, value] of Object.entries(secrets)) {
    const path = dotted.split('.');
    const parent = objectAt(config, path.slice(0, -1));
    if (parent) parent[path[path.length - 1] as string] = value;
  }
  return config;
}

/** The object at `path` under `root`; undefined where the path ends early or at a value. */
export function objectAt(root: Json, path: readonly string[]): Json | undefined {
  let node: unknown = root;
  for (const part of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Json)[part];
  }
  return node !== null && typeof node === 'object' ? (node as Json) : undefined;
}
