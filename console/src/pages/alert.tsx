import { useState } from 'preact/hooks';
import { type Alert, type Dashboard, type HistoryRow, v2 } from '../alerts-model.js';
import { api, type Session } from '../api.js';
import { DataTable, ErrorNote } from '../components/table.js';
import { rate, when } from '../format.js';
import { usePolled } from '../poll.js';
import { href } from '../router.js';
import { AlertActions, SilencedNote } from './alert-actions.js';
import { AlertForm } from './alert-form.js';
import { AlertState, condition } from './alerts.js';

/**
 * One alert: its condition, its actions (edit, silence, delete), and its evaluations as a timeline
 * and a table (newest first).
 */
export function AlertPage(props: { alertId: string; session: Session }) {
  const alert = usePolled(() => api.get<Alert>(v2.alert(props.alertId)), 5000, [props.alertId]);
  const history = usePolled(() => api.get<HistoryRow[]>(v2.history(props.alertId)), 5000, [props.alertId]);
  const value = alert.value;
  // The tile's name, for the page and the form; the alert reads well without it.
  const dashboard = usePolled(
    async () => (value ? api.get<Dashboard>(v2.dashboard(value.dashboard)) : undefined),
    0,
    [value?.dashboard],
  );
  const tile = dashboard.value?.tiles.find((t) => t.id === value?.tileId);
  const [editing, setEditing] = useState(false);
  return (
    <section>
      <p>
        <a href={href('a', 'alerts')}>Alerts</a>
      </p>
      <div class="title-row">
        <h1>{value?.name ?? 'Alert'}</h1>
        {value && <AlertState alert={value} />}
      </div>
      <ErrorNote error={alert.error ?? history.error} />
      {value && (
        <p>
          {condition(value)} · on{' '}
          <a href={href('a', 'dashboards', value.dashboard)}>
            {tile && dashboard.value ? `${tile.name} of ${dashboard.value.name}` : "its dashboard's tile"}
          </a>{' '}
          · notifies <a href={href('a', 'webhooks')}>a webhook</a>
        </p>
      )}
      {value && <SilencedNote alert={value} session={props.session} />}
      {value && !editing && (
        <AlertActions alert={value} onEdit={() => setEditing(true)} onChanged={alert.refresh} />
      )}
      {value && editing && (
        <AlertForm
          dashboardId={value.dashboard}
          tile={{ id: value.tileId, name: tile?.name ?? 'its tile' }}
          alert={value}
          onCancel={() => setEditing(false)}
          onSaved={() => {
            setEditing(false);
            alert.refresh();
          }}
        />
      )}
      <h2>History</h2>
      {history.value?.length === 0 && (
        <p class="muted">Not evaluated yet: the first window is evaluated once it ends.</p>
      )}
      {history.value && history.value.length > 0 && <Timeline rows={history.value} />}
      {history.value && history.value.length > 0 && (
        <DataTable
          rows={history.value.map((row) => ({
            window: `${when(row.windowStart)} – ${new Date(row.windowEnd).toLocaleTimeString()}`,
            group: row.group ?? '',
            state: row.state ?? 'error',
            'value vs threshold': row.value === null ? '–' : `${rate(row.value)} vs ${rate(row.threshold)}`,
            error: row.error
              ? `${row.errorCode ?? ''} ${row.error}${row.attempts > 1 ? ` (${row.attempts} tries)` : ''}`
              : '',
          }))}
        />
      )}
    </section>
  );
}

/**
 * The windows oldest to newest, one block each, colored by state (a window is ALERT when any
 * group is; a failed evaluation is its own color), with its value against the threshold on hover.
 */
function Timeline(props: { rows: HistoryRow[] }) {
  const windows = new Map<string, HistoryRow[]>();
  for (const row of [...props.rows].reverse()) {
    windows.set(row.windowStart, [...(windows.get(row.windowStart) ?? []), row]);
  }
  return (
    <ol class="timeline" aria-label="Alert history timeline">
      {[...windows.entries()].map(([start, rows]) => {
        const state = rows.some((r) => r.state === 'ALERT')
          ? 'alert'
          : rows.every((r) => r.state === null)
            ? 'error'
            : 'ok';
        const detail = rows
          .map((r) =>
            r.state === null
              ? `error: ${r.error}`
              : `${r.group ? `${r.group}: ` : ''}${rate(r.value)} vs ${rate(r.threshold)} (${r.state})`,
          )
          .join('\n');
        return (
          <li
            key={start}
            class={`window window-${state}`}
            data-state={state}
            title={`${when(start)}\n${detail}`}
          >
            <span class="sr-only">
              {new Date(start).toLocaleTimeString()} {state}
            </span>
          </li>
        );
      })}
    </ol>
  );
}
