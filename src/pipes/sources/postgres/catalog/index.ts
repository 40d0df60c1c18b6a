/**
 * The source's tables as its catalog describes them (columns, types, keys, replica identity,
 * partitions), whether a mapping can take them, the publication that carries their changes, how
 * each becomes a target (its plan), and the listing and discovery of tables for the API.
 */
export { arrayTextToJson, type ColumnPlan, textOfTarget } from './column-types.js';
export { discoverPostgres } from './discover.js';
export {
  alignOwnedPublication,
  ensurePublication,
  publicationProblem,
  unpublishable,
} from './publication.js';
export { mappingRemoved, missingTables, readTable, type SourceTable, tableGone } from './source-tables.js';
export {
  type ListedTable,
  listPostgresTables,
  type PostgresConnection,
  type PostgresTables,
  type TableProblem,
} from './table-list.js';
export {
  IS_DELETED,
  planOptions,
  READ_SETTINGS,
  ROW_HASH,
  ROW_ID,
  rowsFileSource,
  SYNCED_AT,
  TARGET_TEXT_SETTINGS,
  type TablePlan,
  tablePlan,
  VERSION,
} from './table-plan.js';
export { mappedTableProblems } from './table-rules.js';
