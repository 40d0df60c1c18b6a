import { useState } from 'preact/hooks';
import { type ApiError, api, type Session } from '../api.js';

interface Team {
  id: string;
  name: string;
}

/**
 * Sign in with an API key (the first one is printed when the server first starts). An admin key
 * also makes the session a user of a team for the alerts area; any key may add an access token
 * for that instead.
 */
export function SignIn(props: { onSignedIn: (session: Session) => void }) {
  const [keyId, setKeyId] = useState('');
  const [keySecret, setKeySecret] = useState('');
  const [accessToken, setAccessToken] = useState('');
  const [user, setUser] = useState('');
  const [teams, setTeams] = useState<Team[]>([]);
  const [teamId, setTeamId] = useState('');
  const [error, setError] = useState<ApiError | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const session = await api.post<Session>('/console/session', {
        keyId: keyId.trim(),
        keySecret,
        ...(accessToken ? { accessToken: accessToken.trim() } : {}),
        ...(teamId ? { teamId } : {}),
        ...(user ? { user: user.trim() } : {}),
      });
      props.onSignedIn(session);
    } catch (failure) {
      const apiError = failure as ApiError;
      const offered = teamsOffered(apiError);
      if (offered.length) {
        setTeams(offered);
        setTeamId(offered[0]?.id ?? '');
      }
      setError(apiError);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="sign-in">
      <h1>Sluice</h1>
      <form onSubmit={submit} class="card">
        <h2>Sign in</h2>
        <label>
          API key id
          <input
            name="keyId"
            value={keyId}
            onInput={(e) => setKeyId(e.currentTarget.value)}
            autocomplete="username"
            required
          />
        </label>
        <label>
          API key secret
          <input
            name="keySecret"
            type="password"
            value={keySecret}
            onInput={(e) => setKeySecret(e.currentTarget.value)}
            autocomplete="current-password"
            required
          />
        </label>
        <details>
          <summary>Alerts area: a team user</summary>
          <p class="muted">
            An admin key makes you a user of its organization's team. Any key may bring an access token of a
            team instead.
          </p>
          <label>
            User name
            <input
              name="user"
              value={user}
              placeholder="console"
              onInput={(e) => setUser(e.currentTarget.value)}
            />
          </label>
          <label>
            Access token
            <input
              name="accessToken"
              type="password"
              value={accessToken}
              onInput={(e) => setAccessToken(e.currentTarget.value)}
            />
          </label>
        </details>
        {teams.length > 0 && (
          <label>
            Team
            <select name="teamId" value={teamId} onChange={(e) => setTeamId(e.currentTarget.value)}>
              {teams.map((t) => (
                <option key={t.id} value={t.id}>
                  {t.name}
                </option>
              ))}
            </select>
          </label>
        )}
        {error && (
          <p class="error" role="alert">
            {error.message}
          </p>
        )}
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <p class="muted">The first admin key is printed by the server when it first starts.</p>
    </main>
  );
}

/** A sign-in with several teams and none chosen is refused with the teams to choose from. */
function teamsOffered(error: ApiError): Team[] {
  const body = error.body as { teams?: Team[] } | undefined;
  if (Array.isArray(body?.teams)) return body.teams;
  return [];
}
