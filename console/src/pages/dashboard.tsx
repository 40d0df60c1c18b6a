import { useState } from 'preact/hooks';
import { type AlertSource, type Dashboard, v2 } from '../alerts-model.js';
import { api } from '../api.js';
import { ErrorNote } from '../components/table.js';
import { RANGES, type RangeName, TileView } from '../components/tile-view.js';
import { usePolled } from '../poll.js';
import { href, navigate } from '../router.js';
import { AlertForm } from './alert-form.js';
import { DeleteDashboard, DeleteTile } from './dashboard-delete.js';
import { RenameForm, TileForm } from './dashboard-edit.js';

/** What is open on the page: a form on a tile, a new tile, or the dashboard's name. */
type Open = { form: 'alert' | 'edit'; tileId: string } | { form: 'add' | 'rename' } | undefined;

/**
 * A dashboard's tiles over a time range, each with a way to alert on it, edit it or delete it; a
 * new tile; the dashboard renamed or deleted. A team's users have no roles in the alerts area
 * (every one may change what the team has), so every session that reaches it is offered these,
 * as it is New dashboard and New alert.
 */
export function DashboardPage(props: { dashboardId: string }) {
  const dashboard = usePolled(() => api.get<Dashboard>(v2.dashboard(props.dashboardId)), 0, [
    props.dashboardId,
  ]);
  const sources = usePolled(() => api.get<AlertSource[]>(v2.sources), 0, []);
  const [range, setRange] = useState<RangeName>('1h');
  const [open, setOpen] = useState<Open>(undefined);
  const close = () => setOpen(undefined);
  const saved = () => {
    setOpen(undefined);
    dashboard.refresh();
  };
  const value = dashboard.value;
  const openOn = (form: 'alert' | 'edit', tileId: string) =>
    open && 'tileId' in open && open.form === form && open.tileId === tileId;
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
      {value && (
        <div class="dashboard-actions">
          <button type="button" class="link" onClick={() => setOpen({ form: 'rename' })}>
            Rename
          </button>
          {sources.value && (
            <button type="button" class="link" onClick={() => setOpen({ form: 'add' })}>
              Add tile
            </button>
          )}
          <DeleteDashboard dashboard={value} onDeleted={() => navigate('a', 'dashboards')} />
        </div>
      )}
      <ErrorNote error={dashboard.error ?? sources.error} />
      {value && open?.form === 'rename' && <RenameForm dashboard={value} onSaved={saved} onCancel={close} />}
      {value?.tiles.length === 0 && <p class="muted">This dashboard has no tiles.</p>}
      <div class="charts tiles">
        {value?.tiles.map((tile) => (
          <div key={tile.id} class="tile-box">
            <TileView dashboardId={value.id} tile={tile} range={range} />
            {openOn('alert', tile.id) && <AlertForm dashboardId={value.id} tile={tile} onCancel={close} />}
            {openOn('edit', tile.id) && sources.value && (
              <TileForm
                dashboard={value}
                sources={sources.value}
                tile={tile}
                onSaved={saved}
                onCancel={close}
              />
            )}
            {!openOn('alert', tile.id) && !openOn('edit', tile.id) && (
              <div class="tile-actions">
                <button
                  type="button"
                  class="link"
                  onClick={() => setOpen({ form: 'alert', tileId: tile.id })}
                >
                  New alert on {tile.name}
                </button>
                {sources.value && (
                  <button
                    type="button"
                    class="link"
                    aria-label={`Edit tile ${tile.name}`}
                    onClick={() => setOpen({ form: 'edit', tileId: tile.id })}
                  >
                    Edit tile
                  </button>
                )}
                <DeleteTile dashboard={value} tile={tile} onDeleted={saved} />
              </div>
            )}
          </div>
        ))}
      </div>
      {value && open?.form === 'add' && sources.value && (
        <TileForm dashboard={value} sources={sources.value} onSaved={saved} onCancel={close} />
      )}
    </section>
  );
}
