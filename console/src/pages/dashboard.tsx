import { useState } from 'preact/hooks';
import { type Dashboard, v2 } from '../alerts-model.js';
import { api } from '../api.js';
import { ErrorNote } from '../components/table.js';
import { RANGES, type RangeName, TileView } from '../components/tile-view.js';
import { usePolled } from '../poll.js';
import { href } from '../router.js';
import { AlertForm } from './alert-form.js';

/** A dashboard's tiles over a time range, each with a way to alert on it. */
export function DashboardPage(props: { dashboardId: string }) {
  const dashboard = usePolled(() => api.get<Dashboard>(v2.dashboard(props.dashboardId)), 0, [
    props.dashboardId,
  ]);
  const [range, setRange] = useState<RangeName>('1h');
  const [alerting, setAlerting] = useState<string | undefined>(undefined);
  const value = dashboard.value;
  return (
    <section>
      <p>
        <a href={href('a', 'dashboards')}>Dashboards</a>
      </p>
      <div class="title-row">
        <h1>{value?.name ?? 'Dashboard'}</h1>
        <fieldset class="segmented actions" aria-label="Time range">
          {(Object.keys(RANGES) as RangeName[]).map((name) => (
            <button
              key={name}
              type="button"
              class={range === name ? 'active' : ''}
              aria-pressed={range === name}
              onClick={() => setRange(name)}
            >
              Last {name}
            </button>
          ))}
        </fieldset>
      </div>
      <ErrorNote error={dashboard.error} />
      {value?.tiles.length === 0 && <p class="muted">This dashboard has no tiles.</p>}
      <div class="charts tiles">
        {value?.tiles.map((tile) => (
          <div key={tile.id} class="tile-box">
            <TileView dashboardId={value.id} tile={tile} range={range} />
            {alerting === tile.id ? (
              <AlertForm dashboardId={value.id} tile={tile} onCancel={() => setAlerting(undefined)} />
            ) : (
              <button type="button" class="link" onClick={() => setAlerting(tile.id)}>
                New alert on {tile.name}
              </button>
            )}
          </div>
        ))}
      </div>
    </section>
  );
}
