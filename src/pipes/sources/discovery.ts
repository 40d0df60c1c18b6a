import type { ErrorCode, Problem } from '../../errors.js';
import type { PipeConfig } from '../model.js';
import type { CheckContext } from './contract.js';

/** One field of a source as discovered: its name, the engine type it reads as, and whether it may be missing. */
export interface DiscoveredField {
  name: string;
  type: string;
  /** Missing or null in some record (or nullable at the source), so a column of it takes its default. */
  optional: boolean;
}

/**
 * What schema discovery answers (the hosted service's `{fields, meta}`): the fields with the types
 * to give `destination.columns`, and what was read to find them (meta's values are text).
 */
export interface SchemaDiscovery {
  fields: DiscoveredField[];
  meta: Record<string, string>;
  /**
   * The first records as the engine reads them with those types (Sluice's addition, for a
   * preview: the console's create wizard); none for PostgreSQL, whose fields come from its catalog.
   */
  records: Record<string, unknown>[];
}

/** Discovery reads a source as the create checks do, without a destination or samples to validate. */
export type DiscoveryContext = Omit<CheckContext, 'validateSamples'>;

/** The source of a discovery request: one kind, as a create body gives it. */
export type DiscoverySource = PipeConfig['source'];

/**
 * A problem of the source (unreachable, refused, empty), as a create check names it: the request
 * is a 400 that names the field to fix.
 */
export class DiscoveryProblem extends Error {
  readonly code: ErrorCode = 'SLUICE_ERR_DISCOVERY';

  constructor(readonly problem: Problem) {
    super(problem.message);
    this.name = 'DiscoveryProblem';
  }
}

/** Engine types as one line: `Tuple(\n    x Int64)` reads `Tuple(x Int64)`. */
export function oneLineType(type: string): string {
  return type
    .replace(/\(\s+/g, '(')
    .replace(/\s*\n\s*/g, ' ')
    .trim();
}

/**
 * A field as the engine's schema inference typed it (with nullable columns only where a value was
 * null): `Nullable(T)` is reported as T and optional, the way a column of it is written.
 */
export function inferredField(name: string, type: string, missingSomewhere: boolean): DiscoveredField {
  const line = oneLineType(type);
  const nullable = /^Nullable\((.*)\)$/.exec(line);
  return { name, type: nullable?.[1] ?? line, optional: missingSomewhere || nullable !== null };
}

/** A pipe configuration of the source alone: discovery has no destination, mappings or settings. */
export function discoveryConfig(source: DiscoverySource): PipeConfig {
  return { source, destination: {}, fieldMappings: [], scaling: {}, settings: {} };
}

/** The problems of a create check, as a discovery's 400 (the first names the field to fix). */
export function throwIfProblems(problems: Problem[]): void {
  const first = problems[0];
  if (first) throw new DiscoveryProblem(first);
}
