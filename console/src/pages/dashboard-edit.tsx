import { useState } from 'preact/hooks';
import { type AlertSource, type Dashboard, type Tile, v2 } from '../alerts-model.js';
import { api } from '../api.js';
import { Field, FormActions, FormError } from '../components/field.js';
import { useSubmit } from '../components/submit.js';
import { draftOf, tileBelow, tileBody } from '../tile-draft.js';
import { TileFields, tilePaths } from './tile-form.js';

/**
 * A dashboard saved whole (PUT is a full replace): its tags as they are, and the tiles given. A
 * tile left as the GET answered it is sent as it came (id, place, config or series), so the
 * server keeps it as it was; a tile left out is deleted with its alerts.
 */
export function save(dashboard: Dashboard, name: string, tiles: unknown[]) {
  return api.put<Dashboard>(v2.dashboard(dashboard.id), { name, tags: dashboard.tags, tiles });
}

/** A tile of the dashboard edited in place (`tile`), or a new one placed below the others. */
export function TileForm(props: {
  dashboard: Dashboard;
  sources: AlertSource[];
  tile?: Tile;
  onSaved: () => void;
  onCancel: () => void;
}) {
  const { dashboard, tile } = props;
  const index = tile ? dashboard.tiles.findIndex((t) => t.id === tile.id) : dashboard.tiles.length;
  const [draft, setDraft] = useState(() => (tile ? draftOf(tile) : tileBelow(dashboard, props.sources)));
  const { submit, busy, error } = useSubmit(async () => {
    const tiles: unknown[] = [...dashboard.tiles];
    tiles[index] = tileBody(draft);
    await save(dashboard, dashboard.name, tiles);
    props.onSaved();
  });
  const label = tile ? `Edit tile ${tile.name}` : 'New tile';
  return (
    <form class="card form-grid" onSubmit={submit} aria-label={label}>
      <h2>{label}</h2>
      <FormError error={error} shownPaths={tilePaths(index)} />
      <TileFields draft={draft} onChange={setDraft} sources={props.sources} index={index} error={error} />
      <FormActions submit={tile ? 'Save tile' : 'Add tile'} busy={busy} onCancel={props.onCancel} />
    </form>
  );
}

export function RenameForm(props: { dashboard: Dashboard; onSaved: () => void; onCancel: () => void }) {
  const [name, setName] = useState(props.dashboard.name);
  const { submit, busy, error } = useSubmit(async () => {
    await save(props.dashboard, name, props.dashboard.tiles);
    props.onSaved();
  });
  return (
    <form class="card form-grid" onSubmit={submit} aria-label="Rename dashboard">
      <FormError error={error} shownPaths={['name']} />
      <Field label="Dashboard name" path="name" error={error}>
        <input value={name} onInput={(e) => setName(e.currentTarget.value)} required />
      </Field>
      <FormActions submit="Save name" busy={busy} onCancel={props.onCancel} />
    </form>
  );
}
