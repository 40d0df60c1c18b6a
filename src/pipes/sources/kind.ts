import type { Static, TObject } from '@sinclair/typebox';
import { BadRequestError, type Problem } from '../../errors.js';
import type { FieldMappingConfig } from '../schema/index.js';
import type { SourceConnector } from './contract.js';
import type { DiscoveryContext, DiscoverySource, SchemaDiscovery } from './discovery.js';

/**
 * One kind of source, whole: the schema of `source.<name>` at create and PATCH, its rules, its
 * defaults, what never changes after create, and its connector. Its secrets are the fields its
 * schema marks `Secret` (src/schema/secret.ts). The registry (sources/index.ts) lists the kinds;
 * every list of kinds, schema of a source and list of secret paths is derived from it
 * (docs/adding-a-source-kind.md).
 */
export interface SourceKind<C extends TObject = TObject, N extends string = string> {
  /** The key under `source` in a pipe's configuration. */
  readonly name: N;
  /** How a message names pipes of this kind: "Only used by object-storage pipes". */
  readonly label: string;
  /** The schema of `source.<name>` in a create body. */
  readonly config: C;
  /** The schema of `source.<name>` in a PATCH body. */
  readonly patch: TObject;
  /**
   * Fields Terraform sends back on every update although they cannot change (README, "Pipes"):
   * accepted when equal to the stored value (or `assumed` when the pipe was created without
   * them), a 400 naming them and `why` when changed. A dotted name is a field of a nested object.
   */
  readonly immutableFields: Readonly<Record<string, ImmutableField>>;
  /** Objects of the source a PATCH merges field by field (others it replaces). */
  readonly mergedOnPatch?: readonly string[];
  /**
   * Applies a PATCH's changes (immutable fields already checked and taken out) to the stored
   * source; throws a ValidationError or BadRequestError when the pipe cannot take them now.
   * Absent: each field replaces the stored one, `mergedOnPatch` objects are merged.
   */
  applyPatch?(stored: Static<C>, changes: Record<string, unknown>, pipe: { state: string }): void;
  /** The defaults of the hosted service, filled in at create so the record says what the pipe does. */
  applyDefaults(config: Static<C>, pipeId: string): void;
  /** Rules a schema cannot say, across this source's own fields; `config` passed its schema. */
  rules(config: Static<C>, path: string, problems: Problem[]): void;
  /** Rules across this source and the pipe's field mappings (a file format that names fields by position). */
  mappingRules?(
    config: Static<C>,
    fieldMappings: FieldMappingConfig[] | undefined,
    problems: Problem[],
  ): void;
  /**
   * The kind writes the tables its source names (a database's table mappings), not the pipe's
   * destination table: the destination names only a database, and field mappings are not used.
   */
  readonly writesTablesItNames?: { field: string; leaveColumnsOut: string };
  /** Pipe settings whose names start with this are for this kind only. */
  readonly settingsPrefix?: string;
  /** `scaling.concurrency` applies to this kind. */
  readonly scalingConcurrency?: boolean;
  /** The `resync` command applies (a database pipe starts over from a new snapshot). */
  readonly resyncs?: boolean;
  readonly connector: SourceConnector;
  /** Schema discovery: the fields of the source's first records. Absent: not offered for the kind. */
  readonly discover?: (source: DiscoverySource, context: DiscoveryContext) => Promise<SchemaDiscovery>;
}

export interface ImmutableField {
  assumed?: unknown;
  why?: string;
  /** Whether a sent value equals the stored one, when equal JSON is not the test (two forms of an instant). */
  same?(sent: unknown, stored: unknown): boolean;
}

/** Any kind, whatever its config schema (the registry holds kinds of different schemas). */
// biome-ignore lint/suspicious/noExplicitAny: the registry's list holds kinds of different schemas
export type AnySourceKind = SourceKind<any>;

/**
 * The kinds a Sluice runs (createSluice's `sourceKinds`, the registry's list by default): each
 * looked up by its name.
 */
export class SourceKinds {
  private readonly byName: Map<string, AnySourceKind>;

  constructor(readonly list: readonly AnySourceKind[]) {
    this.byName = new Map(list.map((kind) => [kind.name, kind]));
    if (this.byName.size !== list.length) throw new Error('two source kinds have the same name');
  }

  get names(): string[] {
    return this.list.map((kind) => kind.name);
  }

  get(name: string): AnySourceKind | undefined {
    return this.byName.get(name);
  }

  /** The kind of that name; one this Sluice does not run is a 400 naming it. */
  require(name: string): AnySourceKind {
    const kind = this.byName.get(name);
    if (!kind) {
      throw new BadRequestError(
        'SLUICE_ERR_UNSUPPORTED',
        `source.${name}: this server runs no such source kind`,
      );
    }
    return kind;
  }

  /** Their connectors, in the order of the kinds (the status response's fields, the metrics). */
  connectors(): SourceConnector[] {
    return this.list.map((kind) => kind.connector);
  }

  connectorFor(name: string): SourceConnector | undefined {
    return this.byName.get(name)?.connector;
  }
}
