import { useEffect, useState } from 'preact/hooks';
import { type AlertSource, type Dashboard, v2 } from '../alerts-model.js';
import { api } from '../api.js';
import { Field, FormActions, FormError } from '../components/field.js';
import { useSubmit } from '../components/submit.js';
import { ErrorNote } from '../components/table.js';
import type { Service } from '../model.js';
import { usePolled } from '../poll.js';
import { href, navigate } from '../router.js';
import { emptyTile, tileBody } from '../tile-draft.js';
import { SourcesSection } from './sources.js';
import { TileFields, tilePaths } from './tile-form.js';

/** The team's dashboards, its sources, and a form for a dashboard with its first tile. */
export function DashboardsPage(props: { services: Service[] }) {
  const dashboards = usePolled(() => api.get<Dashboard[]>(v2.dashboards), 15_000, []);
  const sources = usePolled(() => api.get<AlertSource[]>(v2.sources), 0, []);
  const [creating, setCreating] = useState(false);
  return (
    <section>
      <div class="title-row">
        <h1>Dashboards</h1>
        {!creating && sources.value && sources.value.length > 0 && (
          <button type="button" onClick={() => setCreating(true)}>
            New dashboard
          </button>
        )}
      </div>
      <ErrorNote error={dashboards.error ?? sources.error} />
      {dashboards.value?.length === 0 && <p class="muted">No dashboards yet.</p>}
      {dashboards.value && dashboards.value.length > 0 && (
        <ul class="plain-list">
          {dashboards.value.map((d) => (
            <li key={d.id} data-dashboard={d.name}>
              <a href={href('a', 'dashboards', d.id)}>{d.name}</a>{' '}
              <span class="muted">
                {d.tiles.length} tile{d.tiles.length === 1 ? '' : 's'}
                {d.tags.length ? ` · ${d.tags.join(', ')}` : ''}
              </span>
            </li>
          ))}
        </ul>
      )}
      {creating && sources.value && (
        <DashboardForm sources={sources.value} onCancel={() => setCreating(false)} />
      )}
      {sources.value && (
        <SourcesSection sources={sources.value} services={props.services} onCreated={sources.refresh} />
      )}
    </section>
  );
}

function DashboardForm(props: { sources: AlertSource[]; onCancel: () => void }) {
  const [name, setName] = useState('');
  const [tags, setTags] = useState('');
  const [draft, setDraft] = useState(() => emptyTile(props.sources));
  // A source added while the form is open becomes choosable; the first is chosen when none is.
  useEffect(() => {
    if (!draft.sourceId && props.sources[0]) setDraft({ ...draft, sourceId: props.sources[0].id });
  }, [props.sources]);
  const { submit, busy, error } = useSubmit(async () => {
    const tagList = tags
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean);
    const created = await api.post<Dashboard>(v2.dashboards, {
      name,
      tags: tagList,
      tiles: [tileBody(draft)],
    });
    navigate('a', 'dashboards', created.id);
  });
  return (
    <form class="card form-grid" onSubmit={submit} aria-label="New dashboard">
      <h2>New dashboard</h2>
      <FormError error={error} shownPaths={['name', 'tags', ...tilePaths(0)]} />
      <Field label="Dashboard name" path="name" error={error}>
        <input value={name} onInput={(e) => setName(e.currentTarget.value)} required />
      </Field>
      <Field label="Tags (comma separated)" path="tags" error={error}>
        <input value={tags} onInput={(e) => setTags(e.currentTarget.value)} />
      </Field>
      <TileFields draft={draft} onChange={setDraft} sources={props.sources} index={0} error={error} />
      <FormActions submit="Create dashboard" busy={busy} onCancel={props.onCancel} />
    </form>
  );
}
