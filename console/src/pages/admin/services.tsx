import { useState } from 'preact/hooks';
import { adminPaths, isAdmin, type ServiceView } from '../../admin-model.js';
import { api, type Session } from '../../api.js';
import { Field, FormActions, FormError } from '../../components/field.js';
import { useSubmit } from '../../components/submit.js';
import { DataTable, ErrorNote } from '../../components/table.js';
import { when } from '../../format.js';
import { usePolled } from '../../poll.js';
import { AdminNeeded } from './parts.js';

/** The organization's database services, and a form for a new one (admin keys). */
export function ServicesPage(props: { session: Session; onChanged: () => void }) {
  const { session } = props;
  const org = session.key.organizationId;
  const services = usePolled(() => api.get<ServiceView[]>(adminPaths.services(org)), 10_000, [org]);
  return (
    <section>
      <h2>Services</h2>
      <ErrorNote error={services.error} />
      {services.value && (
        <DataTable
          rows={services.value.map((s) => ({
            name: s.name,
            id: s.id,
            kind: s.kind,
            created: when(s.createdAt),
          }))}
          columns={['name', 'id', 'kind', 'created']}
          empty="No services yet."
        />
      )}
      {isAdmin(session) ? (
        <NewService
          org={org}
          onCreated={() => {
            services.refresh();
            props.onChanged();
          }}
        />
      ) : (
        <AdminNeeded session={session} what="create services" />
      )}
    </section>
  );
}

function NewService(props: { org: string; onCreated: () => void }) {
  const [name, setName] = useState('');
  const { submit, busy, error } = useSubmit(async () => {
    await api.post(adminPaths.services(props.org), { name: name.trim(), kind: 'embedded' });
    setName('');
    props.onCreated();
  });
  return (
    <form class="card form-grid" onSubmit={submit} aria-label="New service">
      <h2>New service</h2>
      <FormError error={error} shownPaths={['name', 'kind']} />
      <Field label="Service name" path="name" error={error}>
        <input value={name} onInput={(e) => setName(e.currentTarget.value)} required />
      </Field>
      <p class="muted small">An embedded service: its engine runs inside Sluice.</p>
      <FormActions submit="Create service" busy={busy} />
    </form>
  );
}
