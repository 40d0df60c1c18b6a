// A pipe's history in its own service (README, "Pipe history"): the table the runtime writes, the
// per-minute view alerts and the status read, and the rows of both.
export { isMissingTable, type PipeMinute, pipeMinutes, statusSeries } from './read.js';
export {
  type HistoryEvent,
  insertEventsSql,
  minuteEvent,
  type PipeLag,
  recordEvents,
  stateEvent,
} from './rows.js';
export {
  EVENTS,
  EVENTS_TABLE,
  ensureHistory,
  HISTORY_DATABASE,
  MINUTES,
  MINUTES_VIEW,
  PIPE_HISTORY_SOURCE,
} from './table.js';
