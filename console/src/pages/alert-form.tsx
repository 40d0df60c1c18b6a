import { useState } from 'preact/hooks';
import {
  type Alert,
  alertBody,
  INTERVALS,
  THRESHOLD_TYPES,
  type Tile,
  v2,
  type Webhook,
} from '../alerts-model.js';
import { api } from '../api.js';
import { Field, FormActions, FormError } from '../components/field.js';
import { useSubmit } from '../components/submit.js';
import { usePolled } from '../poll.js';
import { href, navigate } from '../router.js';

const ALERT_PATHS = ['name', 'interval', 'thresholdType', 'threshold', 'thresholdMax', 'channel'];

/**
 * An alert on a tile: checked every interval against a threshold, notifying a webhook. Without
 * `alert` it makes a new one; with it, it edits that one (a full replace that keeps what the form
 * does not show: its message, dashboard, tile and silence).
 */
export function AlertForm(props: {
  dashboardId: string;
  tile: Pick<Tile, 'id' | 'name'>;
  alert?: Alert;
  onCancel: () => void;
  onSaved?: () => void;
}) {
  const { alert } = props;
  const webhooks = usePolled(() => api.get<Webhook[]>(v2.webhooks), 0, []);
  const [name, setName] = useState(alert ? (alert.name ?? '') : `${props.tile.name} alert`);
  const [interval, setAlertInterval] = useState(alert?.interval ?? '5m');
  const [thresholdType, setThresholdType] = useState(alert?.thresholdType ?? 'above');
  const [threshold, setThreshold] = useState(alert ? String(alert.threshold) : '');
  const [thresholdMax, setThresholdMax] = useState(
    alert?.thresholdMax === undefined ? '' : String(alert.thresholdMax),
  );
  const [webhookId, setWebhookId] = useState(alert?.channel.webhookId ?? '');
  const ranged = thresholdType === 'between' || thresholdType === 'not_between';
  const chosenWebhook = webhookId || webhooks.value?.[0]?.id || '';
  const { submit, busy, error } = useSubmit(async () => {
    const fields = {
      name: name.trim() ? name : null,
      interval,
      thresholdType,
      threshold: Number(threshold),
      thresholdMax: ranged ? Number(thresholdMax) : undefined,
      channel: { type: 'webhook', webhookId: chosenWebhook },
    };
    if (alert) {
      await api.put<Alert>(v2.alert(alert.id), alertBody(alert, fields));
      props.onSaved?.();
      return;
    }
    const created = await api.post<Alert>(v2.alerts, {
      ...fields,
      source: 'tile',
      dashboardId: props.dashboardId,
      tileId: props.tile.id,
    });
    navigate('a', 'alerts', created.id);
  });
  const title = alert ? `Edit alert ${alert.name ?? alert.id}` : `New alert on ${props.tile.name}`;
  if (webhooks.value?.length === 0) {
    return (
      <p class="reason">
        An alert notifies a webhook: <a href={href('a', 'webhooks')}>make a webhook</a> first.
      </p>
    );
  }
  return (
    <form class="card form-grid" onSubmit={submit} aria-label={title}>
      <h2>{title}</h2>
      <FormError error={error} shownPaths={ALERT_PATHS} />
      <Field label="Alert name" path="name" error={error}>
        <input value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </Field>
      <Field label="Interval" path="interval" error={error}>
        <select value={interval} onChange={(e) => setAlertInterval(e.currentTarget.value)}>
          {INTERVALS.map((i) => (
            <option key={i} value={i}>
              {i}
            </option>
          ))}
        </select>
      </Field>
      <Field label="Threshold type" path="thresholdType" error={error}>
        <select value={thresholdType} onChange={(e) => setThresholdType(e.currentTarget.value)}>
          {THRESHOLD_TYPES.map((t) => (
            <option key={t} value={t}>
              {t.replace(/_/g, ' ')}
            </option>
          ))}
        </select>
      </Field>
      <Field label="Threshold" path="threshold" error={error}>
        <input
          value={threshold}
          inputMode="decimal"
          onInput={(e) => setThreshold(e.currentTarget.value)}
          required
        />
      </Field>
      {ranged && (
        <Field label="Threshold max" path="thresholdMax" error={error}>
          <input
            value={thresholdMax}
            inputMode="decimal"
            onInput={(e) => setThresholdMax(e.currentTarget.value)}
          />
        </Field>
      )}
      <Field label="Webhook" path="channel" error={error}>
        <select value={chosenWebhook} onChange={(e) => setWebhookId(e.currentTarget.value)}>
          {webhooks.value?.map((w) => (
            <option key={w.id} value={w.id}>
              {w.name}
            </option>
          ))}
        </select>
      </Field>
      <FormActions
        submit={alert ? 'Save alert' : 'Create alert'}
        busy={busy}
        disabled={!webhooks.value}
        onCancel={props.onCancel}
      />
    </form>
  );
}
