import { useState } from 'preact/hooks';
import { type Alert, INTERVALS, THRESHOLD_TYPES, type Tile, v2, type Webhook } from '../alerts-model.js';
import { api } from '../api.js';
import { Field, FormError } from '../components/field.js';
import { useSubmit } from '../components/submit.js';
import { usePolled } from '../poll.js';
import { href, navigate } from '../router.js';

const ALERT_PATHS = ['name', 'interval', 'thresholdType', 'threshold', 'thresholdMax', 'channel'];

/** An alert on a tile: checked every interval against a threshold, notifying a webhook. */
export function AlertForm(props: { dashboardId: string; tile: Tile; onCancel: () => void }) {
  const webhooks = usePolled(() => api.get<Webhook[]>(v2.webhooks), 0, []);
  const [name, setName] = useState(`${props.tile.name} alert`);
  const [interval, setAlertInterval] = useState('5m');
  const [thresholdType, setThresholdType] = useState('above');
  const [threshold, setThreshold] = useState('');
  const [thresholdMax, setThresholdMax] = useState('');
  const [webhookId, setWebhookId] = useState('');
  const ranged = thresholdType === 'between' || thresholdType === 'not_between';
  const chosenWebhook = webhookId || webhooks.value?.[0]?.id || '';
  const { submit, busy, error } = useSubmit(async () => {
    const created = await api.post<Alert>(v2.alerts, {
      name,
      interval,
      thresholdType,
      threshold: Number(threshold),
      ...(ranged ? { thresholdMax: Number(thresholdMax) } : {}),
      source: 'tile',
      dashboardId: props.dashboardId,
      tileId: props.tile.id,
      channel: { type: 'webhook', webhookId: chosenWebhook },
    });
    navigate('a', 'alerts', created.id);
  });
  if (webhooks.value?.length === 0) {
    return (
      <p class="reason">
        An alert notifies a webhook: <a href={href('a', 'webhooks')}>make a webhook</a> first.
      </p>
    );
  }
  return (
    <form class="card form-grid" onSubmit={submit} aria-label={`New alert on ${props.tile.name}`}>
      <h2>New alert on {props.tile.name}</h2>
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
      <div class="form-actions">
        <button type="submit" disabled={busy || !webhooks.value}>
          Create alert
        </button>
        <button type="button" onClick={props.onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
