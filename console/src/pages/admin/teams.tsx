import { useState } from 'preact/hooks';
import { adminPaths, isAdmin, type TeamView } from '../../admin-model.js';
import { api, type Session } from '../../api.js';
import { Field, FormActions, FormError } from '../../components/field.js';
import { useSubmit } from '../../components/submit.js';
import { DataTable, ErrorNote } from '../../components/table.js';
import { when } from '../../format.js';
import { usePolled } from '../../poll.js';
import { href } from '../../router.js';
import { AdminNeeded } from './parts.js';

/** The organization's teams (the owners of alerts); an admin key opens each one's access tokens. */
export function TeamsPage(props: { session: Session }) {
  const { session } = props;
  const org = session.key.organizationId;
  const admin = isAdmin(session);
  const teams = usePolled(() => api.get<TeamView[]>(adminPaths.teams(org)), 10_000, [org]);
  return (
    <section>
      <h2>Teams</h2>
      <ErrorNote error={teams.error} />
      {teams.value && (
        <DataTable
          rows={teams.value.map((t) => ({
            name: admin ? <a href={href('admin', 'teams', t.id)}>{t.name}</a> : t.name,
            id: t.id,
            created: when(t.createdAt),
          }))}
          columns={['name', 'id', 'created']}
          empty="No teams yet: an admin key's first sign-in makes one, default."
        />
      )}
      {admin ? (
        <NewTeam org={org} onCreated={teams.refresh} />
      ) : (
        <AdminNeeded session={session} what="create teams and manage their access tokens" />
      )}
    </section>
  );
}

function NewTeam(props: { org: string; onCreated: () => void }) {
  const [name, setName] = useState('');
  const { submit, busy, error } = useSubmit(async () => {
    await api.post(adminPaths.teams(props.org), { name: name.trim() });
    setName('');
    props.onCreated();
  });
  return (
    <form class="card form-grid" onSubmit={submit} aria-label="New team">
      <h2>New team</h2>
      <FormError error={error} shownPaths={['name']} />
      <Field label="Team name" path="name" error={error}>
        <input value={name} onInput={(e) => setName(e.currentTarget.value)} required />
      </Field>
      <FormActions submit="Create team" busy={busy} />
    </form>
  );
}
