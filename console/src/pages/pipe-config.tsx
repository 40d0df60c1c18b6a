import { useState } from 'preact/hooks';
import { type ApiError, api, type Session } from '../api.js';
import { DataTable, ErrorNote } from '../components/table.js';
import { paths, type QueryResult, type Service } from '../model.js';
import { usePolled } from '../poll.js';
import { uuidLiteral } from '../sql.js';

/**
 * A pipe's scaling (`PATCH .../scaling`) and settings (`PUT .../settings`), edited as the API
 * takes them: the server checks the values and its messages show here.
 */
export function PipeConfig(props: { base: string; scaling: Record<string, unknown>; after: () => void }) {
  const settings = usePolled(() => api.get<Record<string, unknown>>(`${props.base}/settings`), 0, [
    props.base,
  ]);
  const [replicas, setReplicas] = useState(String(props.scaling.replicas ?? 1));
  const [text, setText] = useState<string | undefined>(undefined);
  const [error, setError] = useState<ApiError | Error | undefined>(undefined);
  const [saved, setSaved] = useState('');
  const shown = text ?? JSON.stringify(settings.value ?? {}, null, 2);
  const run = async (what: string, change: () => Promise<unknown>) => {
    setError(undefined);
    setSaved('');
    try {
      await change();
      setSaved(what);
      settings.refresh();
      props.after();
    } catch (failure) {
      setError(failure as Error);
    }
  };
  const saveSettings = () =>
    run('Settings saved.', async () => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(shown);
      } catch {
        throw new Error('the settings are not valid JSON');
      }
      await api.put(`${props.base}/settings`, parsed);
      setText(undefined);
    });
  return (
    <details class="pipe-config">
      <summary>Scaling and settings</summary>
      <div class="form-grid">
        <label>
          Replicas
          <input
            name="replicas"
            type="number"
            min={1}
            max={40}
            value={replicas}
            onInput={(e) => setReplicas(e.currentTarget.value)}
          />
        </label>
        <div class="form-actions">
          <button
            type="button"
            onClick={() =>
              run('Scaling saved.', () => api.patch(`${props.base}/scaling`, { replicas: Number(replicas) }))
            }
          >
            Save scaling
          </button>
        </div>
        <label>
          Settings (JSON, as PUT .../settings takes them)
          <textarea
            name="settings"
            rows={6}
            spellcheck={false}
            value={shown}
            onInput={(e) => setText(e.currentTarget.value)}
          />
        </label>
        <div class="form-actions">
          <button type="button" onClick={saveSettings}>
            Save settings
          </button>
        </div>
      </div>
      {saved && <p class="muted">{saved}</p>}
      <ErrorNote error={error} />
    </details>
  );
}

/** The pipe's state changes, newest first, from its history in its service (README, "Pipe history"). */
export function StateHistory(props: { session: Session; service: Service; pipeId: string }) {
  const rows = usePolled(
    () =>
      api.post<QueryResult>(paths.query(props.session.key.organizationId, props.service.id), {
        sql: `SELECT at, state, error_code FROM _sluice_history.pipe_events WHERE pipe_id = ${uuidLiteral(props.pipeId)} AND kind = 'state' ORDER BY at DESC LIMIT 20`,
      }),
    10_000,
    [props.pipeId],
  );
  const missing = rows.error && /UNKNOWN_TABLE|UNKNOWN_DATABASE|does not exist/i.test(rows.error.message);
  return (
    <>
      <h2>State history</h2>
      {missing ? <p class="muted">No state changes recorded yet.</p> : <ErrorNote error={rows.error} />}
      {rows.value && (
        <DataTable
          rows={rows.value.rows}
          columns={['at', 'state', 'error_code']}
          empty="No state changes recorded yet."
        />
      )}
    </>
  );
}
