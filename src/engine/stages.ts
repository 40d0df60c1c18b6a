import type { Engine } from './engine.js';
import { literal, tableName } from './sql.js';

/**
 * Engine settings by which a MergeTree table drops an inserted block it has seen before: by the
 * insert's token, or, with none, by the block's content (two equal files, a repeated batch of
 * messages). Sluice never keeps them on a table it writes: exactly once comes from its own ranges
 * (src/pipes/runtime/batch.ts), and two equal records are two records.
 */
const DEDUPLICATION_SETTING = /deduplication/i;

/** What an earlier Sluice set on every table it made (README, "Upgrading"). */
export const OLD_DEDUPLICATION_SETTING = 'non_replicated_deduplication_window';
const OLD_DEDUPLICATION_VALUE = '1000';

/** How a MergeTree-family table stores its rows, as the engine reports it (system.tables). */
export interface TableStorage {
  engine: string;
  partitionKey: string;
  sortingKey: string;
  primaryKey: string;
  samplingKey: string;
  /** The table's own settings, `name = value` each, as the engine prints them. */
  settings: string[];
}

/** The storage of a table, or undefined when it does not exist. */
export async function tableStorage(
  engine: Engine,
  database: string,
  table: string,
): Promise<TableStorage | undefined> {
  const result = await engine.query(
    `SELECT engine, engine_full, partition_key, sorting_key, primary_key, sampling_key FROM system.tables
      WHERE database = ${literal(database)} AND name = ${literal(table)}`,
  );
  const row = result.rows[0];
  if (!row) return undefined;
  return {
    engine: String(row.engine),
    partitionKey: String(row.partition_key),
    sortingKey: String(row.sorting_key),
    primaryKey: String(row.primary_key),
    samplingKey: String(row.sampling_key),
    settings: settingsOf(String(row.engine_full)),
  };
}

/**
 * The CREATE TABLE of a batch's stage for `target`: the target's columns, indexes, projections,
 * keys and settings (so its partitions move into the target), but always a plain MergeTree without
 * deduplication or TTL. A stage keeps exactly the rows its batch read: no equal block is dropped,
 * no insert or merge folds rows as a Replacing, Summing, Collapsing or Aggregating target would
 * (that is the target's own work, after the move), and its count is what the batch wrote.
 */
export function stageTableSql(stage: string, target: string, storage: TableStorage): string {
  const settings = [
    ...storage.settings.filter((setting) => !DEDUPLICATION_SETTING.test(settingName(setting))),
    `${OLD_DEDUPLICATION_SETTING} = 0`,
  ];
  return [
    `CREATE TABLE IF NOT EXISTS ${stage} AS ${target} ENGINE = MergeTree`,
    storage.partitionKey ? ` PARTITION BY ${asKey(storage.partitionKey)}` : '',
    ` ORDER BY ${storage.sortingKey ? asKey(storage.sortingKey) : 'tuple()'}`,
    storage.primaryKey ? ` PRIMARY KEY ${asKey(storage.primaryKey)}` : '',
    storage.samplingKey ? ` SAMPLE BY ${asKey(storage.samplingKey)}` : '',
    ` SETTINGS ${settings.join(', ')}`,
  ].join('');
}

/**
 * A key as the engine printed it (`id`, `id, name`) written back as the target has it: a list in
 * parentheses, one expression bare. The engine compares the stage's keys with the target's as
 * written, and `(id)` is not `id` to it.
 */
function asKey(text: string): string {
  return splitOutside(text, ',').length > 1 ? `(${text})` : text;
}

/** A stage as an earlier Sluice made it: of its target's engine, or deduplicating equal blocks. */
export function isOldStage(storage: TableStorage): boolean {
  return storage.engine !== 'MergeTree' || storage.settings.some((s) => deduplicates(s));
}

/** Whether a table drops equal blocks by the window an earlier Sluice gave it. */
export function hasOldDeduplication(settings: readonly string[]): boolean {
  return settings.some(
    (s) => settingName(s) === OLD_DEDUPLICATION_SETTING && settingValue(s) === OLD_DEDUPLICATION_VALUE,
  );
}

/** Every table of the engine that an earlier Sluice left deduplicating equal blocks. */
export async function tablesWithOldDeduplication(
  engine: Engine,
): Promise<{ database: string; table: string }[]> {
  const result = await engine.query(
    `SELECT database, name, engine_full FROM system.tables
      WHERE engine LIKE '%MergeTree' AND database NOT IN ('system', 'information_schema', 'INFORMATION_SCHEMA')
        AND position(engine_full, ${literal(OLD_DEDUPLICATION_SETTING)}) > 0`,
  );
  return result.rows
    .filter((row) => hasOldDeduplication(settingsOf(String(row.engine_full))))
    .map((row) => ({ database: String(row.database), table: String(row.name) }));
}

/** Takes the old deduplication window off a table: it keeps every block inserted from now on. */
export function resetOldDeduplicationSql(database: string, table: string): string {
  return `ALTER TABLE ${tableName(database, table)} RESET SETTING ${OLD_DEDUPLICATION_SETTING}`;
}

function deduplicates(setting: string): boolean {
  return DEDUPLICATION_SETTING.test(settingName(setting)) && settingValue(setting) !== '0';
}

function settingName(setting: string): string {
  return setting.slice(0, setting.indexOf('=')).trim();
}

function settingValue(setting: string): string {
  return setting.slice(setting.indexOf('=') + 1).trim();
}

/**
 * The settings of an `engine_full`: its last clause, `SETTINGS a = 1, b = 'x'`, split at the
 * commas outside quotes. The engine prints the clause last and its values as literals.
 */
export function settingsOf(engineFull: string): string[] {
  const at = engineFull.lastIndexOf(' SETTINGS ');
  return at < 0 ? [] : splitOutside(engineFull.slice(at + ' SETTINGS '.length), ',');
}

/** `text` split at each `separator` outside quotes and brackets, each part trimmed. */
function splitOutside(text: string, separator: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quote: string | undefined;
  let depth = 0;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i] as string;
    if (quote) {
      current += c;
      if (c === '\\') current += text[++i] ?? '';
      else if (c === quote) quote = undefined;
      continue;
    }
    if (c === "'" || c === '`' || c === '"') quote = c;
    else if (c === '(' || c === '[') depth += 1;
    else if (c === ')' || c === ']') depth -= 1;
    else if (c === separator && depth === 0) {
      parts.push(current.trim());
      current = '';
      continue;
    }
    current += c;
  }
  if (current.trim()) parts.push(current.trim());
  return parts;
}
