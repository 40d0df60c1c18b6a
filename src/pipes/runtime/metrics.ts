import { Gauge, type Registry } from 'prom-client';
import type { Store } from '../../store/index.js';
import {
  reportsStatus,
  type SourceConnector,
  type SourceStatus,
  type SourceStatuses,
} from '../sources/index.js';

/**
 * Per-pipe progress as Prometheus gauges, read from the store at scrape time so every node reports
 * the same truth (the counters live in the store, not in a worker's memory). Labelled by pipe id
 * only: /metrics is unauthenticated, and pipe names are their organizations' business.
 */
export function registerPipeMetrics(
  registry: Registry,
  store: Store,
  /** The connectors of the kinds this Sluice runs: each kind's StatusShape makes its gauges. */
  connectors: readonly SourceConnector[],
  sources: () => [pipeId: string, status: SourceStatus][] = () => [],
  /** What the sources of the pipes that do not run said last (a stopped database pipe's slot). */
  idleSources: () => Promise<[pipeId: string, status: SourceStatus][]> = async () => [],
): void {
  registerSourceMetrics(registry, { running: sources, idle: idleSources }, connectors);
  const counters = [
    ['sluice_pipe_files_done', 'Files a pipe has ingested', 'filesDone'],
    ['sluice_pipe_files_pending', 'Files a pipe has found and not yet ingested', 'filesPending'],
    ['sluice_pipe_rows_written', 'Rows a pipe has written to its destination', 'rowsWritten'],
    ['sluice_pipe_bytes_written', 'Source bytes a pipe has ingested', 'bytesWritten'],
    ['sluice_pipe_bad_records', 'Records a pipe wrote to its error table', 'badRecords'],
  ] as const;
  const gauges = counters.map(
    ([name, help]) => new Gauge({ name, help, labelNames: ['pipe_id'], registers: [registry] }),
  );
  const state = new Gauge({
    name: 'sluice_pipe_state',
    help: 'A pipe is in this state (1)',
    labelNames: ['pipe_id', 'state'],
    registers: [registry],
  });
  // prom-client runs collect() of each metric at scrape time; one store read serves them all.
  let snapshot: Promise<Awaited<ReturnType<Store['repos']['progress']['all']>>> | undefined;
  const read = () => {
    snapshot ??= store.repos.progress.all().finally(() => setTimeout(() => (snapshot = undefined), 0));
    return snapshot;
  };
  gauges.forEach((gauge, i) => {
    const field = counters[i]?.[2] as (typeof counters)[number][2];
    Object.assign(gauge, {
      async collect() {
        gauge.reset();
        for (const pipe of await read()) gauge.set({ pipe_id: pipe.pipeId }, pipe[field]);
      },
    });
  });
  Object.assign(state, {
    async collect() {
      state.reset();
      for (const pipe of await read()) state.set({ pipe_id: pipe.pipeId, state: pipe.state }, 1);
    },
  });
  const cleanups = new Gauge({
    name: 'sluice_source_cleanups_pending',
    help: 'Deleted pipes whose cleanup has not finished: their source still holds what they made there (a replication slot), retried until given back',
    registers: [registry],
  });
  Object.assign(cleanups, {
    async collect() {
      cleanups.set(await store.repos.cleanups.pending());
    },
  });
}

/**
 * What each kind's sources report, as the gauges its StatusShape makes of it (a stream's lag, a
 * database pipe's slot), in the order of the connectors.
 */
export function registerSourceMetrics(
  registry: Registry,
  statuses: SourceStatuses,
  connectors: readonly SourceConnector[],
): void {
  for (const connector of connectors.filter(reportsStatus))
    connector.statusShape.registerMetrics(registry, statuses);
}
