import { useState } from 'preact/hooks';
import { api, mayChange, type Session } from '../api.js';
import { TimeChart } from '../components/chart.js';
import { ConfirmDialog } from '../components/confirm.js';
import { DataTable, ErrorNote } from '../components/table.js';
import { bytes, count, rate, when } from '../format.js';
import { type Pipe, type PipeStatus, paths, type QueryResult, type Service, sourceKind } from '../model.js';
import { usePolled } from '../poll.js';
import { navigate } from '../router.js';
import { ident, uuidLiteral } from '../sql.js';
import { PipeConfig, StateHistory } from './pipe-config.js';
import { StateBadge } from './pipes.js';

/** One pipe: its state and numbers, throughput and lag over an hour or a day, progress, bad records, actions. */
export function PipePage(props: { session: Session; service: Service; pipeId: string }) {
  const { session, service, pipeId } = props;
  const org = session.key.organizationId;
  const base = paths.pipe(org, service.id, pipeId);
  const pipe = usePolled(() => api.get<Pipe>(base), 10_000, [base]);
  const status = usePolled(() => api.get<PipeStatus>(`${base}/status`), 2000, [base]);
  if (pipe.error && !pipe.value) return <ErrorNote error={pipe.error} />;
  if (!pipe.value) return <p class="muted">Loading…</p>;
  const s = status.value;
  const reload = () => {
    pipe.refresh();
    status.refresh();
  };
  return (
    <section>
      <div class="title-row">
        <h1>{pipe.value.name}</h1>
        <StateBadge state={s?.state ?? pipe.value.state} />
        {mayChange(session.key.role) && (
          <Actions
            base={base}
            pipe={pipe.value}
            state={s?.state ?? pipe.value.state}
            after={reload}
            service={service}
          />
        )}
      </div>
      <p class="muted">
        {sourceKind(pipe.value)} → {pipe.value.destination.database ?? 'default'}.
        {pipe.value.destination.table} · created {when(pipe.value.createdAt)}
      </p>
      {s?.reason && <p class="reason">{s.reason}</p>}
      <dl class="numbers">
        <Figure label="Rows written" value={count(s?.rowsWritten)} />
        <Figure label="Bytes written" value={bytes(s?.bytesWritten)} />
        <Figure label="Rows/s" value={rate(s?.rowsPerSecond)} />
        <Figure label="Bad records" value={count(s?.badRecords)} />
        {s?.filesDone !== undefined && <Figure label="Files done" value={count(s.filesDone)} />}
        {s?.filesPending !== undefined && <Figure label="Files pending" value={count(s.filesPending)} />}
        <Figure label="Last insert" value={when(s?.lastInsertAt)} />
      </dl>
      {s?.lastError && (
        <p class="error" role="alert">
          <strong>{s.lastErrorCode}</strong> {s.lastError} <span class="muted">({when(s.lastErrorAt)})</span>
        </p>
      )}
      <History status={s} session={session} service={service} pipeId={pipeId} />
      {s?.partitions && <Progress title="Partitions" rows={s.partitions} />}
      {s?.shards && <Progress title="Shards" rows={s.shards} />}
      {s?.tables && <Progress title="Tables" rows={s.tables} />}
      <StateHistory session={session} service={service} pipeId={pipeId} />
      <BadRecords session={session} service={service} pipe={pipe.value} />
      {mayChange(session.key.role) && (
        <PipeConfig base={base} scaling={pipe.value.scaling ?? {}} after={reload} />
      )}
    </section>
  );
}

function Figure(props: { label: string; value: string }) {
  return (
    <div>
      <dt>{props.label}</dt>
      <dd>{props.value}</dd>
    </div>
  );
}

function Progress(props: { title: string; rows: Record<string, unknown>[] }) {
  return (
    <>
      <h2>{props.title}</h2>
      <DataTable rows={props.rows} />
    </>
  );
}

/** The last hour from the status; the last day read from the pipe's history table in its service. */
function History(props: {
  status: PipeStatus | undefined;
  session: Session;
  service: Service;
  pipeId: string;
}) {
  const [range, setRange] = useState<'hour' | 'day'>('hour');
  const org = props.session.key.organizationId;
  const day = usePolled(
    () =>
      range === 'day'
        ? api.post<QueryResult>(paths.query(org, props.service.id), { sql: daySql(props.pipeId) })
        : Promise.resolve(undefined),
    60_000,
    [range, props.pipeId],
  );
  const minutes =
    range === 'hour'
      ? (props.status?.lastHour ?? []).map((m) => ({
          t: Date.parse(m.minute) / 1000,
          rps: m.rowsPerSecond,
          lag: m.lag,
        }))
      : (day.value?.rows ?? []).map((r) => ({
          t: Number(r.t),
          rps: Number(r.rps),
          lag: r.lag === null ? null : Number(r.lag),
        }));
  const times = minutes.map((m) => m.t);
  return (
    <>
      <div class="title-row">
        <h2>Throughput</h2>
        <fieldset class="segmented" aria-label="Time range">
          <button type="button" class={range === 'hour' ? 'active' : ''} onClick={() => setRange('hour')}>
            Last hour
          </button>
          <button type="button" class={range === 'day' ? 'active' : ''} onClick={() => setRange('day')}>
            Last day
          </button>
        </fieldset>
      </div>
      <ErrorNote error={range === 'day' ? day.error : undefined} />
      <div class="charts">
        <TimeChart
          title="Rows per second"
          times={times}
          series={[{ label: 'rows/s', values: minutes.map((m) => m.rps) }]}
        />
        <TimeChart title="Lag" times={times} series={[{ label: 'lag', values: minutes.map((m) => m.lag) }]} />
      </div>
    </>
  );
}

/** Five-minute steps over the last day of the pipe's history (README, "Pipe history"). */
function daySql(pipeId: string): string {
  return `SELECT toUnixTimestamp(toStartOfFiveMinutes(at)) AS t, sum(rows) / 300 AS rps, max(lag) AS lag
FROM _sluice_history.pipe_events
WHERE pipe_id = ${uuidLiteral(pipeId)} AND at > now() - INTERVAL 1 DAY
GROUP BY t ORDER BY t`;
}

const PAGE = 20;

/** The pipe's rows in `<table>_pipes_error`, newest first, a page at a time. */
function BadRecords(props: { session: Session; service: Service; pipe: Pipe }) {
  const [page, setPage] = useState(0);
  const org = props.session.key.organizationId;
  const { destination, id } = props.pipe;
  const table = `${ident(destination.database ?? 'default')}.${ident(`${destination.table}_pipes_error`)}`;
  const rows = usePolled(
    () =>
      api.post<QueryResult>(paths.query(org, props.service.id), {
        sql: `SELECT time, source, row, error, raw FROM ${table} WHERE pipe_id = ${uuidLiteral(id)} ORDER BY time DESC, row LIMIT ${PAGE + 1} OFFSET ${page * PAGE}`,
      }),
    10_000,
    [table, id, page],
  );
  const missing = rows.error && /UNKNOWN_TABLE|does not exist/i.test(rows.error.message);
  const shown = (rows.value?.rows ?? []).slice(0, PAGE);
  return (
    <>
      <h2>Bad records</h2>
      {missing ? <p class="muted">No bad records.</p> : <ErrorNote error={rows.error} />}
      {rows.value && (
        <DataTable rows={shown} columns={['time', 'source', 'row', 'error', 'raw']} empty="No bad records." />
      )}
      {(page > 0 || (rows.value?.rows.length ?? 0) > PAGE) && (
        <div class="pager">
          <button type="button" disabled={page === 0} onClick={() => setPage(page - 1)}>
            Newer
          </button>
          <span>Page {page + 1}</span>
          <button
            type="button"
            disabled={(rows.value?.rows.length ?? 0) <= PAGE}
            onClick={() => setPage(page + 1)}
          >
            Older
          </button>
        </div>
      )}
    </>
  );
}

function Actions(props: { base: string; pipe: Pipe; state: string; after: () => void; service: Service }) {
  const [error, setError] = useState<Error | undefined>(undefined);
  const [confirming, setConfirming] = useState(false);
  const command = async (name: 'stop' | 'start' | 'resync') => {
    setError(undefined);
    await api.patch(`${props.base}/state`, { command: name }).then(props.after, setError);
  };
  const remove = async () => {
    setError(undefined);
    try {
      await api.delete(props.base);
      navigate('s', props.service.id, 'pipes');
    } catch (failure) {
      setError(failure as Error);
      setConfirming(false);
    }
  };
  // As the API allows (README, "Pipe states"): start from Stopped or Failed, stop from any other.
  const startable = props.state === 'Stopped' || props.state === 'Failed';
  return (
    <div class="actions">
      {startable && (
        <button type="button" onClick={() => command('start')}>
          Start
        </button>
      )}
      {props.state !== 'Stopped' && props.state !== 'Stopping' && (
        <button type="button" onClick={() => command('stop')}>
          Stop
        </button>
      )}
      {sourceKind(props.pipe) === 'postgres' && (
        <button type="button" onClick={() => command('resync')}>
          Resync
        </button>
      )}
      <button type="button" class="danger" onClick={() => setConfirming(true)}>
        Delete
      </button>
      {confirming && (
        <ConfirmDialog
          label="Delete pipe"
          confirm="Delete pipe"
          onConfirm={remove}
          onCancel={() => setConfirming(false)}
        >
          <p>
            Delete pipe <strong>{props.pipe.name}</strong>? It stops reading; its table and rows stay.
          </p>
        </ConfirmDialog>
      )}
      <ErrorNote error={error} />
    </div>
  );
}
