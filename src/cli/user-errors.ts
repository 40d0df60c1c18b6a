import { ConfigError } from '../config.js';
import { MasterKeyMismatchError } from '../crypto/index.js';
import { DataDirBusyError } from '../data-dir.js';
import { CodedError } from '../errors.js';
import { CliError } from './http-client.js';

/**
 * What the CLI prints for a mistake a user can make and put right (a busy port, a bad flag, a
 * server it cannot reach, a file it cannot read, a CodedError's condition): one line, no stack.
 * Undefined for anything else, which is a bug and keeps its stack for the report.
 */
export function userMessage(error: unknown): string | undefined {
  // An error the server answered: its code first, as the API gave it.
  if (error instanceof CliError && error.code !== 'SLUICE_ERR_CLI')
    return `sluice: ${error.code}: ${error.message}`;
  if (
    error instanceof ConfigError ||
    error instanceof CliError ||
    error instanceof DataDirBusyError ||
    error instanceof MasterKeyMismatchError
  )
    return `sluice: ${error.message}`;
  // A condition of the catalog (an API error, a metadata store that cannot be made): its code first.
  if (error instanceof CodedError) return `sluice: ${error.code}: ${error.message}`;
  // A file or address the user gave that the system refuses (EACCES, EISDIR, ...): its own words.
  const system = error as NodeJS.ErrnoException | undefined;
  if (typeof system?.code === 'string' && typeof system.syscall === 'string')
    return `sluice: ${system.message}`;
  return undefined;
}
