import type { Problem } from '../errors.js';
import { checker } from '../schema/index.js';
import { databaseDestinationRules, settingsRules, tableDestinationRules } from './destination-rules.js';
import { asObject } from './rules-util.js';
import { SOURCE_KINDS } from './schema/enums.js';
import { CreatePipeBody } from './schema/index.js';
import { SOURCE_RULES } from './source-rules.js';

const checkCreate = checker(CreatePipeBody);

/** Every problem of a create body: its schema and the rules together. */
export function createBodyProblems(body: unknown): Problem[] {
  return [...checkCreate(body), ...pipeRuleProblems(body)];
}

/**
 * The rules of the hosted service (README, "Pipes": validation beyond the field types) that a JSON schema cannot express. They run on any body, even one
 * the schema rejected, so a client learns of every problem in one round trip; each check therefore
 * reads its input defensively.
 */
export function pipeRuleProblems(body: unknown): Problem[] {
  const problems: Problem[] = [];
  const pipe = asObject(body);
  if (!pipe) return problems;
  const source = asObject(pipe.source);
  const kinds = source ? SOURCE_KINDS.filter((kind) => source[kind] !== undefined) : [];
  if (source && kinds.length === 0) {
    problems.push({
      path: 'source',
      message: `Required: give one source kind, one of ${SOURCE_KINDS.join(', ')}`,
    });
  } else if (kinds.length > 1) {
    problems.push({ path: 'source', message: `Give exactly one source kind, got ${kinds.join(' and ')}` });
  }
  const kind = kinds.length === 1 ? kinds[0] : undefined;
  const config = kind && source ? asObject(source[kind]) : undefined;
  if (kind && config) SOURCE_RULES[kind](config, `source.${kind}`, problems);
  if (kind === 'postgres') databaseDestinationRules(pipe, problems);
  else tableDestinationRules(pipe, problems);
  settingsRules(pipe, kind, problems);
  if (kind === 'objectStorage' && config?.format === 'JSONAsObject') wholeRecordRule(pipe, problems);
  if (kind === 'objectStorage' && (config?.format === 'CSV' || config?.format === 'TabSeparated')) {
    positionalRule(pipe, String(config.format), problems);
  }
  return problems;
}

const VIRTUAL_FIELDS = ['_path', '_file', '_size', '_time'];

/** Files without a header name their fields by position, c1, c2, ... (as the engine does). */
function positionalRule(pipe: Record<string, unknown>, format: string, problems: Problem[]): void {
  const mappings = Array.isArray(pipe.fieldMappings) ? pipe.fieldMappings : undefined;
  if (!mappings) {
    problems.push({
      path: 'fieldMappings',
      message: `Required for ${format}: a file without a header names its fields c1, c2, ... by position; map them to the columns`,
    });
    return;
  }
  mappings.forEach((entry, index) => {
    const field = asObject(entry)?.sourceField;
    if (typeof field === 'string' && !VIRTUAL_FIELDS.includes(field) && !/^c[1-9]\d{0,3}$/.test(field)) {
      problems.push({
        path: `fieldMappings[${index}].sourceField`,
        message: `${format} without a header names fields by position: use c1, c2, ... (or ${format}WithNames for a header row)`,
      });
    }
  });
}

/** JSONAsObject reads each record as one JSON value: every mapping takes that one source field. */
function wholeRecordRule(pipe: Record<string, unknown>, problems: Problem[]): void {
  const virtual = VIRTUAL_FIELDS;
  const fields = new Set(
    (Array.isArray(pipe.fieldMappings) ? pipe.fieldMappings : [])
      .map((mapping) => asObject(mapping)?.sourceField)
      .filter((field): field is string => typeof field === 'string' && !virtual.includes(field)),
  );
  if (fields.size > 1) {
    problems.push({
      path: 'fieldMappings',
      message: `JSONAsObject reads each record as one JSON value: map it from one sourceField (for example "json"), not ${[...fields].join(', ')}`,
    });
  }
}

export { settingsKindProblems } from './destination-rules.js';
export { asObject } from './rules-util.js';
export { tableMappingRules } from './source-rules.js';
