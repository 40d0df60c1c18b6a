import { describe, expect, it } from 'vitest';
import { ConfigError } from '../config.js';
import { CodedError, NotFoundError } from '../errors.js';
import { CliError } from './http-client.js';
import { userMessage } from './user-errors.js';

describe('what the CLI prints for an error', () => {
  it('one line with the code for a coded condition; the words alone for a configuration error', () => {
    expect(userMessage(new CodedError('SLUICE_ERR_METADATA_STORE', 'could not create it'))).toBe(
      'sluice: SLUICE_ERR_METADATA_STORE: could not create it',
    );
    expect(userMessage(new NotFoundError('SLUICE_ERR_PIPE_NOT_FOUND', 'pipe'))).toBe(
      'sluice: SLUICE_ERR_PIPE_NOT_FOUND: pipe not found',
    );
    expect(userMessage(new ConfigError(['SLUICE_PORT must be a port']))).toBe(
      'sluice: invalid configuration: SLUICE_PORT must be a port',
    );
    // The server's answer relayed, with its code; the CLI's own condition in its words.
    expect(
      userMessage(new CliError('the pipe is already running (state Running)', 'SLUICE_ERR_PIPE_STATE')),
    ).toBe('sluice: SLUICE_ERR_PIPE_STATE: the pipe is already running (state Running)');
    expect(userMessage(new CliError('cannot reach http://x: ECONNREFUSED'))).toBe(
      'sluice: cannot reach http://x: ECONNREFUSED',
    );
    // A bug keeps its stack: nothing to print in one line.
    expect(userMessage(new Error('undefined is not a function'))).toBeUndefined();
  });
});
