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
  const ts = `toDateTime(${expression(source.timestampExpression)}, 'UTC')`;
  const conditions = [
    `${ts} >= toDateTime(${Math.floor(range.start.getTime() / 1000)}, 'UTC')`,
    `${ts} < toDateTime(${Math.floor(range.end.getTime() / 1000)}, 'UTC')`,
  ];
  if (select.where?.trim()) {
    conditions.push(expression(select.whereLanguage === 'lucene' ? luceneToSql(select.where) : select.where));
  }
  const columns = [
    `toUnixTimestamp(toStartOfInterval(${ts}, INTERVAL ${range.intervalSeconds} SECOND)) AS bucket`,
    ...(groupBy ? [`toString(${expression(groupBy)}) AS ${ident('group')}`] : []),
    `toFloat64(${aggregate(select)}) AS value`,
  ];
  return `SELECT ${columns.join(', ')} FROM ${tableName(source.databaseName, source.tableName)}
    WHERE ${conditions.join(' AND ')} GROUP BY bucket${groupBy ? `, ${ident('group')}` : ''} ORDER BY bucket`;
}

function aggregate(select: TileSelect): string {
  const value = select.valueExpression ? expression(select.valueExpression) : '';
  switch (select.aggFn) {
    case 'count':
      return value ? `count(${value})` : 'count()';
    case 'count_distinct':
      return `uniqExact(${value})`;
    case 'quantile':
      return `quantile(${Number(select.level ?? 0.5)})(${value})`;
    case 'sum':
    case 'avg':
    case 'min':
    case 'max':
      return `${select.aggFn}(${value})`;
    default:
      throw new Error(`unknown aggregate ${literal(select.aggFn)}`);
  }
}
