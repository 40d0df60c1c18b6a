import { useState } from 'preact/hooks';
import { api, type Session } from '../api.js';
import { DataTable, ErrorNote } from '../components/table.js';
import { paths, type QueryResult, type Service } from '../model.js';

/**
 * One statement against the service, as `POST .../query` runs it: the server enforces the key's
 * role (a read-only key reads only) and the time and size limits.
 */
export function QueryPage(props: { session: Session; service: Service }) {
  const [sql, setSql] = useState('SHOW TABLES');
  const [result, setResult] = useState<QueryResult | undefined>(undefined);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const [tookMs, setTookMs] = useState(0);
  const run = async (event?: Event) => {
    event?.preventDefault();
    setBusy(true);
    setError(undefined);
    const started = performance.now();
    try {
      setResult(
        await api.post<QueryResult>(paths.query(props.session.key.organizationId, props.service.id), { sql }),
      );
    } catch (failure) {
      setResult(undefined);
      setError(failure as Error);
    } finally {
      setTookMs(performance.now() - started);
      setBusy(false);
    }
  };
  return (
    <section>
      <h1>Query</h1>
      <form onSubmit={run} class="query">
        <textarea
          name="sql"
          aria-label="SQL"
          spellcheck={false}
          rows={8}
          value={sql}
          onInput={(e) => setSql(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) void run();
          }}
        />
        <div class="title-row">
          <button type="submit" disabled={busy}>
            {busy ? 'Running…' : 'Run'}
          </button>
          <span class="muted">
            Ctrl+Enter runs it. {result && `${result.rows.length} rows in ${Math.round(tookMs)} ms`}
          </span>
        </div>
      </form>
      <ErrorNote error={error} />
      {result && (
        <DataTable rows={result.rows} columns={result.columns.map((c) => c.name)} empty="No rows." />
      )}
    </section>
  );
}
