import { useState } from 'preact/hooks';
import { adminPaths, isOperatorAdmin, type KeyView, type OrganizationView } from '../../admin-model.js';
import { api, type Session } from '../../api.js';
import { Field, FormActions, FormError } from '../../components/field.js';
import { useSubmit } from '../../components/submit.js';
import { DataTable, ErrorNote } from '../../components/table.js';
import { when } from '../../format.js';
import { usePolled } from '../../poll.js';
import { ShownOnce } from './parts.js';

interface CreatedOrganization {
  organization: OrganizationView;
  key: KeyView & { secret: string };
}

/**
 * The session's organization; for an admin key of the operator organization, every organization
 * and a form for a new one (whose first admin key is in the answer, shown once, to hand over).
 */
export function OrganizationPage(props: { session: Session }) {
  const { session } = props;
  const operator = isOperatorAdmin(session);
  const organizations = usePolled(
    () => api.get<OrganizationView[]>(adminPaths.organizations),
    operator ? 10_000 : 0,
    [session.key.id],
  );
  const own = organizations.value?.find((o) => o.id === session.key.organizationId);
  return (
    <section>
      <h2>Organization</h2>
      <dl class="facts">
        <dt>Name</dt>
        <dd>{own?.name ?? session.key.organizationName}</dd>
        <dt>Id</dt>
        <dd>
          <code>{session.key.organizationId}</code>
        </dd>
        {own && (
          <>
            <dt>Created</dt>
            <dd>{when(own.createdAt)}</dd>
          </>
        )}
      </dl>
      {operator ? (
        <>
          <h2>All organizations</h2>
          <ErrorNote error={organizations.error} />
          <DataTable
            rows={(organizations.value ?? []).map((o) => ({
              name: o.name,
              id: o.id,
              created: when(o.createdAt),
            }))}
            columns={['name', 'id', 'created']}
          />
          <NewOrganization onCreated={organizations.refresh} />
        </>
      ) : (
        <p class="muted admin-needed">
          Listing and creating organizations needs an admin key of the operator organization.
        </p>
      )}
    </section>
  );
}

function NewOrganization(props: { onCreated: () => void }) {
  const [name, setName] = useState('');
  const [created, setCreated] = useState<CreatedOrganization | undefined>(undefined);
  const { submit, busy, error } = useSubmit(async () => {
    setCreated(await api.post<CreatedOrganization>(adminPaths.organizations, { name: name.trim() }));
    setName('');
    props.onCreated();
  });
  if (created)
    return (
      <ShownOnce
        label={`First admin key of ${created.organization.name}`}
        value={`${created.key.id}:${created.key.secret}`}
        onDone={() => setCreated(undefined)}
      >
        <p>
          Key id <code>{created.key.id}</code>, secret <code class="key-secret">{created.key.secret}</code>.
          Hand it to the organization's administrator; the value below is <code>id:secret</code>, as HTTP
          Basic takes it.
        </p>
      </ShownOnce>
    );
  return (
    <form class="card form-grid" onSubmit={submit} aria-label="New organization">
      <h2>New organization</h2>
      <FormError error={error} shownPaths={['name']} />
      <Field label="Organization name" path="name" error={error}>
        <input value={name} onInput={(e) => setName(e.currentTarget.value)} required />
      </Field>
      <FormActions submit="Create organization" busy={busy} />
    </form>
  );
}
