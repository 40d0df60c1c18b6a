import { useState } from 'preact/hooks';
import { adminPaths, isAdmin, type KeyView } from '../../admin-model.js';
import { api, type Role, type Session } from '../../api.js';
import { Field, FormActions, FormError } from '../../components/field.js';
import { useSubmit } from '../../components/submit.js';
import { DataTable, ErrorNote } from '../../components/table.js';
import { when } from '../../format.js';
import { usePolled } from '../../poll.js';
import { AdminNeeded, RevokeButton, ShownOnce } from './parts.js';

const ROLES: Role[] = ['read-only', 'developer', 'admin'];

/**
 * The organization's API keys (never their secrets), a form for a new one whose secret is shown
 * once, and revoke with a confirmation. The API lists keys to admin keys only.
 */
export function KeysPage(props: { session: Session }) {
  const { session } = props;
  if (!isAdmin(session))
    return (
      <section>
        <h2>API keys</h2>
        <AdminNeeded session={session} what="list, create and revoke API keys" />
      </section>
    );
  return <AdminKeys session={session} />;
}

function AdminKeys(props: { session: Session }) {
  const org = props.session.key.organizationId;
  const keys = usePolled(() => api.get<KeyView[]>(adminPaths.keys(org)), 10_000, [org]);
  const revoke = async (key: KeyView) => {
    await api.delete(adminPaths.key(org, key.id));
    // Revoking this session's own key ends the session: this read is then a 401, and the console
    // returns to the sign-in (api.ts, whenSignedOut).
    keys.refresh();
  };
  return (
    <section>
      <h2>API keys</h2>
      <ErrorNote error={keys.error} />
      {keys.value && (
        <DataTable
          rows={keys.value.map((k) => ({
            name: k.name,
            id: k.id === props.session.key.id ? `${k.id} (this session)` : k.id,
            role: k.role,
            created: when(k.createdAt),
            revoked: k.revokedAt ? when(k.revokedAt) : '–',
            '': k.revokedAt ? (
              ''
            ) : (
              <RevokeButton
                what="key"
                name={k.name || k.id}
                warning={
                  k.id === props.session.key.id
                    ? 'This is the key of this session: revoking it signs you out.'
                    : undefined
                }
                onRevoke={() => revoke(k)}
              />
            ),
          }))}
          columns={['name', 'id', 'role', 'created', 'revoked', '']}
          empty="No keys."
        />
      )}
      <NewKey org={org} onCreated={keys.refresh} />
    </section>
  );
}

function NewKey(props: { org: string; onCreated: () => void }) {
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('read-only');
  const [created, setCreated] = useState<(KeyView & { secret: string }) | undefined>(undefined);
  const { submit, busy, error } = useSubmit(async () => {
    setCreated(
      await api.post<KeyView & { secret: string }>(adminPaths.keys(props.org), {
        ...(name.trim() ? { name: name.trim() } : {}),
        role,
      }),
    );
    setName('');
    props.onCreated();
  });
  if (created)
    return (
      <ShownOnce
        label={`Secret of key ${created.name || created.id}`}
        value={created.secret}
        onDone={() => setCreated(undefined)}
      >
        <p>
          Key id <code>{created.id}</code> ({created.role}). Sign in or call the API with the id and this
          secret.
        </p>
      </ShownOnce>
    );
  return (
    <form class="card form-grid" onSubmit={submit} aria-label="New API key">
      <h2>New API key</h2>
      <FormError error={error} shownPaths={['name', 'role']} />
      <Field label="Key name" path="name" error={error}>
        <input value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </Field>
      <Field label="Role" path="role" error={error}>
        <select value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
          {ROLES.map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
      </Field>
      <FormActions submit="Create key" busy={busy} />
    </form>
  );
}
