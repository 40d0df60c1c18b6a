import { useState } from 'preact/hooks';
import { type Alert, v2, type Webhook } from '../alerts-model.js';
import { api } from '../api.js';
import { ConfirmDialog } from '../components/confirm.js';
import { useSubmit } from '../components/submit.js';
import { ErrorNote } from '../components/table.js';
import { usePolled } from '../poll.js';
import { WebhookForm } from './webhook-form.js';

interface TestResult {
  ok: boolean;
  status?: number;
  error?: string;
}

/**
 * The team's webhooks, a test send, an edit and a delete for each (every user of the team may:
 * /api/v2 has no roles), and a form for a new one.
 */
export function WebhooksPage() {
  const webhooks = usePolled(() => api.get<Webhook[]>(v2.webhooks), 0, []);
  // Which alerts notify each webhook, for what deleting it would do.
  const alerts = usePolled(() => api.get<Alert[]>(v2.alerts), 0, []);
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<Webhook | undefined>(undefined);
  const changed = () => {
    webhooks.refresh();
    alerts.refresh();
  };
  return (
    <section>
      <div class="title-row">
        <h1>Webhooks</h1>
        {!creating && !editing && (
          <button type="button" onClick={() => setCreating(true)}>
            New webhook
          </button>
        )}
      </div>
      <ErrorNote error={webhooks.error} />
      {webhooks.value?.length === 0 && <p class="muted">No webhooks yet: alerts notify webhooks.</p>}
      {webhooks.value && webhooks.value.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th>Name</th>
                <th>URL</th>
                <th>Test</th>
                <th>Actions</th>
              </tr>
            </thead>
            <tbody>
              {webhooks.value.map((webhook) => (
                <WebhookRow
                  key={webhook.id}
                  webhook={webhook}
                  notifiedBy={alerts.value?.filter((a) => a.channel.webhookId === webhook.id)}
                  onEdit={() => {
                    setCreating(false);
                    setEditing(webhook);
                  }}
                  onDeleted={changed}
                />
              ))}
            </tbody>
          </table>
        </div>
      )}
      {(creating || editing) && (
        <WebhookForm
          key={editing?.id ?? 'new'}
          webhook={editing}
          onDone={() => {
            setCreating(false);
            setEditing(undefined);
            changed();
          }}
        />
      )}
    </section>
  );
}

function WebhookRow(props: {
  webhook: Webhook;
  notifiedBy: Alert[] | undefined;
  onEdit: () => void;
  onDeleted: () => void;
}) {
  const { webhook } = props;
  const [result, setResult] = useState<TestResult | undefined>(undefined);
  const [confirming, setConfirming] = useState(false);
  const {
    submit: test,
    busy,
    error: failure,
  } = useSubmit(async () => {
    setResult(undefined);
    setResult(await api.post<TestResult>(v2.webhookTest(webhook.id)));
  });
  const {
    submit: remove,
    busy: removing,
    error: refused,
  } = useSubmit(async () => {
    setConfirming(false);
    await api.delete(v2.webhook(webhook.id));
    props.onDeleted();
  });
  return (
    <tr data-webhook={webhook.name}>
      <td>{webhook.name}</td>
      <td>{webhook.url}</td>
      <td>
        <button type="button" onClick={test} disabled={busy}>
          {busy ? 'Sending…' : 'Send test'}
        </button>{' '}
        {result && (
          <output class={result.ok ? 'test-ok' : 'error'}>
            {result.ok ? `Delivered (${result.status})` : `Not delivered: ${result.error}`}
          </output>
        )}
        <ErrorNote error={failure} />
      </td>
      <td>
        <button type="button" onClick={props.onEdit}>
          Edit
        </button>{' '}
        <button type="button" class="danger" onClick={() => setConfirming(true)} disabled={removing}>
          Delete
        </button>
        {confirming && (
          <ConfirmDialog
            label="Delete webhook"
            confirm="Delete webhook"
            onConfirm={() => void remove()}
            onCancel={() => setConfirming(false)}
          >
            <p>
              Delete webhook <strong>{webhook.name}</strong>? <InUse alerts={props.notifiedBy} />
            </p>
          </ConfirmDialog>
        )}
        <ErrorNote error={refused} />
      </td>
    </tr>
  );
}

/** What the server does with a webhook alerts notify: it refuses to delete it (a 409). */
function InUse(props: { alerts: Alert[] | undefined }) {
  const alerts = props.alerts;
  const rule =
    'Sluice does not delete a webhook that alerts notify: point them at another webhook, or delete them, first.';
  if (alerts === undefined) return <>{rule}</>;
  if (alerts.length === 0) return <>No alert notifies it.</>;
  const names = alerts.map((a) => a.name ?? a.id).join(', ');
  return (
    <>
      {alerts.length === 1 ? 'The alert' : `${alerts.length} alerts`} <strong>{names}</strong>{' '}
      {alerts.length === 1 ? 'notifies' : 'notify'} it. {rule}
    </>
  );
}
