import { type Problem, ValidationError } from '../errors.js';
import type { Team } from '../store/index.js';
import { checkName } from './names.js';

/** What POST /console/session is sent (README, "The console: sign-in sessions"). */
export interface SignInBody {
  keyId: string;
  keySecret: string;
  accessToken?: string;
  teamId?: string;
  user?: string;
}

/** The user name an admin key's session acts as under /api/v2 when the body names none. */
export const DEFAULT_CONSOLE_USER = 'console';

/** Checks the body of a sign-in: every problem at once, each named by its field. */
export function checkSignInBody(body: unknown): SignInBody {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ValidationError([
      { path: '', message: 'send a JSON object with keyId and keySecret (and optionally accessToken)' },
    ]);
  }
  const input = body as Record<string, unknown>;
  const problems: Problem[] = [];
  const required = (field: string) => {
    if (typeof input[field] !== 'string' || input[field] === '')
      problems.push({ path: field, message: 'Required: give the API key id and secret as strings' });
  };
  required('keyId');
  required('keySecret');
  const given = (field: string) => input[field] !== undefined && input[field] !== null;
  if (given('accessToken') && (typeof input.accessToken !== 'string' || input.accessToken === ''))
    problems.push({
      path: 'accessToken',
      message: 'give the access token as a non-empty string, or leave it out',
    });
  if (given('teamId') && typeof input.teamId !== 'string')
    problems.push({ path: 'teamId', message: "give the id of a team of the key's organization as a string" });
  if (given('user')) checkName('user', input.user, problems);
  for (const field of ['teamId', 'user'] as const) {
    if (given('accessToken') && given(field))
      problems.push({
        path: field,
        message: `leave ${field} out when you send accessToken: the token names its team and user`,
      });
  }
  if (problems.length) throw new ValidationError(problems);
  return {
    keyId: input.keyId as string,
    keySecret: input.keySecret as string,
    ...(given('accessToken') && { accessToken: input.accessToken as string }),
    ...(given('teamId') && { teamId: input.teamId as string }),
    ...(given('user') && { user: input.user as string }),
  };
}

/**
 * An admin key's sign-in that must name its team: the organization has several and the body named
 * none, or named one that is not there. The teams travel with the error so the sign-in page can
 * offer them (src/http/console-session.ts renders them beside the envelope's message).
 */
export class TeamChoiceError extends ValidationError {
  readonly teams: { id: string; name: string }[];

  constructor(teams: Team[], teamId: string | undefined) {
    const listed = teams.map((team) => `"${team.name}" (${team.id})`).join(', ');
    const why =
      teamId === undefined
        ? `the key's organization has ${teams.length} teams: name the one to act as in the alerts area`
        : `no team ${teamId} in the key's organization`;
    super([{ path: 'teamId', message: `${why}; send teamId, one of ${listed}` }]);
    this.teams = teams.map((team) => ({ id: team.id, name: team.name }));
  }
}
