import { readFile } from 'node:fs/promises';
import { errorRowsQuery } from '../pipes/index.js';
import type { Backend, PipesApi, Row } from './backend.js';
import { CliError } from './http-backend.js';
import { printRow, printRows } from './output.js';

export const PIPES_HELP = `sluice pipes list [--service S] [--org O]
sluice pipes get <pipe name or id>
sluice pipes status <pipe name or id> [--wait [--timeout S]] [--history]
                                            --wait: until Completed, Running, Failed or Stopped
                                            (a one-off object-storage pipe: until Completed,
                                            Failed or Stopped); at most S seconds (default 300);
                                            Failed, or not settled in time, exits 1;
                                            --history: the last hour from the pipe's
                                            history, a minute each (rows, rows/s, lag)
sluice pipes create <file.json | ->        the body of POST .../pipes, from a file or standard input
sluice pipes stop <pipe name or id>
sluice pipes start <pipe name or id>
sluice pipes delete <pipe name or id>
sluice pipes errors <pipe name or id> [--limit N]   the newest bad records (default 20)

  Pipes of a service (default: "default"), through the running server that runs them: start one
  with \`sluice serve\` (or npm start) and give an admin API key (--key-id and --key-secret, or
  SLUICE_KEY_ID and SLUICE_KEY_SECRET); --url for a server elsewhere. Tables on a terminal, JSON
  with --json.`;

export const PIPE_ACTIONS = ['list', 'get', 'status', 'create', 'stop', 'start', 'delete', 'errors'];

interface PipesInvocation {
  action: string;
  argument: string | undefined;
  json: boolean;
  org: string;
  service: string;
  limit: string | undefined;
  /** `status --wait`: poll until the pipe settles, for at most `timeout` seconds. */
  wait: boolean;
  timeout: string | undefined;
  /** `status --history`: the last hour of the pipe's history, a minute each. */
  history: boolean;
}

/** `sluice pipes ...`: the /v1 pipe endpoints, and the pipe's error table through /query. */
export async function runPipesCommand(backend: Backend, call: PipesInvocation): Promise<void> {
  const api = backend.pipes;
  if (!api) throw new CliError('pipes: only through a running Sluice server (sluice serve, or --url)');
  const { action, json, org, service } = call;
  if (action === 'list') return printRows(await listWithRows(api, org, service), LIST_COLUMNS, json);
  if (action === 'create')
    return printRow(await api.create(org, service, await readBody(call.argument)), json);
  const pipe = await resolvePipe(api, org, service, call.argument, action);
  switch (action) {
    case 'get':
      return printRow(await api.get(org, service, pipe.id), json);
    case 'status':
      if (call.wait) return waitUntilSettled(api, call, pipe);
      if (call.history) return printHistory(await api.status(org, service, pipe.id), json);
      return printRow(await api.status(org, service, pipe.id), json);
    case 'stop':
    case 'start':
      return printRow(summary(await api.command(org, service, pipe.id, action)), json);
    case 'delete':
      await api.remove(org, service, pipe.id);
      return json ? printRow({ id: pipe.id, deleted: true }, true) : console.log(`deleted pipe ${pipe.id}`);
    case 'errors':
      return printErrors(backend, call, pipe);
  }
}

const LIST_COLUMNS = ['id', 'name', 'state', 'source', 'table', 'rows'];

/**
 * The states a pipe stays in until something happens to it: `status --wait` stops at them. A one-off
 * object-storage pipe that is Running is on its way to Completed, so for it Running is not one.
 */
function settledStates(pipe: Row): string[] {
  const storage = (pipe.source as Row | undefined)?.objectStorage as Row | undefined;
  const oneOff = storage !== undefined && storage.isContinuous !== true;
  return oneOff ? ['Completed', 'Failed', 'Stopped'] : ['Completed', 'Running', 'Failed', 'Stopped'];
}

/**
 * `pipes status --wait`: the status once the pipe has settled (a new pipe is Provisioning at first;
 * a retrying one is Degraded). Failed, or still unsettled after the timeout, exits 1.
 */
async function waitUntilSettled(api: PipesApi, call: PipesInvocation, pipe: Row & { id: string }) {
  const seconds = call.timeout === undefined ? 300 : Number(call.timeout);
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > 86_400)
    throw new CliError(`--timeout: "${call.timeout}" is not a whole number of seconds from 1 to 86400`);
  const deadline = Date.now() + seconds * 1000;
  const settled = settledStates(pipe);
  let status = await api.status(call.org, call.service, pipe.id);
  while (!settled.includes(String(status.state)) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    status = await api.status(call.org, call.service, pipe.id);
  }
  printRow(status, call.json);
  const why = status.lastError ?? status.reason;
  // The condition's code beside the words (src/error-codes.ts), as the API's errors carry it.
  const code = status.lastError && status.lastErrorCode ? ` (${status.lastErrorCode})` : '';
  if (status.state === 'Failed') throw new CliError(`pipe ${pipe.name} is Failed${code}: ${why}`);
  if (!settled.includes(String(status.state)))
    throw new CliError(
      `pipe ${pipe.name} is still ${status.state} after ${seconds} s${why ? `: ${why}` : ''}`,
    );
}

/** One line a pipe: what it reads, where it writes, how many rows it wrote. */
async function listWithRows(api: PipesApi, org: string, service: string): Promise<Row[]> {
  const pipes = await api.list(org, service);
  return Promise.all(
    pipes.map(async (pipe) => ({
      ...summary(pipe),
      rows: (await api.status(org, service, String(pipe.id))).rowsWritten,
    })),
  );
}

function summary(pipe: Row): Row {
  const destination = (pipe.destination ?? {}) as Row;
  return {
    id: pipe.id,
    name: pipe.name,
    state: pipe.state,
    source: Object.keys((pipe.source ?? {}) as Row)[0] ?? '',
    table: `${destination.database ?? 'default'}.${destination.table ?? ''}`,
  };
}

async function resolvePipe(
  api: PipesApi,
  org: string,
  service: string,
  wanted: string | undefined,
  action: string,
): Promise<Row & { id: string }> {
  if (!wanted)
    throw new CliError(`pipes ${action}: give the pipe's name or id, as in: sluice pipes ${action} <pipe>`);
  const pipes = await api.list(org, service);
  const matches = pipes.filter((pipe) => pipe.id === wanted || pipe.name === wanted);
  if (matches.length === 0) throw new CliError(`no pipe named or with id "${wanted}" in this service`);
  if (matches.length > 1)
    throw new CliError(
      `${matches.length} pipes are named "${wanted}": give its id (sluice pipes list shows them)`,
    );
  return matches[0] as Row & { id: string };
}

async function readBody(file: string | undefined): Promise<unknown> {
  if (!file)
    throw new CliError('pipes create: give a JSON file with the pipe, or - to read it from standard input');
  let text: string;
  try {
    text = file === '-' ? await readStdin() : await readFile(file, 'utf8');
  } catch (error) {
    throw new CliError(`pipes create: cannot read ${file}: ${(error as Error).message}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new CliError(`pipes create: ${file} is not JSON: ${(error as Error).message}`);
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function printErrors(backend: Backend, call: PipesInvocation, pipe: Row & { id: string }) {
  const limit = call.limit === undefined ? 20 : Number(call.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000)
    throw new CliError(`--limit: "${call.limit}" is not a whole number from 1 to 10000`);
  const destination = (pipe.destination ?? {}) as Row;
  const sql = errorRowsQuery(
    String(destination.database ?? 'default'),
    String(destination.table),
    pipe.id,
    limit,
  );
  // A pipe that never set a record aside may have no error table yet: nothing to ask for then.
  const status = await (backend.pipes as PipesApi).status(call.org, call.service, pipe.id);
  const rows =
    Number(status.badRecords ?? 0) > 0 ? (await backend.query(call.org, call.service, sql)).rows : [];
  if (call.json) return printRows(rows, [], true);
  printRows(
    rows.map((row) => ({ ...row, raw: clip(String(row.raw ?? ''), 60) })),
    ['time', 'source', 'row', 'error', 'raw'],
    false,
  );
}

/** The status's last hour (README, "Pipe history"), a minute each, oldest first. */
function printHistory(status: Row, json: boolean) {
  const minutes = (status.lastHour ?? []) as { minute: string; rowsPerSecond: number; lag: number | null }[];
  if (json) return printRows(minutes, [], true);
  printRows(
    minutes.map(({ minute, rowsPerSecond, lag }) => ({
      minute: minute.slice(0, 16).replace('T', ' '),
      rows: Math.round(rowsPerSecond * 60),
      'rows/s': rowsPerSecond.toFixed(2),
      lag: lag ?? '',
    })),
    ['minute', 'rows', 'rows/s', 'lag'],
    false,
  );
}

function clip(text: string, width: number): string {
  const line = text.replace(/\s+/g, ' ');
  return line.length > width ? `${line.slice(0, width - 1)}…` : line;
}
