export { EmbeddedEngine } from './chdb/embedded-engine.js';
export {
  ENGINE_CODES,
  type Engine,
  type EngineColumn,
  EngineError,
  isTransientEngineError,
  type QueryOptions,
  type QueryResult,
  SCHEMA_CODES,
  UnreadableResultError,
} from './engine.js';
export { EngineRegistry, type ServiceRef } from './registry.js';
export { ident, literal, settingsClause, tableName } from './sql.js';
export { fragmentProblem, statementProblem } from './sql-guard.js';
export {
  countRows,
  createTableSql,
  describeTable,
  ensureDatabase,
  type TableSpec,
  tableEngine,
} from './tables.js';
