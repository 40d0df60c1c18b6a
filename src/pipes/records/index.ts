// What every source and the runtime share about records: how fields map to columns, where bad
// records go, and the failures that decide between retrying, setting aside and failing.
export {
  type BadRecord,
  ERROR_RETENTION_DAYS,
  ensureErrorTable,
  errorRowsQuery,
  errorTableName,
  explainSkippedRows,
  insertBadRecords,
  MAX_EXPLAINED,
  readSkippedRows,
  whyRecordFails,
} from './bad-records.js';
export { type CopyLoad, copyable, loadCopied } from './copy-load.js';
export { EngineFirst } from './engine-first.js';
export { asUnreadablePart, PermanentError, ReadAgainError, UnreadablePartError } from './errors.js';
export { type InsertPlan, insertPlan, POSITIONAL_FORMATS } from './insert-plan.js';
export { loadThroughReader, type SkippedRow, StageLoadError } from './load.js';
export { loadFile } from './load-file.js';
export { type RangeRead, rangeRead } from './range-read.js';
export { readSettings } from './read-settings.js';
export { ScratchSpares } from './scratch-spares.js';
export { spareTexts, writeWhole } from './scratch-text.js';
export { coresTakenBy, PARSE_SETTINGS, type ProducingReader } from './stream-load.js';
