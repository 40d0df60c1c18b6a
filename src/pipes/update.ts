import { BadRequestError, type Problem, ValidationError } from '../errors.js';
import type { PipeRow } from '../store/index.js';
import { instantOf, type PipeConfig } from './model.js';
import { asObject, createBodyProblems, tableMappingRules } from './rules.js';
import type { SourceKind } from './schema/enums.js';
import {
  FIXED_POSTGRES_SETTINGS,
  IMMUTABLE_SOURCE_FIELDS,
  POSTGRES_SERVER_FIELDS,
  type UpdatePipeBody,
} from './schema/index.js';
import { canModifyTableMappings, type PipeState } from './state.js';

/** Fields that belong to one way of authenticating; a new `authentication` clears the old ones. */
const AUTH_FIELDS = ['credentials', 'accessKey', 'iamRole', 'serviceAccountKey'];

type TableMapping = NonNullable<PipeConfig['source']['postgres']>['tableMappings'][number];

/**
 * A PATCH applied to a pipe: its new name and configuration, which must still be a pipe one could
 * create (a ValidationError names every problem).
 */
export function planUpdate(
  row: Pick<PipeRow, 'name' | 'sourceKind' | 'state'>,
  config: PipeConfig,
  patch: UpdatePipeBody,
): { name: string; config: PipeConfig } {
  const updated = applyUpdate(config, patch, row.sourceKind as SourceKind, row.state as PipeState);
  const name = patch.name ?? row.name;
  const body = {
    name,
    source: updated.source,
    destination: updated.destination,
    fieldMappings: updated.fieldMappings,
    scaling: updated.scaling,
    ...(Object.keys(updated.settings).length > 0 ? { settings: updated.settings } : {}),
  };
  const problems = createBodyProblems(body);
  if (problems.length > 0) throw new ValidationError(problems);
  return { name, config: updated };
}

/**
 * Applies a PATCH body to a pipe's full configuration and returns the new one; `planUpdate`
 * validates the result as a whole. Objects given in the patch replace the stored ones field by field.
 */
function applyUpdate(
  config: PipeConfig,
  patch: UpdatePipeBody,
  kind: SourceKind,
  state: PipeState,
): PipeConfig {
  const next = structuredClone(config);
  const { validateSamples: _requestOnly, ...sourcePatch } = patch.source ?? {};
  for (const other of Object.keys(sourcePatch)) {
    if (other !== kind) {
      throw new BadRequestError(
        'SLUICE_ERR_PIPE_IMMUTABLE',
        `source.${other}: this pipe reads from ${kind}; only source.${kind} may change`,
      );
    }
  }
  const sent = asObject(sourcePatch[kind]);
  if (sent) {
    const source = next.source[kind] as Record<string, unknown>;
    const changes = withoutUnchangeable(kind, sent, source);
    if (changes.authentication !== undefined && changes.authentication !== source.authentication) {
      for (const field of AUTH_FIELDS) delete source[field];
    }
    const { tableMappingsToAdd, tableMappingsToRemove, schemaRegistry, settings, ...fields } = changes;
    const moved = POSTGRES_SERVER_FIELDS.filter((f) => f in fields && fields[f] !== source[f]);
    if (moved.length > 0) requirePaused(state, moved.join(', '));
    Object.assign(source, fields);
    if (settings !== undefined) source.settings = { ...asObject(source.settings), ...asObject(settings) };
    if (schemaRegistry !== undefined) {
      source.schemaRegistry = { ...asObject(source.schemaRegistry), ...asObject(schemaRegistry) };
    }
    if (tableMappingsToAdd !== undefined || tableMappingsToRemove !== undefined) {
      requirePaused(state, 'table mappings');
      const postgres = next.source.postgres;
      if (postgres) {
        postgres.tableMappings = changeTableMappings(
          postgres.tableMappings,
          (tableMappingsToAdd ?? []) as TableMapping[],
          (tableMappingsToRemove ?? []) as TableMapping[],
        );
      }
    }
  }
  if (patch.destination?.columns) next.destination.columns = patch.destination.columns;
  if (patch.fieldMappings) next.fieldMappings = patch.fieldMappings;
  if (patch.settings) next.settings = { ...next.settings, ...patch.settings };
  return next;
}

/**
 * A change a running PostgreSQL pipe cannot take. The words "must be paused to edit" are what the
 * hosted service answers and its Terraform provider looks for: it pauses the pipe and tries again.
 */
function requirePaused(state: PipeState, what: string): void {
  if (canModifyTableMappings(state)) return;
  throw new BadRequestError(
    'SLUICE_ERR_PIPE_IMMUTABLE',
    `PostgreSQL pipe must be paused to edit ${what}: it is ${state}; stop it first, then edit, then start it`,
  );
}

function changeTableMappings(
  current: TableMapping[],
  add: TableMapping[],
  remove: TableMapping[],
): TableMapping[] {
  const problems: Problem[] = [];
  const same = (a: TableMapping, b: TableMapping) =>
    (a.sourceSchemaName ?? 'public') === (b.sourceSchemaName ?? 'public') &&
    a.sourceTable === b.sourceTable &&
    a.targetTable === b.targetTable;
  const kept = current.filter((mapping) => !remove.some((r) => same(mapping, r)));
  remove.forEach((r, index) => {
    if (!current.some((mapping) => same(mapping, r))) {
      problems.push({
        path: `source.postgres.tableMappingsToRemove[${index}]`,
        message: `This pipe has no mapping of ${r.sourceSchemaName ?? 'public'}.${r.sourceTable} to ${r.targetTable}`,
      });
    }
  });
  const added = add.map((mapping) => ({
    ...mapping,
    sourceSchemaName: mapping.sourceSchemaName ?? 'public',
  }));
  const result = [...kept, ...added];
  tableMappingRules(result, 'source.postgres.tableMappings', problems);
  if (result.length === 0) {
    problems.push({
      path: 'source.postgres.tableMappingsToRemove',
      message: 'A pipe needs at least one table mapping',
    });
  }
  if (problems.length > 0) throw new ValidationError(problems);
  return result;
}

/** What the hosted service assumes for an immutable field a pipe was created without. */
const IMMUTABLE_DEFAULTS: Record<string, unknown> = {
  type: 's3',
  isContinuous: false,
  skipInitialLoad: false,
  iteratorType: 'TRIM_HORIZON',
  useEnhancedFanOut: false,
  disableTls: false,
  skipCertVerification: false,
  replicationMode: 'cdc',
  allowNullableColumns: false,
  enableFailoverSlots: false,
  deleteOnMerge: false,
};

/** Equal values; a Kinesis timestamp is equal when it names the same instant in either form. */
function same(field: string, value: unknown, before: unknown): boolean {
  if (field === 'timestamp' && value !== undefined && before !== undefined) {
    return instantOf(value as string | number).getTime() === instantOf(before as string | number).getTime();
  }
  return JSON.stringify(value) === JSON.stringify(before);
}

/**
 * The changes of a source PATCH without the fields that cannot change, once each is found equal to
 * its stored value; a changed one is a 400 naming it and why (Terraform sends the whole object on
 * update, every computed setting included).
 */
function withoutUnchangeable(
  kind: SourceKind,
  sent: Record<string, unknown>,
  stored: Record<string, unknown>,
): Record<string, unknown> {
  const problems: Problem[] = [];
  const { settings, ...changes } = sent;
  const check = (field: string, value: unknown, current: unknown, path: string, why?: string) => {
    const before = current ?? IMMUTABLE_DEFAULTS[field];
    if (same(field, value, before)) return;
    problems.push({
      path,
      message: `cannot change after create (it is ${JSON.stringify(before ?? null)})${why ? `: ${why}` : ''}; create a new pipe instead`,
    });
  };
  for (const field of IMMUTABLE_SOURCE_FIELDS[kind]) {
    if (!(field in changes)) continue;
    check(field, changes[field], stored[field], `source.${kind}.${field}`);
    delete changes[field];
  }
  const storedSettings = asObject(stored.settings) ?? {};
  const changeable: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(asObject(settings) ?? {})) {
    const why = FIXED_POSTGRES_SETTINGS[field];
    if (why) check(field, value, storedSettings[field], `source.${kind}.settings.${field}`, why);
    else changeable[field] = value;
  }
  if (problems.length > 0) throw new ValidationError(problems);
  return Object.keys(changeable).length > 0 ? { ...changes, settings: changeable } : changes;
}
