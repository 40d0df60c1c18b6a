import { mapLimited } from '../concurrency.js';
import type { ErrorCode } from '../errors.js';
import { LIMITS } from '../schema/index.js';
import type { Queryable } from './engine.js';
import { EngineError } from './engine.js';
import { literal } from './sql.js';

/**
 * User SQL read by the engine's own parser, never by a pattern over its text: whether it is one
 * statement, one expression or one type. The checks run read-only on the service's engine and read
 * nothing; what they let through still runs confined (confinement.ts) and, unless the caller is an
 * admin, read-only.
 */

/** Longest expression or type a user may store. */
export const MAX_FRAGMENT_LENGTH = LIMITS.expression;
const CHECK_TIMEOUT_MS = 10_000;

/** A text the engine refused to read as what it was asked to be, with the engine's reason. */
export class NotParsedError extends Error {
  readonly code: ErrorCode = 'SLUICE_ERR_NOT_PARSED';
}

/** The engine's canonical text of one statement (comments gone, literals quoted its way). */
async function canonical(engine: Queryable, sql: string): Promise<string> {
  try {
    const result = await engine.query(`SELECT formatQuery(${literal(sql)}) AS q`, {
      readonly: true,
      timeoutMs: CHECK_TIMEOUT_MS,
    });
    return String(result.rows[0]?.q ?? '');
  } catch (error) {
    if (error instanceof EngineError && error.code !== undefined) throw new NotParsedError(reason(error));
    throw error;
  }
}

/** The engine's message without the scope of the checking query, which is ours and not the user's. */
function reason(error: EngineError): string {
  return error.message
    .replace(/\s*:\s*In scope SELECT (formatQuery|toTypeName)[\s\S]*$/, '')
    .replace(/\s*\([A-Z_]+\)\s*$/, '');
}

/** The canonical text with its literals and quoted names blanked: only its keywords are left. */
function keywordsOf(text: string): string {
  return text.replace(/'(?:[^'\\]|\\.)*'|`(?:[^`\\]|\\.)*`|"(?:[^"\\]|\\.)*"/g, "''");
}

/** Why a statement may not run: the code of its condition and the words that say it. */
export interface StatementProblem {
  code: ErrorCode;
  message: string;
}

const refused = (message: string): StatementProblem => ({ code: 'SLUICE_ERR_SQL_REFUSED', message });

/**
 * Why a statement of the query endpoint may not run, or undefined. It must be exactly one statement
 * as the engine parses it, and none of the three things chDB does on its client side, outside the
 * engine's grants: INTO OUTFILE (writes a host file), FROM INFILE (reads one), ATTACH ... FROM
 * (adopts a directory of the host as a table).
 */
export async function statementProblem(
  engine: Queryable,
  sql: string,
  caller: 'admin' | 'reader',
  /** The service is over its disk quota: what it says when the statement neither reads nor frees space. */
  overQuota?: string,
): Promise<StatementProblem | undefined> {
  let text: string;
  try {
    text = await canonical(engine, sql);
  } catch (error) {
    if (error instanceof NotParsedError) return { code: 'SLUICE_ERR_SQL_INVALID', message: error.message };
    throw error;
  }
  const keywords = keywordsOf(text);
  if (/\bINTO\s+OUTFILE\b/i.test(keywords))
    return refused('INTO OUTFILE writes to the host and is not allowed');
  if (/\bFROM\s+INFILE\b/i.test(keywords)) return refused('FROM INFILE reads the host and is not allowed');
  if (/^\s*ATTACH\b/i.test(keywords)) return refused('ATTACH is not allowed: create the table instead');
  // The engine's read-only mode lets a SET to the value a setting has pass; a key that may change
  // no setting is told so for every SET (each statement has a connection of its own anyway).
  if (overQuota !== undefined && !readsOrFrees(keywords))
    return { code: 'SLUICE_ERR_DISK_QUOTA', message: overQuota };
  if (caller === 'reader' && /^\s*SET\b/i.test(keywords))
    return refused(
      'this key may only read and change no setting: SET is for admin keys (and lasts for its one statement)',
    );
  // A dynamic disk names a path or an address for a table's storage; the sandbox keeps it inside
  // the service, but a disk that cannot connect retries for minutes: a table uses the service's own.
  if (/\bdisk\s*=\s*disk\s*\(/i.test(keywords))
    return refused(
      "a table's storage is the service's own: disk = disk(...) is not allowed (leave out the disk setting)",
    );
  // The parser reads an INSERT's inline data as data, but the engine's statement splitter ends it at
  // the first ';': a ';' there would start a second statement.
  const insert = /^\s*INSERT\b/i.test(keywords);
  const inline = insert && /\bFORMAT\s+\w+\s*$/i.test(keywords);
  if (!insert && /\bFORMAT\s+\w+\s*$/i.test(keywords))
    return {
      code: 'SLUICE_ERR_ENGINE_RESULT_FORMAT',
      message: 'leave the FORMAT clause out: results come back as JSON rows',
    };
  if (inline && sql.trim().replace(/;\s*$/, '').includes(';'))
    return refused(
      "an INSERT with inline data may not contain ';' (it would start another statement): send one statement",
    );
  return undefined;
}

/**
 * Whether a statement (its keywords) only reads, or frees space: what a service over its disk
 * quota still runs (DROP, TRUNCATE, ALTER TABLE ... DELETE or DROP PARTITION/PART, and reads).
 */
function readsOrFrees(keywords: string): boolean {
  if (/^\s*(SELECT|WITH|SHOW|DESCRIBE|DESC|EXISTS|EXPLAIN|DROP|TRUNCATE|DELETE)\b/i.test(keywords))
    return true;
  const alter = /^\s*ALTER\s+TABLE\s+\S+(?:\s+ON\s+CLUSTER\s+\S+)?\s+(.*)$/is.exec(keywords);
  return alter !== null && /^(?:DELETE\s+WHERE|DROP\s+(?:PARTITION|PART)\b)/i.test((alter[1] ?? '').trim());
}

/**
 * Why a text is not exactly one expression, or undefined: the engine parses `SELECT <text>` and its
 * syntax tree must be a SELECT of one expression and nothing else (no FROM, no second column, no
 * SETTINGS, FORMAT or INTO), with no subquery inside.
 */
export async function expressionProblem(engine: Queryable, text: string): Promise<string | undefined> {
  if (text.length > MAX_FRAGMENT_LENGTH) return `must be at most ${MAX_FRAGMENT_LENGTH} characters`;
  let select: string;
  try {
    select = await canonical(engine, `SELECT ${text}`);
  } catch (error) {
    if (error instanceof NotParsedError) return `not one expression: ${error.message}`;
    throw error;
  }
  const notOne = 'write one expression: no query, clause, subquery or list';
  let lines: string[];
  try {
    const tree = await engine.query(`EXPLAIN AST ${select}`, { readonly: true, timeoutMs: CHECK_TIMEOUT_MS });
    lines = tree.rows.map((row) => String(Object.values(row)[0] ?? ''));
  } catch (error) {
    // A clause the read-only check refuses to even explain (SETTINGS readonly = 0) is not one expression.
    if (error instanceof EngineError && error.code !== undefined) return `${notOne} (${reason(error)})`;
    throw error;
  }
  return oneExpression(lines) ? undefined : notOne;
}

/** `EXPLAIN AST SELECT x`: a union of one select, of one expression list of one element. */
function oneExpression(lines: string[]): boolean {
  const shape = [
    'SelectWithUnionQuery (children 1)',
    ' ExpressionList (children 1)',
    '  SelectQuery (children 1)',
    '   ExpressionList (children 1)',
  ];
  if (!shape.every((line, index) => lines[index] === line)) return false;
  const expression = lines.slice(shape.length);
  if (expression.filter((line) => /^ {4}\S/.test(line)).length !== 1) return false;
  return !expression.some((line) => /\b(Subquery|SelectWithUnionQuery|TablesInSelectQuery)\b/.test(line));
}

/**
 * Why each text is not one data type the engine knows (undefined for one that is), in one
 * statement while every type is one (a create's columns); only when that fails is each asked
 * apart, to tell which, `atOnce` at a time.
 */
export async function typeProblems(
  engine: Queryable,
  types: readonly string[],
  atOnce: number,
): Promise<(string | undefined)[]> {
  const known = knownTypesOf(engine);
  const asked = types.filter((type) => !known.has(type));
  const distinct = [...new Set(asked.filter((type) => type.length <= MAX_FRAGMENT_LENGTH))];
  const problems = new Map<string, string | undefined>();
  if (distinct.length > 1 && (await typesAreKnown(engine, distinct))) {
    for (const type of distinct) problems.set(type, undefined);
  }
  await mapLimited(
    [...new Set(asked)].filter((type) => !problems.has(type)),
    atOnce,
    async (type) => problems.set(type, await typeProblem(engine, type)),
  );
  for (const [type, problem] of problems) if (problem === undefined) remember(known, type);
  return types.map((type) => problems.get(type));
}

/**
 * Per engine, texts it read as one data type lately: a create's usual types (UInt64, String) are
 * not asked again, one statement less before most creates answer. What a text means does not
 * change while the engine runs; at most KNOWN_TYPES are kept, so creates with ever new types
 * cannot grow it.
 */
const knownTypes = new WeakMap<Queryable, Set<string>>();
const KNOWN_TYPES = 1000;

function knownTypesOf(engine: Queryable): Set<string> {
  let known = knownTypes.get(engine);
  if (!known) {
    known = new Set();
    knownTypes.set(engine, known);
  }
  return known;
}

function remember(known: Set<string>, type: string): void {
  if (known.size >= KNOWN_TYPES) known.clear();
  known.add(type);
}

/** Whether every one of `types` is a data type, in one statement. */
async function typesAreKnown(engine: Queryable, types: readonly string[]): Promise<boolean> {
  const names = types.map(
    (type, index) => `toTypeName(defaultValueOfTypeName(${literal(type)})) AS t${index}`,
  );
  try {
    await engine.query(`SELECT ${names.join(', ')}`, { readonly: true, timeoutMs: CHECK_TIMEOUT_MS });
    return true;
  } catch (error) {
    if (error instanceof EngineError && error.code !== undefined) return false;
    throw error;
  }
}

/** Why a text is not one data type the engine knows, or undefined. */
export async function typeProblem(engine: Queryable, type: string): Promise<string | undefined> {
  if (type.length > MAX_FRAGMENT_LENGTH) return `must be at most ${MAX_FRAGMENT_LENGTH} characters`;
  try {
    await engine.query(`SELECT toTypeName(defaultValueOfTypeName(${literal(type)})) AS t`, {
      readonly: true,
      timeoutMs: CHECK_TIMEOUT_MS,
    });
    return undefined;
  } catch (error) {
    if (error instanceof EngineError && error.code !== undefined) return `not a data type: ${reason(error)}`;
    throw error;
  }
}
