export { FROZEN_SETTINGS } from './chdb/confinement.js';
export { EmbeddedEngine } from './chdb/embedded-engine.js';
export { ENGINE_ALLOCATOR } from './chdb/engine-process.js';
export {
  detectSandbox,
  type SandboxPolicy,
  type SandboxStatus,
  sandboxStatus,
} from './chdb/sandbox.js';
export { TRANSIENT_SCRATCH_PREFIX } from './chdb/scratch.js';
export { DiskQuotaError } from './disk-usage.js';
export {
  ENGINE_CODES,
  type Engine,
  type EngineColumn,
  EngineError,
  EngineUnavailableError,
  isBadDataEngineError,
  isDefinitionError,
  isTransientEngineError,
  type Queryable,
  type QueryOptions,
  type QueryResult,
  type RowStream,
  readAllRows,
  SCHEMA_CODES,
  UnreadableResultError,
} from './engine.js';
export {
  EngineRegistry,
  type ServiceRef,
  serviceEngineRoom,
  sourceReaderRoom,
  UnsandboxedSqlError,
} from './registry.js';
export { expression, ident, literal, settingsClause, tableName } from './sql.js';
export { fragmentProblem } from './sql-guard.js';
export {
  dropMovedStageParts,
  isOldStage,
  moveCheckSql,
  OLD_DEDUPLICATION_SETTING,
  resetOldDeduplicationSql,
  STAGING_DATABASE,
  stageTableSql,
  storageKey,
  type TableStorage,
  tableStorage,
  tableStorages,
  tablesInsertedInto,
  tablesWithOldDeduplication,
} from './stages.js';
export {
  expressionProblem,
  MAX_FRAGMENT_LENGTH,
  NotParsedError,
  statementProblem,
  typeProblem,
  typeProblems,
} from './statement.js';
export {
  addColumnsSql,
  countRows,
  countRowsOf,
  createTableSql,
  describeTable,
  ensureDatabase,
  type TableSpec,
} from './tables.js';
