import { expression, ident, literal, tableName } from '../../engine/index.js';
import type { SourceRow } from '../../store/index.js';
import { luceneToSql } from '../lucene.js';

export interface TileSelect {
  aggFn: string;
  level?: number;
  valueExpression?: string;
  where?: string;
  whereLanguage?: 'sql' | 'lucene';
}

/**
 * The query of a tile over a time range, bucketed by the alert's interval (aligned to the epoch,
 * as the windows are): `bucket`, optionally `group`, and `value`, the tile's first aggregate.
 * Expressions of the tile and source are the team's own SQL, each checked as one expression by the
 * engine when stored and set on lines of its own here; they run read-only on the team's own
 * service. Lucene filters are translated with every value escaped.
 */
export function tileQuery(
  source: SourceRow,
  select: TileSelect,
  groupBy: string | undefined,
  range: { start: Date; end: Date; intervalSeconds: number },
): string {
  const ts = timestampOf(source.timestampExpression);
  const conditions = rangeConditions(ts, range);
  const filter = whereOf(select);
  if (filter) conditions.push(expression(filter));
  return bucketedQuery(source, ts, groupBy, range, [`toFloat64(${aggregate(select)}) AS value`], conditions);
}

/**
 * One query for several selects of tiles on the same source, grouping and range: the table is
 * read once and each select is a column (`value0`, `value1`, ...) of the same buckets. A select's
 * filter becomes its aggregate's condition (`countIf`, `avgIf`, ...) instead of the WHERE clause,
 * and a bucket or group where no row meets it reads NULL, as it would be absent from the select's
 * own query (tileQuery): then it counts as an empty bucket, not as the aggregate of no rows (an
 * average of nothing is nan, not 0).
 */
export function scanQuery(
  source: SourceRow,
  selects: TileSelect[],
  groupBy: string | undefined,
  range: { start: Date; end: Date; intervalSeconds: number },
): string {
  const ts = timestampOf(source.timestampExpression);
  const values = selects.map((select, i) => {
    const filter = whereOf(select);
    if (!filter) return `toFloat64(${aggregate(select)}) AS ${ident(`value${i}`)}`;
    const condition = expression(filter);
    return `if(countIf(${condition}) = 0, NULL, toFloat64(${aggregate(select, condition)})) AS ${ident(`value${i}`)}`;
  });
  return bucketedQuery(source, ts, groupBy, range, values, rangeConditions(ts, range));
}

function rangeConditions(ts: string, range: { start: Date; end: Date }): string[] {
  return [
    `${ts} >= toDateTime(${Math.floor(range.start.getTime() / 1000)}, 'UTC')`,
    `${ts} < toDateTime(${Math.floor(range.end.getTime() / 1000)}, 'UTC')`,
  ];
}

function bucketedQuery(
  source: SourceRow,
  ts: string,
  groupBy: string | undefined,
  range: { intervalSeconds: number },
  values: string[],
  conditions: string[],
): string {
  const bucket = `toUnixTimestamp(toStartOfInterval(${ts}, INTERVAL ${range.intervalSeconds} SECOND))`;
  const group = groupBy ? `toString(${expression(groupBy)})` : undefined;
  const columns = [`${bucket} AS bucket`, ...(group ? [`${group} AS ${ident('group')}`] : []), ...values];
  // Grouped by the expressions, not the aliases: a column of the table may bear an alias's name,
  // and with TILE_QUERY_SETTINGS a name in the query means the column.
  return `SELECT ${columns.join(', ')} FROM ${tableName(source.databaseName, source.tableName)}
    WHERE ${conditions.join(' AND ')} GROUP BY ${[bucket, ...(group ? [group] : [])].join(', ')}`;
}

/**
 * Settings every tile query runs with (given when its read-only connection opens). The query
 * names its results `bucket`, `group` and `value`; a table may have columns of those names (a
 * reading's `value` is common), and by default an alias hides a column of its name in every
 * expression of the query: a filter `value > 30` would read the aggregate `value` and the engine
 * refuse it (ILLEGAL_AGGREGATION), so the alert never saw its window. Names mean the table's
 * columns instead, as in the tile's own filter and expressions.
 */
export const TILE_QUERY_SETTINGS = { prefer_column_name_to_alias: 1 } as const;

/** A source's timestamp as the tile queries read it. */
function timestampOf(text: string): string {
  return `toDateTime(${expression(text)}, 'UTC')`;
}

/** A select's filter as SQL (a Lucene filter translated with every value escaped), if it has one. */
function whereOf(select: TileSelect): string | undefined {
  if (!select.where?.trim()) return undefined;
  return select.whereLanguage === 'lucene' ? luceneToSql(select.where) : select.where;
}

/**
 * Queries that read no rows, one for each expression of a source or tile, run at create on the
 * source's table: an unknown column or a type that does not fit is a 400 then, not a history row
 * at the next tick. Each names the field it checks, relative to the tile's config (or `timestamp`).
 */
export function checkQueries(
  source: Pick<SourceRow, 'databaseName' | 'tableName' | 'timestampExpression'>,
  tile?: { select: TileSelect[]; groupBy?: string | undefined },
): [field: string, sql: string][] {
  const from = tableName(source.databaseName, source.tableName);
  const none = (columns: string, where = '') => `SELECT ${columns} FROM ${from}${where} LIMIT 0`;
  if (!tile) return [['timestampValueExpression', none(timestampOf(source.timestampExpression))]];
  const queries: [string, string][] = [];
  if (tile.groupBy) queries.push(['groupBy', none(`toString(${expression(tile.groupBy)})`)]);
  tile.select.forEach((select, i) => {
    if (select.valueExpression)
      queries.push([`select[${i}].valueExpression`, none(`toFloat64(${aggregate(select)})`)]);
    const filter = whereOf(select);
    if (filter) queries.push([`select[${i}].where`, none('1', ` WHERE ${expression(filter)}`)]);
  });
  return queries;
}

/** A select's aggregate; with a condition, its -If form, which aggregates only the rows meeting it. */
function aggregate(select: TileSelect, condition?: string): string {
  const value = select.valueExpression ? expression(select.valueExpression) : '';
  const suffix = condition ? 'If' : '';
  const args = (...list: string[]) => [...list.filter(Boolean), ...(condition ? [condition] : [])].join(', ');
  switch (select.aggFn) {
    case 'count':
      return `count${suffix}(${args(value)})`;
    case 'count_distinct':
      return `uniqExact${suffix}(${args(value)})`;
    case 'quantile':
      return `quantile${suffix}(${Number(select.level ?? 0.5)})(${args(value)})`;
    case 'sum':
    case 'avg':
    case 'min':
    case 'max':
      return `${select.aggFn}${suffix}(${args(value)})`;
    default:
      throw new Error(`unknown aggregate ${literal(select.aggFn)}`);
  }
}
