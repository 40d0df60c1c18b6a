import { useState } from 'preact/hooks';
import type { AlertSource } from '../alerts-model.js';
import { v2 } from '../alerts-model.js';
import { api } from '../api.js';
import { Field, FormActions, FormError } from '../components/field.js';
import { useSubmit } from '../components/submit.js';
import type { Service } from '../model.js';

const SOURCE_FIELDS = ['name', 'kind', 'serviceId', 'from', 'timestampValueExpression'];

/** The team's sources (a table of a service and its time column), and a form to add one. */
export function SourcesSection(props: {
  sources: AlertSource[];
  services: Service[];
  onCreated: () => void;
}) {
  const [open, setOpen] = useState(props.sources.length === 0);
  return (
    <section>
      <div class="title-row">
        <h2>Sources</h2>
        {!open && (
          <button type="button" onClick={() => setOpen(true)}>
            New source
          </button>
        )}
      </div>
      {props.sources.length === 0 && <p class="muted">No sources yet: a tile reads a source.</p>}
      {props.sources.length > 0 && (
        <p class="muted">
          {props.sources.map((s) => `${s.name} (${s.from.databaseName}.${s.from.tableName})`).join(' · ')}
        </p>
      )}
      {open && (
        <SourceForm
          services={props.services}
          onCreated={() => {
            setOpen(false);
            props.onCreated();
          }}
        />
      )}
    </section>
  );
}

function SourceForm(props: { services: Service[]; onCreated: () => void }) {
  const [name, setName] = useState('');
  const [kind, setKind] = useState('log');
  const [serviceId, setServiceId] = useState(props.services[0]?.id ?? '');
  const [databaseName, setDatabaseName] = useState('default');
  const [tableName, setTableName] = useState('');
  const [timestamp, setTimestamp] = useState('');
  const { submit, busy, error } = useSubmit(async () => {
    await api.post(v2.sources, {
      name,
      kind,
      serviceId,
      from: { databaseName, tableName },
      timestampValueExpression: timestamp,
    });
    props.onCreated();
  });
  return (
    <form class="card form-grid" onSubmit={submit} aria-label="New source">
      <FormError error={error} shownPaths={SOURCE_FIELDS} />
      <Field label="Source name" path="name" error={error}>
        <input value={name} onInput={(e) => setName(e.currentTarget.value)} required />
      </Field>
      <Field label="Kind" path="kind" error={error}>
        <select value={kind} onChange={(e) => setKind(e.currentTarget.value)}>
          <option value="log">log</option>
          <option value="metric">metric</option>
          <option value="trace">trace</option>
        </select>
      </Field>
      <Field label="Service" path="serviceId" error={error}>
        <select value={serviceId} onChange={(e) => setServiceId(e.currentTarget.value)}>
          {props.services.map((s) => (
            <option key={s.id} value={s.id}>
              {s.name}
            </option>
          ))}
        </select>
      </Field>
      <Field label="Database" path="from.databaseName" error={error}>
        <input value={databaseName} onInput={(e) => setDatabaseName(e.currentTarget.value)} required />
      </Field>
      <Field label="Table" path="from.tableName" error={error}>
        <input value={tableName} onInput={(e) => setTableName(e.currentTarget.value)} required />
      </Field>
      <Field label="Time column or expression" path="timestampValueExpression" error={error}>
        <input
          value={timestamp}
          placeholder="ts"
          onInput={(e) => setTimestamp(e.currentTarget.value)}
          required
        />
      </Field>
      <FormActions submit="Create source" busy={busy} />
    </form>
  );
}
