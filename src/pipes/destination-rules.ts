import { fragmentProblem } from '../engine/index.js';
import type { Problem } from '../errors.js';
import type { CheckedShape } from '../schema/index.js';
import type { CreatePipeBody, SettingsConfig } from './schema/index.js';
import type { AnySourceKind, SourceKinds } from './sources/index.js';

// The rules of a create body's destination, mappings and settings (README, "Pipes": validation
// beyond the field types). Each reads the body once its schema check passed the part it reads.

/** A kind that writes the tables its source names takes them from there (README, "Pipes"). */
export function databaseDestinationRules(
  pipe: CreatePipeBody,
  shape: CheckedShape,
  kind: AnySourceKind,
  problems: Problem[],
): void {
  const { field, leaveColumnsOut } = kind.writesTablesItNames ?? { field: '', leaveColumnsOut: '' };
  if (shape.readable('destination')) {
    for (const name of ['table', 'columns', 'managedTable', 'tableDefinition'] as const) {
      if (pipe.destination[name] !== undefined) {
        problems.push({
          path: `destination.${name}`,
          message: `Not used by a ${kind.label} pipe: its tables come from source.${kind.name}.${field}`,
        });
      }
    }
  }
  if (shape.readable('fieldMappings') && (pipe.fieldMappings?.length ?? 0) > 0) {
    problems.push({
      path: 'fieldMappings',
      message: `Not used by a ${kind.label} pipe: leave columns out with ${leaveColumnsOut}`,
    });
  }
}

export function tableDestinationRules(pipe: CreatePipeBody, shape: CheckedShape, problems: Problem[]): void {
  if (!shape.readable('destination')) return;
  const destination = pipe.destination;
  if (destination.table === undefined) problems.push({ path: 'destination.table', message: 'Required' });
  const columns = shape.readable('destination.columns') ? destination.columns : undefined;
  if (destination.columns === undefined)
    problems.push({ path: 'destination.columns', message: 'Required: list the columns of the table' });
  const names = (columns ?? []).map((column, index) =>
    shape.valid(`destination.columns[${index}].name`) ? column.name : undefined,
  );
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
  if (shape.readable('destination.tableDefinition')) tableDefinitionRules(pipe, shape, known, problems);
  expressionRules(pipe, shape, problems);
  if (columns !== undefined && shape.readable('fieldMappings'))
    fieldMappingRules(pipe, shape, known, problems);
}

/**
 * Column types and PARTITION BY / PRIMARY KEY expressions go into the engine's SQL as written: each
 * must be one expression, with nothing that could end it early or reach outside the service.
 */
function expressionRules(pipe: CreatePipeBody, shape: CheckedShape, problems: Problem[]): void {
  const check = (value: string | undefined, path: string) => {
    const problem = value !== undefined && shape.valid(path) ? fragmentProblem(value) : undefined;
    if (problem) problems.push({ path, message: `Not usable: ${problem}` });
  };
  if (shape.readable('destination.columns')) {
    (pipe.destination.columns ?? []).forEach((column, index) => {
      check(column.type, `destination.columns[${index}].type`);
    });
  }
  if (!shape.readable('destination.tableDefinition')) return;
  const definition = pipe.destination.tableDefinition;
  check(definition?.partitionBy, 'destination.tableDefinition.partitionBy');
  check(definition?.primaryKey, 'destination.tableDefinition.primaryKey');
}

function tableDefinitionRules(
  pipe: CreatePipeBody,
  shape: CheckedShape,
  columns: Set<string>,
  problems: Problem[],
) {
  const definition = pipe.destination.tableDefinition;
  if (!definition) return;
  const path = 'destination.tableDefinition';
  const engine = shape.readable(`${path}.engine`) ? definition.engine : undefined;
  const type = shape.valid(`${path}.engine.type`) ? engine?.type : undefined;
  const sortingKey = shape.valid(`${path}.sortingKey`) ? (definition.sortingKey ?? []) : [];
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
  const mustExist = (value: string | undefined, at: string) => {
    if (value !== undefined && shape.valid(at) && !columns.has(value)) {
      problems.push({ path: at, message: `No destination column is named "${value}"` });
    }
  };
  mustExist(engine?.versionColumnId, `${path}.engine.versionColumnId`);
  if (shape.readable(`${path}.engine.columnIds`)) {
    (engine?.columnIds ?? []).forEach((id, i) => {
      mustExist(id, `${path}.engine.columnIds[${i}]`);
    });
  }
  sortingKey.forEach((key, i) => {
    mustExist(key, `${path}.sortingKey[${i}]`);
  });
}

/** Every destination column appears once as a destinationField, and only columns do. */
function fieldMappingRules(
  pipe: CreatePipeBody,
  shape: CheckedShape,
  columns: Set<string>,
  problems: Problem[],
): void {
  const mappings = pipe.fieldMappings;
  if (!mappings) return; // absent: mapped by equal names
  const mapped = new Map<string, number>();
  mappings.forEach((mapping, index) => {
    const at = `fieldMappings[${index}].destinationField`;
    if (!shape.valid(at)) return;
    const target = mapping.destinationField;
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
  pipe: CreatePipeBody,
  shape: CheckedShape,
  kind: AnySourceKind | undefined,
  kinds: SourceKinds,
  problems: Problem[],
): void {
  if (kind && shape.readable('scaling')) problems.push(...concurrencyProblems(pipe.scaling, kind, kinds));
  if (shape.readable('settings'))
    problems.push(...settingsKindProblems(pipe.settings, kind, kinds, 'settings'));
}

/** `scaling.concurrency` only makes sense for the kinds that read in parallel (object storage). */
export function concurrencyProblems(
  scaling: { concurrency?: number } | undefined,
  kind: AnySourceKind,
  kinds: SourceKinds,
  path = 'scaling.concurrency',
): Problem[] {
  if (kind.scalingConcurrency || scaling?.concurrency === undefined) return [];
  return [
    { path, message: `Only used by ${labelsOf(kinds.list.filter((k) => k.scalingConcurrency))} pipes` },
  ];
}

/** Settings named for a kind (`object_storage_*`) only make sense on a pipe of that kind. */
export function settingsKindProblems(
  settings: Partial<SettingsConfig> | undefined,
  kind: AnySourceKind | undefined,
  kinds: SourceKinds,
  path: string,
): Problem[] {
  if (!settings || !kind) return [];
  return Object.keys(settings).flatMap((name) => {
    const owner = kinds.list.find((k) => k.settingsPrefix && name.startsWith(k.settingsPrefix));
    if (!owner || owner === kind) return [];
    return [{ path: `${path}.${name}`, message: `Only used by ${owner.label} pipes` }];
  });
}

function labelsOf(kinds: readonly AnySourceKind[]): string {
  return kinds.map((kind) => kind.label).join(' or ');
}
