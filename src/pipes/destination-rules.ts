import { fragmentProblem } from '../engine/index.js';
import type { Problem } from '../errors.js';
import { asObject } from './rules-util.js';
import type { SourceKind } from './schema/enums.js';

/** A database pipe takes its targets from tableMappings (README, "Pipes"). */
export function databaseDestinationRules(pipe: Record<string, unknown>, problems: Problem[]): void {
  const destination = asObject(pipe.destination);
  for (const field of ['table', 'columns', 'managedTable', 'tableDefinition']) {
    if (destination?.[field] !== undefined) {
      problems.push({
        path: `destination.${field}`,
        message: 'Not used by a postgres pipe: its tables come from source.postgres.tableMappings',
      });
    }
  }
  if (Array.isArray(pipe.fieldMappings) && pipe.fieldMappings.length > 0) {
    problems.push({
      path: 'fieldMappings',
      message: 'Not used by a postgres pipe: leave columns out with tableMappings[].excludedColumns',
    });
  }
}

export function tableDestinationRules(pipe: Record<string, unknown>, problems: Problem[]): void {
  const destination = asObject(pipe.destination);
  if (!destination) return;
  if (destination.table === undefined) problems.push({ path: 'destination.table', message: 'Required' });
  const columns = Array.isArray(destination.columns) ? destination.columns.map(asObject) : undefined;
  if (columns === undefined)
    problems.push({ path: 'destination.columns', message: 'Required: list the columns of the table' });
  const names = (columns ?? []).map((column) => (typeof column?.name === 'string' ? column.name : undefined));
  names.forEach((name, index) => {
    if (name !== undefined && names.indexOf(name) !== index) {
      problems.push({
        path: `destination.columns[${index}].name`,
        message: `Column "${name}" is listed twice`,
      });
    }
  });
  const known = new Set(names.filter((name): name is string => name !== undefined));
  const managed = destination.managedTable ?? true;
  if (managed === true && destination.tableDefinition === undefined) {
    problems.push({
      path: 'destination.tableDefinition',
      message: 'Required for a managed table: give at least engine.type',
    });
  }
  if (managed === false && destination.tableDefinition !== undefined) {
    problems.push({ path: 'destination.tableDefinition', message: 'Only used with managedTable: true' });
  }
  tableDefinitionRules(asObject(destination.tableDefinition), known, problems);
  expressionRules(destination, columns, problems);
  if (columns !== undefined) fieldMappingRules(pipe.fieldMappings, known, problems);
}

/**
 * Column types and PARTITION BY / PRIMARY KEY expressions go into the engine's SQL as written: each
 * must be one expression, with nothing that could end it early or reach outside the service.
 */
function expressionRules(
  destination: Record<string, unknown>,
  columns: (Record<string, unknown> | undefined)[] | undefined,
  problems: Problem[],
): void {
  const check = (value: unknown, path: string) => {
    const problem = typeof value === 'string' ? fragmentProblem(value) : undefined;
    if (problem) problems.push({ path, message: `Not usable: ${problem}` });
  };
  (columns ?? []).forEach((column, index) => {
    check(column?.type, `destination.columns[${index}].type`);
  });
  const definition = asObject(destination.tableDefinition);
  check(definition?.partitionBy, 'destination.tableDefinition.partitionBy');
  check(definition?.primaryKey, 'destination.tableDefinition.primaryKey');
}

function tableDefinitionRules(
  definition: Record<string, unknown> | undefined,
  columns: Set<string>,
  problems: Problem[],
) {
  if (!definition) return;
  const path = 'destination.tableDefinition';
  const engine = asObject(definition.engine);
  const type = engine?.type;
  const sortingKey = Array.isArray(definition.sortingKey) ? definition.sortingKey : [];
  if (type === 'ReplacingMergeTree') {
    if (engine?.versionColumnId === undefined) {
      problems.push({ path: `${path}.engine.versionColumnId`, message: 'Required for ReplacingMergeTree' });
    }
    if (sortingKey.length === 0 && definition.primaryKey === undefined) {
      problems.push({
        path: `${path}.sortingKey`,
        message: 'Required for ReplacingMergeTree: give at least one column (or a primaryKey)',
      });
    }
  } else if (engine?.versionColumnId !== undefined) {
    problems.push({ path: `${path}.engine.versionColumnId`, message: 'Only used with ReplacingMergeTree' });
  }
  if (type !== 'SummingMergeTree' && engine?.columnIds !== undefined) {
    problems.push({ path: `${path}.engine.columnIds`, message: 'Only used with SummingMergeTree' });
  }
  const mustExist = (value: unknown, at: string) => {
    if (typeof value === 'string' && !columns.has(value)) {
      problems.push({ path: at, message: `No destination column is named "${value}"` });
    }
  };
  mustExist(engine?.versionColumnId, `${path}.engine.versionColumnId`);
  if (Array.isArray(engine?.columnIds)) {
    engine.columnIds.forEach((id, i) => {
      mustExist(id, `${path}.engine.columnIds[${i}]`);
    });
  }
  sortingKey.forEach((key, i) => {
    mustExist(key, `${path}.sortingKey[${i}]`);
  });
}

/** Every destination column appears once as a destinationField, and only columns do. */
function fieldMappingRules(mappings: unknown, columns: Set<string>, problems: Problem[]): void {
  if (!Array.isArray(mappings)) return; // absent: mapped by equal names
  const mapped = new Map<string, number>();
  mappings.forEach((entry, index) => {
    const target = asObject(entry)?.destinationField;
    if (typeof target !== 'string') return;
    const at = `fieldMappings[${index}].destinationField`;
    if (!columns.has(target)) {
      problems.push({ path: at, message: `No destination column is named "${target}"` });
    } else if (mapped.has(target)) {
      problems.push({
        path: at,
        message: `Column "${target}" is already mapped by fieldMappings[${mapped.get(target)}]`,
      });
    } else {
      mapped.set(target, index);
    }
  });
  // A column without a mapping takes its default (its DEFAULT expression, or its type's default),
  // as on the hosted service: tables often have more columns than a source fills.
}

export function settingsRules(
  pipe: Record<string, unknown>,
  kind: SourceKind | undefined,
  problems: Problem[],
): void {
  const scaling = asObject(pipe.scaling);
  if (kind && kind !== 'objectStorage' && scaling?.concurrency !== undefined) {
    problems.push({ path: 'scaling.concurrency', message: 'Only used by object-storage pipes' });
  }
  problems.push(...settingsKindProblems(pipe.settings, kind, 'settings'));
}

/** object_storage_* settings only make sense on an object-storage pipe. */
export function settingsKindProblems(value: unknown, kind: SourceKind | undefined, path: string): Problem[] {
  const settings = asObject(value);
  if (!settings || !kind || kind === 'objectStorage') return [];
  return Object.keys(settings)
    .filter((name) => name.startsWith('object_storage_'))
    .map((name) => ({ path: `${path}.${name}`, message: 'Only used by object-storage pipes' }));
}
