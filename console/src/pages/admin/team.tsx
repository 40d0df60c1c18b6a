import { useState } from 'preact/hooks';
import { adminPaths, isAdmin, type TeamView, type TokenView } from '../../admin-model.js';
import { api, type Session } from '../../api.js';
import { Field, FormActions, FormError } from '../../components/field.js';
import { useSubmit } from '../../components/submit.js';
import { DataTable, ErrorNote } from '../../components/table.js';
import { when } from '../../format.js';
import { usePolled } from '../../poll.js';
import { href } from '../../router.js';
import { AdminNeeded, RevokeButton, ShownOnce } from './parts.js';

/**
 * A team's access tokens (never their values): one for a user (made on first use) shown once, and
 * revoke with a confirmation. The API lists tokens to admin keys only.
 */
export function TeamPage(props: { session: Session; teamId: string }) {
  const { session } = props;
  if (!isAdmin(session))
    return <AdminNeeded session={session} what="see and manage a team's access tokens" />;
  return <TeamTokens session={session} teamId={props.teamId} />;
}

function TeamTokens(props: { session: Session; teamId: string }) {
  const org = props.session.key.organizationId;
  const { teamId } = props;
  const teams = usePolled(() => api.get<TeamView[]>(adminPaths.teams(org)), 0, [org]);
  const tokens = usePolled(() => api.get<TokenView[]>(adminPaths.tokens(org, teamId)), 10_000, [org, teamId]);
  const team = teams.value?.find((t) => t.id === teamId);
  const revoke = async (token: TokenView) => {
    await api.delete(adminPaths.token(org, teamId, token.id));
    tokens.refresh();
  };
  return (
    <section>
      <p>
        <a href={href('admin', 'teams')}>Teams</a> /
      </p>
      <h2>Team {team?.name ?? teamId}: access tokens</h2>
      <ErrorNote error={tokens.error} />
      {tokens.value && (
        <DataTable
          rows={tokens.value.map((t) => ({
            user: t.user,
            name: t.name,
            created: when(t.createdAt),
            revoked: t.revokedAt ? when(t.revokedAt) : '–',
            '': t.revokedAt ? (
              ''
            ) : (
              <RevokeButton what="token" name={t.name || t.id} onRevoke={() => revoke(t)} />
            ),
          }))}
          columns={['user', 'name', 'created', 'revoked', '']}
          empty="No access tokens for this team yet."
        />
      )}
      <NewToken org={org} teamId={teamId} onCreated={tokens.refresh} />
    </section>
  );
}

function NewToken(props: { org: string; teamId: string; onCreated: () => void }) {
  const [user, setUser] = useState('');
  const [name, setName] = useState('');
  const [created, setCreated] = useState<(TokenView & { token: string }) | undefined>(undefined);
  const { submit, busy, error } = useSubmit(async () => {
    setCreated(
      await api.post<TokenView & { token: string }>(adminPaths.tokens(props.org, props.teamId), {
        user: user.trim(),
        ...(name.trim() ? { name: name.trim() } : {}),
      }),
    );
    setUser('');
    setName('');
    props.onCreated();
  });
  if (created)
    return (
      <ShownOnce
        label={`Access token of ${created.user}`}
        value={created.token}
        onDone={() => setCreated(undefined)}
      >
        <p class="muted">A bearer token for /api/v2, or to sign in to the console as {created.user}.</p>
      </ShownOnce>
    );
  return (
    <form class="card form-grid" onSubmit={submit} aria-label="New access token">
      <h2>New access token</h2>
      <FormError error={error} shownPaths={['user', 'name']} />
      <Field label="User" path="user" error={error}>
        <input value={user} onInput={(e) => setUser(e.currentTarget.value)} required />
      </Field>
      <Field label="Token name (optional)" path="name" error={error}>
        <input value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </Field>
      <FormActions submit="Create token" busy={busy} />
    </form>
  );
}
