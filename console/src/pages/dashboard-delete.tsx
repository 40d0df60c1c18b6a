import { useState } from 'preact/hooks';
import { type Alert, type Dashboard, type Tile, v2 } from '../alerts-model.js';
import { api } from '../api.js';
import { ConfirmDialog } from '../components/confirm.js';
import { useSubmit } from '../components/submit.js';
import { ErrorNote } from '../components/table.js';
import { save } from './dashboard-edit.js';

export function DeleteTile(props: { dashboard: Dashboard; tile: Tile; onDeleted: () => void }) {
  const { dashboard, tile } = props;
  return (
    <DeleteAsking
      label="Delete tile"
      name={tile.name}
      alertsOn="it"
      isGoing={(a) => a.dashboard === dashboard.id && a.tileId === tile.id}
      remove={() =>
        save(
          dashboard,
          dashboard.name,
          dashboard.tiles.filter((t) => t.id !== tile.id),
        )
      }
      onDeleted={props.onDeleted}
    />
  );
}

export function DeleteDashboard(props: { dashboard: Dashboard; onDeleted: () => void }) {
  const { dashboard } = props;
  return (
    <DeleteAsking
      label="Delete dashboard"
      name={dashboard.name}
      alertsOn="its tiles"
      isGoing={(a) => a.dashboard === dashboard.id}
      remove={() => api.delete(v2.dashboard(dashboard.id))}
      onDeleted={props.onDeleted}
    />
  );
}

/** A delete that asks first, saying how many of the team's alerts go with what it deletes. */
function DeleteAsking(props: {
  label: string;
  name: string;
  alertsOn: string;
  isGoing: (alert: Alert) => boolean;
  remove: () => Promise<unknown>;
  onDeleted: () => void;
}) {
  const [going, setGoing] = useState<number | undefined>(undefined);
  const counting = useSubmit(async () => setGoing((await teamAlerts()).filter(props.isGoing).length));
  const removing = useSubmit(async () => {
    await props.remove();
    setGoing(undefined);
    props.onDeleted();
  });
  return (
    <>
      <button
        type="button"
        class="link danger"
        aria-label={`${props.label} ${props.name}`}
        disabled={counting.busy}
        onClick={() => counting.submit()}
      >
        {props.label}
      </button>
      <ErrorNote error={counting.error} />
      {going !== undefined && (
        <ConfirmDialog
          label={props.label}
          confirm={props.label}
          onConfirm={() => removing.submit()}
          onCancel={() => setGoing(undefined)}
        >
          <p>
            {props.label} <strong>{props.name}</strong>?{' '}
            {going === 0
              ? `No alert is on ${props.alertsOn}.`
              : `The ${going} alert${going === 1 ? '' : 's'} on ${props.alertsOn} ${going === 1 ? 'is' : 'are'} deleted with it.`}
          </p>
          <ErrorNote error={removing.error} />
        </ConfirmDialog>
      )}
    </>
  );
}

/** Every alert of the team, a page of 1,000 (the API's most) at a time. */
async function teamAlerts(): Promise<Alert[]> {
  const all: Alert[] = [];
  for (;;) {
    const page = await api.get<Alert[]>(`${v2.alerts}?limit=1000&offset=${all.length}`);
    all.push(...page);
    if (page.length < 1000) return all;
  }
}
