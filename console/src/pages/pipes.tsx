import { useState } from 'preact/hooks';
import { api, mayChange, type Session } from '../api.js';
import { ErrorNote } from '../components/table.js';
import { count, rate } from '../format.js';
import { latestLag, type Pipe, type PipeStatus, paths, type Service, sourceKind } from '../model.js';
import { usePolled } from '../poll.js';
import { href } from '../router.js';

const PAGE = 50;

/**
 * A service's pipes, a page at a time, with each one's state, rows/s, lag, bad records and last
 * error, read again every few seconds.
 */
export function PipesPage(props: { session: Session; service: Service }) {
  const { session, service } = props;
  const org = session.key.organizationId;
  const [page, setPage] = useState(0);
  const [filter, setFilter] = useState('');
  const pipes = usePolled(() => api.get<Pipe[]>(paths.pipes(org, service.id)), 5000, [org, service.id]);
  const matching = (pipes.value ?? [])
    .filter((p) => !filter || p.name.toLowerCase().includes(filter.toLowerCase()))
    .sort((a, b) => a.name.localeCompare(b.name));
  const shown = matching.slice(page * PAGE, (page + 1) * PAGE);
  const ids = shown.map((p) => p.id).join(',');
  const statuses = usePolled(
    async () => {
      const entries = await Promise.all(
        shown.map((p) =>
          api
            .get<PipeStatus>(`${paths.pipe(org, service.id, p.id)}/status`)
            .then((s) => [p.id, s] as const)
            .catch(() => [p.id, undefined] as const),
        ),
      );
      return new Map(entries);
    },
    3000,
    [ids],
  );
  const pages = Math.max(1, Math.ceil(matching.length / PAGE));
  return (
    <section>
      <div class="title-row">
        <h1>Pipes</h1>
        {mayChange(session.key.role) && (
          <a class="button" href={href('s', service.id, 'pipes', 'new')}>
            New pipe
          </a>
        )}
        <input
          type="search"
          placeholder="Filter by name"
          aria-label="Filter pipes by name"
          value={filter}
          onInput={(e) => {
            setFilter(e.currentTarget.value);
            setPage(0);
          }}
        />
      </div>
      <ErrorNote error={pipes.error} />
      {pipes.value && matching.length === 0 && (
        <p class="muted">{filter ? 'No pipe matches.' : 'No pipes in this service yet.'}</p>
      )}
      {shown.length > 0 && (
        <div class="table-wrap">
          <table class="pipes">
            <thead>
              <tr>
                <th>Name</th>
                <th>Source</th>
                <th>State</th>
                <th class="num">Rows/s</th>
                <th class="num">Lag</th>
                <th class="num">Rows</th>
                <th class="num">Bad records</th>
                <th>Last error</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((pipe) => {
                const status = statuses.value?.get(pipe.id);
                return (
                  <tr key={pipe.id} data-pipe={pipe.name}>
                    <td>
                      <a href={href('s', service.id, 'pipes', pipe.id)}>{pipe.name}</a>
                    </td>
                    <td>{sourceKind(pipe)}</td>
                    <td>
                      <StateBadge state={status?.state ?? pipe.state} />
                    </td>
                    <td class="num">{rate(status?.rowsPerSecond)}</td>
                    <td class="num">{count(latestLag(status))}</td>
                    <td class="num">{count(status?.rowsWritten)}</td>
                    <td class="num">{count(status?.badRecords)}</td>
                    <td class="last-error" title={status?.lastError ?? ''}>
                      {status?.lastErrorCode ?? ''}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {pages > 1 && (
        <div class="pager">
          <button type="button" disabled={page === 0} onClick={() => setPage(page - 1)}>
            Previous
          </button>
          <span>
            Page {page + 1} of {pages} ({matching.length} pipes)
          </span>
          <button type="button" disabled={page + 1 >= pages} onClick={() => setPage(page + 1)}>
            Next
          </button>
        </div>
      )}
    </section>
  );
}

export function StateBadge(props: { state: string }) {
  return <span class={`state state-${props.state.toLowerCase()}`}>{props.state}</span>;
}
