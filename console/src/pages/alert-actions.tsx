import { useState } from 'preact/hooks';
import { type Alert, alertBody, isSilenced, v2 } from '../alerts-model.js';
import { api, type Session } from '../api.js';
import { ConfirmDialog } from '../components/confirm.js';
import { ErrorNote } from '../components/table.js';
import { navigate } from '../router.js';

const SILENCE_FOR = [
  ['1 hour', 3_600_000],
  ['1 day', 86_400_000],
  ['1 week', 7 * 86_400_000],
] as const;

/**
 * What a user of the team may do to an alert (every user of the team may: /api/v2 has no roles):
 * edit it, silence it for a while or end its silence (a PUT of the alert as it is with only
 * `silenced` changed), and delete it after a confirmation.
 */
export function AlertActions(props: { alert: Alert; onEdit: () => void; onChanged: () => void }) {
  const { alert } = props;
  const [error, setError] = useState<Error | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const [silenceFor, setSilenceFor] = useState<number>(SILENCE_FOR[0][1]);
  const [confirming, setConfirming] = useState(false);
  const run = async (action: () => Promise<unknown>) => {
    setError(undefined);
    setBusy(true);
    try {
      await action();
    } catch (failure) {
      setError(failure as Error);
    } finally {
      setBusy(false);
    }
  };
  const silence = (until: string | null) =>
    run(async () => {
      await api.put(v2.alert(alert.id), alertBody(alert, { silenced: until ? { until } : null }));
      props.onChanged();
    });
  const remove = () =>
    run(async () => {
      setConfirming(false);
      await api.delete(v2.alert(alert.id));
      navigate('a', 'alerts');
    });
  return (
    <div class="alert-actions">
      <button type="button" onClick={props.onEdit} disabled={busy}>
        Edit
      </button>
      {isSilenced(alert) ? (
        <button type="button" onClick={() => silence(null)} disabled={busy}>
          Unsilence
        </button>
      ) : (
        <span class="silence">
          <label>
            Silence for{' '}
            <select value={silenceFor} onChange={(e) => setSilenceFor(Number(e.currentTarget.value))}>
              {SILENCE_FOR.map(([label, ms]) => (
                <option key={ms} value={ms}>
                  {label}
                </option>
              ))}
            </select>
          </label>{' '}
          <button
            type="button"
            onClick={() => silence(new Date(Date.now() + silenceFor).toISOString())}
            disabled={busy}
          >
            Silence
          </button>
        </span>
      )}
      <button type="button" class="danger" onClick={() => setConfirming(true)} disabled={busy}>
        Delete
      </button>
      {confirming && (
        <ConfirmDialog
          label="Delete alert"
          confirm="Delete alert"
          onConfirm={remove}
          onCancel={() => setConfirming(false)}
        >
          <p>
            Delete alert <strong>{alert.name ?? alert.id}</strong>? Its history goes with it; the webhook it
            notifies is kept.
          </p>
        </ConfirmDialog>
      )}
      <ErrorNote error={error} />
    </div>
  );
}

/** "Silenced until <time> by <user>", while the alert is silenced. */
export function SilencedNote(props: { alert: Alert; session: Session }) {
  const { alert, session } = props;
  if (!isSilenced(alert) || !alert.silenced) return null;
  const by = alert.silenced.by;
  const who =
    by === undefined
      ? ''
      : by === session.alerts?.userId
        ? ` by ${session.alerts.userName} (you)`
        : ` by the user ${by}`;
  return (
    <p class="silenced-note" role="status">
      Silenced until {new Date(alert.silenced.until).toLocaleString()}
      {who}: it is still evaluated, and notifies no one.
    </p>
  );
}
