import type { Queryable } from './engine.js';
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

/** Staging tables live apart from the user's databases (src/pipes/runtime/stages.ts). */
export const STAGING_DATABASE = '_sluice_staging';

/**
 * Settings every stage has, whatever its destination's: each part gets a UUID of its own, which a
 * move keeps (how a part already moved is told apart after a crash: dropMovedStageParts), and no
 * part is ever merged (a merge would give the parts of a partition cut short in its move a new
 * UUID, hiding them; a stage lives one batch).
 */
const STAGE_SETTINGS: Record<string, string> = {
  assign_part_uuids: '1',
  max_bytes_to_merge_at_max_space_in_pool: '1',
  max_bytes_to_merge_at_min_space_in_pool: '1',
};

/** How a MergeTree-family table stores its rows, as the engine prints its definition. */
export interface TableStorage {
  /** The engine's name (MergeTree, ReplacingMergeTree, Null, ...). */
  engine: string;
  /** Each clause of `engine_full` as written (`PARTITION BY`, `ORDER BY`, ...); SETTINGS apart. */
  clauses: Partial<Record<Clause, string>>;
  /** The table's own settings, `name = value` each, as the engine prints them. */
  settings: string[];
  /** The table's whole CREATE statement as the engine prints it (its columns, indexes, keys). */
  definition: string;
}

/** The clauses of a MergeTree table's definition, in the order the engine prints them. */
const CLAUSES = ['PARTITION BY', 'PRIMARY KEY', 'ORDER BY', 'SAMPLE BY', 'TTL', 'SETTINGS'] as const;
type Clause = (typeof CLAUSES)[number];

/** The storage of a table, or undefined when it does not exist. */
export async function tableStorage(
  engine: Queryable,
  database: string,
  table: string,
): Promise<TableStorage | undefined> {
  return (await tableStorages(engine, [{ database, table }])).get(storageKey(database, table));
}

/** A table's key in the answer of tableStorages. */
export function storageKey(database: string, table: string): string {
  return JSON.stringify([database, table]);
}

/**
 * The storage of each of `tables` that exists, by storageKey, in one statement: a batch's stages
 * and their targets are looked up together rather than a statement each (the engine answers a
 * question about system.tables in a few milliseconds, about the same for one table or eight).
 */
export async function tableStorages(
  engine: Queryable,
  tables: readonly { database: string; table: string }[],
): Promise<Map<string, TableStorage>> {
  if (tables.length === 0) return new Map();
  // The databases named alone as well: the engine then lists only their tables.
  const databases = [...new Set(tables.map((t) => literal(t.database)))];
  const pairs = tables.map((t) => `(${literal(t.database)}, ${literal(t.table)})`);
  const result = await engine.query(
    `SELECT database, name, engine, engine_full, create_table_query FROM system.tables
      WHERE database IN (${databases.join(', ')}) AND (database, name) IN (${pairs.join(', ')})`,
  );
  return new Map(
    result.rows.map((row) => {
      const { SETTINGS: settings, ...clauses } = clausesOf(String(row.engine_full));
      const storage: TableStorage = {
        engine: String(row.engine),
        clauses,
        settings: settings ? splitOutside(settings, ',') : [],
        definition: String(row.create_table_query),
      };
      return [storageKey(String(row.database), String(row.name)), storage];
    }),
  );
}

/**
 * The CREATE TABLE of a batch's stage for `target`: the target's columns, indexes, projections,
 * keys as the target's definition writes them (a key's `DESC`, a VersionedCollapsingMergeTree's
 * key without the version the engine adds) and settings, so its partitions move into the target;
 * but always a plain MergeTree without deduplication or TTL. A stage keeps exactly the rows its
 * batch read: no equal block is dropped, no insert or merge folds rows as a Replacing, Summing,
 * Collapsing or Aggregating target would (that is the target's own work, after the move), and its
 * count is what the batch wrote.
 */
export function stageTableSql(stage: string, target: string, storage: TableStorage): string {
  // Every deduplication setting left out (a plain MergeTree's window is 0 by default), and the
  // stage's own settings in place of the destination's of the same name.
  const settings = [
    ...storage.settings.filter(
      (setting) =>
        !DEDUPLICATION_SETTING.test(settingName(setting)) && !(settingName(setting) in STAGE_SETTINGS),
    ),
    ...Object.entries(STAGE_SETTINGS).map(([name, value]) => `${name} = ${value}`),
  ];
  const { clauses } = storage;
  const clause = (name: Clause) => (clauses[name] ? ` ${name} ${clauses[name]}` : '');
  return [
    `CREATE TABLE ${stage} AS ${target} ENGINE = MergeTree`,
    clause('PARTITION BY'),
    clause('PRIMARY KEY'),
    ` ORDER BY ${clauses['ORDER BY'] ?? 'tuple()'}`,
    clause('SAMPLE BY'),
    ` SETTINGS ${settings.join(', ')}`,
  ].join('');
}

/**
 * Drops from every stage of the engine each part the engine had already moved into a destination;
 * returns the parts dropped (`<stage>/<part>`). A move (MOVE PARTITION) renames a part into its
 * destination first and then writes the empty part that covers it in the stage (seen with strace,
 * half a millisecond apart): an engine killed between the two finds the part in both tables when it
 * starts again, and the batch, staged and not committed, would move it twice. A stage's part keeps
 * its UUID in the destination (STAGE_SETTINGS), so a stage part whose UUID a table outside the
 * stages holds has moved. The destination shows it while the part is active and, once merged away,
 * for its old_parts_lifetime (8 minutes by default): the engine runs this first at every start
 * (src/engine/registry.ts), before any merge of a table it loaded could have counted those minutes.
 */
export async function dropMovedStageParts(engine: Queryable): Promise<string[]> {
  const nil = literal('00000000-0000-0000-0000-000000000000');
  const moved = await engine.query(
    `SELECT table, name FROM system.parts
      WHERE database = ${literal(STAGING_DATABASE)} AND active AND uuid != toUUID(${nil})
        AND uuid IN (SELECT uuid FROM system.parts WHERE database != ${literal(STAGING_DATABASE)} AND uuid != toUUID(${nil}))`,
  );
  const dropped: string[] = [];
  for (const row of moved.rows) {
    await engine.execute(
      `ALTER TABLE ${tableName(STAGING_DATABASE, String(row.table))} DROP PART ${literal(String(row.name))}`,
    );
    dropped.push(`${row.table}/${row.name}`);
  }
  return dropped;
}

/**
 * The tables among `tables` a staged batch reaches by an insert rather than a move (by storageKey):
 * a Null table, which keeps nothing, and a table with materialized views, which the engine runs on
 * what is inserted into their table only (a partition moved in reaches no view).
 */
export async function tablesInsertedInto(
  engine: Queryable,
  tables: readonly { database: string; table: string }[],
): Promise<Set<string>> {
  if (tables.length === 0) return new Set();
  const pairs = tables.map((t) => `(${literal(t.database)}, ${literal(t.table)})`);
  const result = await engine.query(
    `SELECT database, name FROM system.tables
      WHERE (database, name) IN (${pairs.join(', ')}) AND (engine = 'Null' OR notEmpty(dependencies_table))`,
  );
  return new Set(result.rows.map((row) => storageKey(String(row.database), String(row.name))));
}

/**
 * A statement that moves nothing but fails as a real move would when `stage` cannot move into
 * `target` (their keys, indexes or storage differ): asked before a batch is staged into it.
 */
export function moveCheckSql(stage: string, target: string): string {
  return `ALTER TABLE ${stage} MOVE PARTITION ID 'sluice-check-no-such-partition' TO TABLE ${target}`;
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
  engine: Queryable,
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
  const settings = clausesOf(engineFull).SETTINGS;
  return settings ? splitOutside(settings, ',') : [];
}

/** The clauses of an `engine_full`, each keyword found outside quotes and brackets. */
function clausesOf(engineFull: string): Partial<Record<Clause, string>> {
  const found: { clause: Clause; at: number }[] = [];
  scanOutside(engineFull, (at) => {
    for (const clause of CLAUSES) {
      if (engineFull.startsWith(` ${clause} `, at)) found.push({ clause, at });
    }
  });
  const clauses: Partial<Record<Clause, string>> = {};
  for (const [i, { clause, at }] of found.entries()) {
    const end = found[i + 1]?.at ?? engineFull.length;
    clauses[clause] = engineFull.slice(at + clause.length + 2, end).trim();
  }
  return clauses;
}

/** `text` split at each `separator` outside quotes and brackets, each part trimmed. */
export function splitOutside(text: string, separator: string): string[] {
  const parts: string[] = [];
  let from = 0;
  scanOutside(text, (at) => {
    if (text[at] !== separator) return;
    parts.push(text.slice(from, at).trim());
    from = at + 1;
  });
  const last = text.slice(from).trim();
  if (last) parts.push(last);
  return parts;
}

/** Calls `visit` with each position of `text` outside quotes (', `, ") and brackets. */
function scanOutside(text: string, visit: (at: number) => void): void {
  let quote: string | undefined;
  let depth = 0;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i] as string;
    if (quote) {
      if (c === '\\') i += 1;
      else if (c === quote) quote = undefined;
    } else if (c === "'" || c === '`' || c === '"') quote = c;
    else if (c === '(' || c === '[') depth += 1;
    else if (c === ')' || c === ']') depth -= 1;
    else if (depth === 0) visit(i);
  }
}
