import { BadRequestError, type Problem, ValidationError } from '../errors.js';
import type { PipeConfig } from './model.js';
import { asObject, tableMappingRules } from './rules.js';
import type { SourceKind } from './schema/enums.js';
import type { UpdatePipeBody } from './schema/index.js';
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
  const sourcePatch = patch.source ?? {};
  for (const other of Object.keys(sourcePatch)) {
    if (other !== kind) {
      throw new BadRequestError(
        `source.${other}: this pipe reads from ${kind}; only source.${kind} may change`,
      );
    }
  }
  const changes = asObject(sourcePatch[kind]);
  if (changes) {
    const source = next.source[kind] as Record<string, unknown>;
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
