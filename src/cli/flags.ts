import { parseArgs } from 'node:util';
import { CONFIG_FLAGS, SWITCH_FLAGS } from '../config.js';
import { CliError } from './http-client.js';

/** The CLI's own switches; `--help` stays a plain boolean (`--help=false` means nothing to anyone). */
const CLI_SWITCHES = ['json', 'wait', 'history'];

/** Every flag that is on or off: written alone it means true (README, "The sluice command"). */
const SWITCHES = new Set([...SWITCH_FLAGS, ...CLI_SWITCHES]);

const OPTIONS = {
  ...Object.fromEntries(Object.keys(CONFIG_FLAGS).map((flag) => [flag, { type: 'string' as const }])),
  ...Object.fromEntries(CLI_SWITCHES.map((flag) => [flag, { type: 'string' as const }])),
  org: { type: 'string' },
  team: { type: 'string' },
  url: { type: 'string' },
  cacert: { type: 'string' },
  'key-id': { type: 'string' },
  'key-secret': { type: 'string' },
  kind: { type: 'string' },
  role: { type: 'string' },
  name: { type: 'string' },
  user: { type: 'string' },
  service: { type: 'string' },
  'new-key': { type: 'string' },
  limit: { type: 'string' },
  timeout: { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

export interface CommandLine {
  /** Flags as given; switches are 'true' or 'false' (config's own check reads the SLUICE_* ones). */
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

/**
 * Reads argv. A switch alone is `--name=true`; `--name=false` and the older spelling
 * `--name false` also work. A mistake (an unknown flag, a missing value) is a CliError that names
 * the flag, never Node's stack.
 */
export function parseCommandLine(argv: string[]): CommandLine {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: spellSwitches(argv), allowPositionals: true, options: OPTIONS });
  } catch (error) {
    throw new CliError(`${parseProblem(error as Error & { code?: string })}: sluice --help lists the flags`);
  }
  const values: CommandLine['values'] = { ...parsed.values };
  for (const flag of CLI_SWITCHES) {
    const raw = values[flag];
    if (raw !== undefined && raw !== 'true' && raw !== 'false')
      throw new CliError(`--${flag} is a switch: give it alone, or --${flag}=false; got "${raw}"`);
    values[flag] = raw === 'true';
  }
  return { values, positionals: parsed.positionals };
}

/** Node's words for a command-line mistake, made short: which flag, and what is wrong with it. */
function parseProblem(error: Error & { code?: string }): string {
  const flag = /'(?:-\w, )?(--[^' ]+)/.exec(error.message)?.[1] ?? /'(-[^' ]+)/.exec(error.message)?.[1];
  if (error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && flag) return `unknown flag ${flag}`;
  if (error.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && flag)
    return /argument missing/.test(error.message)
      ? `${flag} needs a value, as in ${flag} <value>`
      : `${flag} takes no value`;
  return error.message.replace(/\.$/, '');
}

/** Writes every switch with its value, so the parser (which wants one type per flag) reads them all. */
function spellSwitches(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i] as string;
    // After `--` everything is a positional (the SQL of `sluice query -- "--..."`).
    if (token === '--') return [...out, ...argv.slice(i)];
    const name = /^--([a-z-]+)$/.exec(token)?.[1];
    if (name === undefined || !SWITCHES.has(name)) {
      out.push(token);
      continue;
    }
    const next = argv[i + 1];
    // `--allow-private-sources false` is how these were written before they were switches.
    if (SWITCH_FLAGS.includes(name) && (next === 'true' || next === 'false')) {
      out.push(`--${name}=${next}`);
      i++;
    } else {
      out.push(`--${name}=true`);
    }
  }
  return out;
}

/** How `--help` writes a flag: a switch bare with its off spelling, others with a placeholder. */
export function flagSpelling(flag: string, placeholder: string): string {
  return SWITCHES.has(flag) ? `--${flag}[=false]` : `--${flag} ${placeholder}`;
}
