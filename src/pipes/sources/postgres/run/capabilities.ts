import type {
  ExplainsCompletion,
  LimitsInFlight,
  OwnsItsStates,
  ReportsLiveStatus,
  SourceRun,
  TracksCommits,
  WritesSeveralTables,
} from '../../contract.js';

/**
 * What a PostgreSQL run is beyond the contract's core (sources/contract.ts): it moves the pipe
 * through Setup, Snapshot and Running itself, ends a snapshot-only pipe, writes one table per
 * mapping, limits its batches in flight to its sessions, reports its slot and tables, and
 * confirms the slot's position after each commit.
 */
export type PostgresRunCapabilities = SourceRun &
  OwnsItsStates &
  ExplainsCompletion &
  WritesSeveralTables &
  LimitsInFlight &
  ReportsLiveStatus &
  TracksCommits;
