import { loadConfig } from '../config.js';
import { liveHolder } from '../data-dir.js';
import type { Backend } from './backend.js';
import { parseCommandLine } from './flags.js';
import { CliError, HttpBackend } from './http-backend.js';
import { readCaFile } from './http-client.js';
import { LocalBackend } from './local-backend.js';
import { printRow, printRows } from './output.js';
import { PIPE_ACTIONS, PIPES_HELP, runPipesCommand } from './pipes-command.js';
import { rotateMasterKey, rotationLines } from './rotate-master-key.js';
import { serve } from './serve.js';
import { serveHelp } from './serve-help.js';
import { userMessage } from './user-errors.js';

const USAGE = `Usage: sluice <command> [options]   (sluice <command> --help explains one command)

  serve                                  run the API (flags below override SLUICE_* variables)
  orgs list | create <name>
  services list | create <name> [--kind embedded]
  keys list | create --role admin|developer|read-only [--name N] | revoke <key id>
  teams list | create <name>
  tokens list | create --user <name> [--name N] | revoke <token id>
  query [--service <name or id>] "<sql>"   run one statement on a service (default: "default")
  master-key rotate [--new-key <key>]    seal every stored secret with a new master key (server stopped)
  pipes list | get | status | create <file.json> | stop | start | delete | errors <pipe>

Options:
  --org <name or id>      organization (default: the key's own, or "default")
  --team <name or id>     team for tokens (default: "default")
  --url <base url>        talk to this server (default: the one holding --data-dir, if any)
  --cacert <file>         trust this PEM certificate (a self-signed or private server's, or its
                          authority's) besides the usual ones (or SLUICE_CACERT)
  --key-id, --key-secret  admin API key for a running server (or SLUICE_KEY_ID / SLUICE_KEY_SECRET)
  --json                  print JSON
  --data-dir <dir>        the data directory (or SLUICE_DATA_DIR; default ./data)
  sluice serve --help lists the server's flags; a switch needs no value (--json, --wait,
  --allow-private-sources; --name=false turns one off)
`;

/** Each command: its actions and what `sluice <command> --help` says of it. */
const COMMANDS: Record<string, { actions: string[]; help: string }> = {
  serve: {
    actions: [],
    help: serveHelp(),
  },
  orgs: {
    actions: ['list', 'create'],
    help: 'sluice orgs list\nsluice orgs create <name>\n\n  Organizations: each holds services, keys and teams.',
  },
  services: {
    actions: ['list', 'create'],
    help: 'sluice services list [--org O]\nsluice services create <name> [--kind embedded] [--org O]\n\n  Database services of an organization (embedded ClickHouse by default).',
  },
  keys: {
    actions: ['list', 'create', 'revoke'],
    help: 'sluice keys list [--org O]\nsluice keys create --role admin|developer|read-only [--name N] [--org O]\nsluice keys revoke <key id> [--org O]\n\n  API keys (Basic auth of /v1); the secret is shown once, at create.',
  },
  teams: {
    actions: ['list', 'create'],
    help: "sluice teams list [--org O]\nsluice teams create <name> [--org O]\n\n  Teams own the alerts area's objects.",
  },
  tokens: {
    actions: ['list', 'create', 'revoke'],
    help: "sluice tokens list [--team T] [--org O]\nsluice tokens create --user <name> [--name N] [--team T]\nsluice tokens revoke <token id> [--team T]\n\n  Bearer access tokens of a team's users (/api/v2); the token is shown once, at create.",
  },
  pipes: { actions: PIPE_ACTIONS, help: PIPES_HELP },
  'master-key': {
    actions: ['rotate'],
    help: 'sluice master-key rotate [--new-key <32 bytes as hex or base64>]\n\n  With every server of the store stopped: opens every stored secret with the master key in use and seals it with a new one, in one transaction, and revokes every access token (they are digests made with the old key). With the key file, a new random key replaces it (--new-key to choose it); with SLUICE_MASTER_KEY, --new-key is required, and SLUICE_MASTER_KEY must be set to it before the next start.',
  },
  query: {
    actions: [],
    help: 'sluice query [--service <name or id>] [--org O] "<sql>"\n\n  Runs one statement on a service (default: "default") and prints its rows (--json for JSON).',
  },
};
const ROLES = ['admin', 'developer', 'read-only'];

/** Mistakes in the command line itself, found before any credentials are asked for. */
function commandLineProblem(command: string, action: string | undefined, values: Record<string, unknown>) {
  const known = COMMANDS[command];
  if (!known) return `unknown command "${command}": one of ${Object.keys(COMMANDS).join(', ')}`;
  if (command === 'query' && !action) return `query: give the SQL to run, as in: sluice query "SELECT 1"`;
  if (known.actions.length > 0 && !known.actions.includes(action ?? ''))
    return `${command}: ${action ? `unknown action "${action}"` : 'give an action'}: one of ${known.actions.join(', ')}`;
  const role = values.role;
  if (typeof role === 'string' && !ROLES.includes(role))
    return `--role: "${role}" is not a role: one of ${ROLES.join(', ')}`;
  return undefined;
}

export async function main(argv: string[]): Promise<void> {
  try {
    const { values, positionals } = parseCommandLine(argv);
    const [command, action, argument] = positionals;
    if (!command || (values.help && !COMMANDS[command])) {
      console.log(USAGE);
      return;
    }
    if (values.help) {
      console.log(COMMANDS[command]?.help);
      return;
    }
    const problem = commandLineProblem(command, action, values);
    if (problem)
      throw new CliError(
        `${problem}\n\nRun sluice ${COMMANDS[command] ? `${command} ` : ''}--help for more.`,
      );
    const config = loadConfig(process.env, values as Record<string, string | undefined>);
    if (command === 'serve') return await serve(config);
    if (command === 'master-key') {
      const report = await rotateMasterKey(config, values['new-key'] as string | undefined);
      return console.log(rotationLines(report).join('\n'));
    }
    const backend = await openBackend(config.dataDir, values, config, command === 'pipes');
    try {
      await runCommand(backend, {
        command,
        action,
        argument,
        values: values as Record<string, string | boolean>,
      });
    } finally {
      await backend.close();
    }
  } catch (error) {
    process.exitCode = 1;
    const message = userMessage(error);
    if (message) console.error(message);
    else console.error('sluice: unexpected error (a bug: please report it with what follows):', error);
  }
}

async function openBackend(
  dataDir: string,
  values: Record<string, unknown>,
  config: ReturnType<typeof loadConfig>,
  needsServer: boolean,
): Promise<Backend> {
  const url = (values.url as string | undefined) ?? (await liveHolder(dataDir))?.url;
  if (!url && needsServer)
    throw new CliError(
      `no Sluice server holds ${dataDir}. Pipes run in the server: start it (sluice serve, or npm start) and run this again, or give --url`,
    );
  if (!url) return LocalBackend.open(config);
  const keyId =
    (values['key-id'] as string | undefined) ?? process.env.SLUICE_KEY_ID ?? config.bootstrap.keyId;
  const keySecret =
    (values['key-secret'] as string | undefined) ??
    process.env.SLUICE_KEY_SECRET ??
    config.bootstrap.keySecret;
  if (!keyId || !keySecret) {
    throw new CliError(
      `a Sluice server at ${url} holds the data directory; give an admin API key with --key-id and --key-secret (or SLUICE_KEY_ID and SLUICE_KEY_SECRET)`,
    );
  }
  const ca = await readCaFile(values.cacert as string | undefined, process.env.SLUICE_CACERT);
  return new HttpBackend(url, keyId, keySecret, ca);
}

interface Invocation {
  command: string;
  action: string | undefined;
  argument: string | undefined;
  values: Record<string, string | boolean>;
}

async function runCommand(
  backend: Backend,
  { command, action, argument, values }: Invocation,
): Promise<void> {
  const json = values.json === true;
  const text = (name: string) => (typeof values[name] === 'string' ? (values[name] as string) : undefined);
  const need = (value: string | undefined, what: string): string => {
    if (!value) throw new CliError(`${[command, action].filter(Boolean).join(' ')}: give ${what}`);
    return value;
  };
  const org = async () =>
    resolveByName(await backend.listOrganizations(), text('org') ?? 'default', 'organization');
  const team = async (orgId: string) =>
    resolveByName(await backend.listTeams(orgId), text('team') ?? 'default', 'team');
  const service = async (orgId: string) =>
    resolveByName(await backend.listServices(orgId), text('service') ?? 'default', 'service');
  if (command === 'pipes') {
    const orgId = await org();
    return runPipesCommand(backend, {
      action: need(action, 'an action'),
      argument,
      json,
      org: orgId,
      service: await service(orgId),
      limit: text('limit'),
      wait: values.wait === true,
      history: values.history === true,
      timeout: text('timeout'),
    });
  }
  if (command === 'query') {
    const orgId = await org();
    const result = await backend.query(orgId, await service(orgId), need(action, 'the SQL to run'));
    return printRows(
      result.rows,
      result.columns.map((c) => c.name),
      json,
      'as-is',
    );
  }
  const key = `${command} ${action ?? ''}`.trim();
  switch (key) {
    case 'orgs list':
      return printRows(await backend.listOrganizations(), ['id', 'name', 'createdAt'], json);
    case 'orgs create':
      return printRow(await backend.createOrganization(need(argument, 'a name')), json);
    case 'services list':
      return printRows(await backend.listServices(await org()), ['id', 'name', 'kind', 'createdAt'], json);
    case 'services create':
      return printRow(
        await backend.createService(await org(), {
          name: need(argument, 'a name'),
          kind: text('kind') ?? 'embedded',
        }),
        json,
      );
    case 'keys list':
      return printRows(
        await backend.listKeys(await org()),
        ['id', 'name', 'role', 'createdAt', 'revokedAt'],
        json,
      );
    case 'keys create':
      return printRow(
        await backend.createKey(await org(), {
          role: need(text('role'), '--role'),
          name: text('name') ?? 'key',
        }),
        json,
      );
    case 'keys revoke':
      return printRow(await backend.revokeKey(await org(), need(argument, 'a key id')), json);
    case 'teams list':
      return printRows(await backend.listTeams(await org()), ['id', 'name', 'createdAt'], json);
    case 'teams create':
      return printRow(await backend.createTeam(await org(), need(argument, 'a name')), json);
    case 'tokens list': {
      const orgId = await org();
      return printRows(
        await backend.listTokens(orgId, await team(orgId)),
        ['id', 'name', 'user', 'createdAt', 'revokedAt'],
        json,
      );
    }
    case 'tokens create': {
      const orgId = await org();
      const body = { user: need(text('user'), '--user'), name: text('name') ?? 'token' };
      return printRow(await backend.createToken(orgId, await team(orgId), body), json);
    }
    case 'tokens revoke': {
      const orgId = await org();
      await backend.revokeToken(orgId, await team(orgId), need(argument, 'a token id'));
      return console.log('revoked');
    }
    default:
      throw new CliError(`unknown command "${key}"\n\n${USAGE}`);
  }
}

/** `--org` and `--team` take a name or an id; a key that sees one organization defaults to it. */
function resolveByName(rows: { id?: unknown; name?: unknown }[], wanted: string, what: string): string {
  const match =
    rows.find((row) => row.id === wanted || row.name === wanted) ??
    (rows.length === 1 && wanted === 'default' ? rows[0] : undefined);
  if (!match) throw new CliError(`no ${what} named or with id "${wanted}"`);
  return String(match.id);
}
