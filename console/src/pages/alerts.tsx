import { type Alert, type HistoryRow, isSilenced, v2 } from '../alerts-model.js';
import { api } from '../api.js';
import { ErrorNote } from '../components/table.js';
import { when } from '../format.js';
import { usePolled } from '../poll.js';
import { href } from '../router.js';

/** The team's alerts with their state, whether silenced, and when the state last changed. */
export function AlertsPage() {
  const alerts = usePolled(() => api.get<Alert[]>(v2.alerts), 5000, []);
  const ids = (alerts.value ?? []).map((a) => `${a.id}:${a.state}`).join(',');
  const changes = usePolled(
    async () => {
      const entries = await Promise.all(
        (alerts.value ?? []).map((a) =>
          api
            .get<HistoryRow[]>(v2.history(a.id))
            .then((rows) => [a.id, lastChange(rows, a.state)] as const)
            .catch(() => [a.id, undefined] as const),
        ),
      );
      return new Map(entries);
    },
    15_000,
    [ids],
  );
  return (
    <section>
      <div class="title-row">
        <h1>Alerts</h1>
        <a href={href('a', 'dashboards')} class="actions">
          New alerts are made on a dashboard's tile
        </a>
      </div>
      <ErrorNote error={alerts.error} />
      {alerts.value?.length === 0 && <p class="muted">No alerts yet.</p>}
      {alerts.value && alerts.value.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th>Name</th>
                <th>State</th>
                <th>Condition</th>
                <th>Last change</th>
              </tr>
            </thead>
            <tbody>
              {alerts.value.map((alert) => (
                <tr key={alert.id} data-alert={alert.name ?? alert.id}>
                  <td>
                    <a href={href('a', 'alerts', alert.id)}>{alert.name ?? alert.id}</a>
                  </td>
                  <td>
                    <AlertState alert={alert} />
                  </td>
                  <td>{condition(alert)}</td>
                  <td>{changes.value?.has(alert.id) ? describeChange(changes.value.get(alert.id)) : '…'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

export function AlertState(props: { alert: Alert }) {
  const { alert } = props;
  return (
    <>
      <span class={`state alert-${alert.state.toLowerCase()}`}>{alert.state}</span>
      {isSilenced(alert) && (
        <span
          class="state silenced"
          title={`until ${new Date(alert.silenced?.until ?? '').toLocaleString()}`}
        >
          silenced
        </span>
      )}
    </>
  );
}

export function condition(alert: Alert): string {
  const max = alert.thresholdMax === undefined ? '' : `..${alert.thresholdMax}`;
  return `${alert.thresholdType.replace(/_/g, ' ')} ${alert.threshold}${max} per ${alert.interval}`;
}

/**
 * When the alert entered its present state, from its history (newest window first): the start of
 * the oldest window of the newest run in that state; windows that failed are passed over. Null
 * when no window was evaluated yet; `since` false when the whole history read is in that state.
 */
export function lastChange(rows: HistoryRow[], state: string): { at: string; since: boolean } | null {
  const windows = new Map<string, string>();
  for (const row of rows) {
    if (row.state === null) continue;
    const seen = windows.get(row.windowStart);
    // A window is ALERT when any group of it is.
    windows.set(row.windowStart, seen === 'ALERT' ? seen : row.state);
  }
  let at: string | null = null;
  for (const [start, windowState] of windows) {
    if (windowState !== state) return at === null ? null : { at, since: true };
    at = start;
  }
  return at === null ? null : { at, since: false };
}

function describeChange(change: { at: string; since: boolean } | null | undefined): string {
  if (change === undefined) return '–';
  if (change === null) return 'not evaluated yet';
  return change.since ? when(change.at) : `before ${when(change.at)}`;
}
