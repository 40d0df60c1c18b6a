import type { TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { Problem } from '../errors.js';

/**
 * One validator for every request body: all errors at once, no type coercion (a "3" is not a 3),
 * unknown fields kept so they are reported, not stripped.
 */
const ajv = new Ajv({
  allErrors: true,
  verbose: true,
  strict: false,
  coerceTypes: false,
  useDefaults: false,
});
(addFormats as unknown as (a: Ajv) => void)(ajv);

export type Checker = (value: unknown) => Problem[];

/** Compiles a schema once; the returned function lists every problem with its JSON path. */
export function checker(schema: TSchema): Checker {
  const validate: ValidateFunction = ajv.compile(schema);
  return (value) => (validate(value) ? [] : dedupe((validate.errors ?? []).map(toProblem)));
}

function toProblem(error: ErrorObject): Problem {
  const base = pointerToPath(error.instancePath);
  const join = (child: string) => (base ? `${base}.${child}` : child);
  const schema = (error.parentSchema ?? {}) as Record<string, unknown>;
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return { path: join(String(params.missingProperty)), message: 'Required' };
    case 'additionalProperties':
      return {
        path: join(String(params.additionalProperty)),
        message: 'Unknown field: remove it or check its spelling',
      };
    case 'enum':
      return { path: base, message: `Use one of: ${(schema.enum as unknown[]).join(', ')}` };
    case 'type':
      return { path: base, message: `Expected ${article(String(params.type))}` };
    case 'minimum':
    case 'maximum':
      return { path: base, message: rangeMessage(schema) };
    case 'minLength':
      return {
        path: base,
        message: params.limit === 1 ? 'Must not be empty' : `Must be at least ${params.limit} characters`,
      };
    case 'maxLength':
      return { path: base, message: `Must be at most ${params.limit} characters` };
    case 'minItems':
      return {
        path: base,
        message: `Must have at least ${params.limit} item${params.limit === 1 ? '' : 's'}`,
      };
    case 'maxItems':
      return { path: base, message: `Must have at most ${params.limit} items` };
    case 'minProperties':
      return { path: base, message: 'Must not be empty: give at least one field, or leave the object out' };
    case 'pattern':
      return { path: base, message: `Must be ${schema.description ?? `text matching ${params.pattern}`}` };
    case 'format':
      return { path: base, message: `Must be a valid ${params.format}` };
    case 'uniqueItems':
      return { path: base, message: 'Must not repeat an item' };
    default:
      return { path: base, message: error.message ?? 'Invalid value' };
  }
}

function rangeMessage(schema: Record<string, unknown>): string {
  const { minimum, maximum } = schema as { minimum?: number; maximum?: number };
  if (minimum !== undefined && maximum !== undefined) return `Not between ${minimum} and ${maximum}`;
  if (minimum !== undefined) return `Must be at least ${minimum}`;
  return `Must be at most ${maximum}`;
}

function article(type: string): string {
  const name = type === 'integer' ? 'integer' : type;
  return /^[aeiou]/.test(name) ? `an ${name}` : `a ${name}`;
}

/** `/source/kafka/0/name` -> `source.kafka[0].name`, the path form used in every message. */
export function pointerToPath(pointer: string): string {
  if (!pointer) return '';
  return pointer
    .slice(1)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path ? `${path}.${part}` : part), '');
}

function dedupe(problems: Problem[]): Problem[] {
  const seen = new Set<string>();
  return problems.filter((p) => {
    const key = `${p.path}\u0000${p.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
