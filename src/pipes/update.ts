import { BadRequestError, type Problem, ValidationError } from '../errors.js';
import type { PipeConfig } from './model.js';
import { asObject, tableMappingRules } from './rules.js';
import type { SourceKind } from './schema/enums.js';
import { IMMUTABLE_POSTGRES_SETTINGS, IMMUTABLE_SOURCE_FIELDS, type UpdatePipeBody } from './schema/index.js';
import { canModifyTableMappings, type PipeState } from './state.js';

/** Fields that belong to one way of authenticating; a new `authentication` clears the old ones. */
const AUTH_FIELDS = ['credentials', 'accessKey', 'iamRole', 'serviceAccountKey'];

type TableMapping = NonNullable<PipeConfig['source']['postgres']>['tableMappings'][number];

/**
 * Applies a PATCH body to a pipe's full configuration and returns the new one; the caller validates
 * the result as a whole. Objects given in the patch replace the stored ones field by field.
 */
export function applyUpdate(
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
    const { tableMappingsToAdd, tableMappingsToRemove, schemaRegistry, ...fields } = changes;
    Object.assign(source, fields);
    if (schemaRegistry !== undefined) {
      source.schemaRegistry = { ...asObject(source.schemaRegistry), ...asObject(schemaRegistry) };
    }
    if (tableMappingsToAdd !== undefined || tableMappingsToRemove !== undefined) {
      if (!canModifyTableMappings(state)) {
        // A 400 with this wording, as the hosted service answers (its Terraform provider reads it).
        throw new BadRequestError(
          `table mappings change only while the pipe is paused (Stopped or Paused); it is ${state}: stop it first, then edit`,
        );
      }
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
  disableTls: false,
  skipCertVerification: false,
};

/**
 * The changes of a source PATCH without the fields that cannot change, once each is found equal to
 * its stored value; a changed one is a 400 naming it (Terraform sends the whole object on update).
 */
function withoutUnchangeable(
  kind: SourceKind,
  sent: Record<string, unknown>,
  stored: Record<string, unknown>,
): Record<string, unknown> {
  const problems: Problem[] = [];
  const { settings, ...changes } = sent;
  const check = (field: string, value: unknown, current: unknown, path: string) => {
    const before = current ?? IMMUTABLE_DEFAULTS[field];
    if (JSON.stringify(value) !== JSON.stringify(before)) {
      problems.push({
        path,
        message: `cannot change after create (it is ${JSON.stringify(before ?? null)}): create a new pipe instead`,
      });
    }
  };
  for (const field of IMMUTABLE_SOURCE_FIELDS[kind]) {
    if (!(field in changes)) continue;
    check(field, changes[field], stored[field], `source.${kind}.${field}`);
    delete changes[field];
  }
  const storedSettings = asObject(stored.settings) ?? {};
  for (const [field, value] of Object.entries(asObject(settings) ?? {})) {
    if (!(IMMUTABLE_POSTGRES_SETTINGS as readonly string[]).includes(field)) continue;
    check(field, value, storedSettings[field], `source.${kind}.settings.${field}`);
  }
  if (problems.length > 0) throw new ValidationError(problems);
  return changes;
}
