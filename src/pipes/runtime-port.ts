import type { TProperties } from '@sinclair/typebox';
import type { Problem } from '../errors.js';
import type { Json, PipeRow, Service } from '../store/index.js';
import type { PipeMinute } from './history/index.js';
import type { PipeConfig } from './model.js';
import { reportsStatus, type SourceConnector, type SourceStatus } from './sources/index.js';

// What the pipes service and the pipe runtime say to each other, and the status a pipe reports.

/** The runtime as the pipes service sees it: told of changes, asked to stop a pipe's worker. */
export interface PipeRuntime {
  changed(pipeId: string): void;
  /** Problems of a new pipe found against its real source and destination. */
  createProblems(
    config: PipeConfig,
    service: Service,
    options: { validateSamples: boolean },
  ): Promise<Problem[]>;
  /**
   * Problems of a pipe's changed source against the real source (PATCH): new credentials are tried
   * as at create; a database pipe's new address must reach the same server with its slot. The
   * source unchanged: none.
   */
  updateProblems(
    before: PipeConfig,
    after: PipeConfig,
    service: Service,
    pipe: { pipeId: string; cursor: Json | null },
  ): Promise<Problem[]>;
  /** Problems of column types and table expressions, read by the service's engine. */
  definitionProblems(
    destination: Pick<PipeConfig['destination'], 'columns' | 'tableDefinition'>,
    service: Service,
  ): Promise<Problem[]>;
  /** What a running pipe's source says of itself (Kafka: each partition's offset and lag). */
  sourceStatus(pipeId: string): SourceStatus;
  /** What the source says of a pipe that does not run (a database pipe: its slot, from `cursor`). */
  idleSourceStatus(pipeId: string, cursor: Json | null): Promise<SourceStatus>;
  /** The last hour of a pipe's history, a minute each, oldest first (src/pipes/history). */
  lastHour(pipeId: string): Promise<PipeMinute[]>;
  /** The configuration changed: a running worker restarts with it. */
  reload(pipeId: string): Promise<void>;
  /**
   * Ends the pipe's worker: for a delete (`deleting`: its stages and what it holds at its source
   * go too), or for the stop command (`byRequest`: the history records the pipe Stopped).
   */
  stop(pipeId: string, options?: { deleting?: boolean; byRequest?: boolean }): Promise<void>;
}

export interface RuntimeView {
  row: PipeRow;
  config: PipeConfig;
  service: Service;
  redact(text: string): string;
}

/** A deleted pipe's source cleanup, taken for one attempt (PipesService.claimCleanup). */
export interface ClaimedCleanup {
  /** Attempts begun, this one included. */
  attempts: number;
  /** When the pipe was deleted. */
  since: Date;
  leaseUntil: Date;
  open(): Promise<RuntimeView>;
}

/** A pipe's progress, and what its source says of itself (its kind's parts: SourceStatus). */
export type PipeStatus = SourceStatus & {
  id: string;
  state: string;
  reason: string | null;
  filesDone: number;
  filesPending: number;
  rowsWritten: number;
  bytesWritten: number;
  badRecords: number;
  lastInsertAt: string | null;
  lastError: string | null;
  /** The catalog code of lastError (src/error-codes.ts). */
  lastErrorCode: string | null;
  lastErrorAt: string | null;
  /** The last hour, a minute each, from the pipe's history: rows per second and the largest lag. */
  lastHour: { minute: string; rowsPerSecond: number; lag: number | null }[];
};

/**
 * The fields every kind adds to a pipe's status response (each kind's StatusShape), in the order
 * of the connectors: the response schema lets through only what it lists.
 */
export function sourceStatusFields(connectors: readonly SourceConnector[]): TProperties {
  return Object.assign({}, ...connectors.filter(reportsStatus).map((c) => c.statusShape.fields));
}

export function redactAll(text: string, secrets: string[]): string {
  return secrets.reduce((out, value) => out.split(value).join('[redacted]'), text);
}

/** Every string inside a secrets object (passwords, keys, connection strings). */
export function secretValues(value: unknown): string[] {
  if (typeof value === 'string') return value.length >= 4 ? [value] : [];
  if (value && typeof value === 'object') return Object.values(value).flatMap(secretValues);
  return [];
}
