import { describe, expect, it } from 'vitest';
import { codeOf } from '../../../../errors.js';
import type { PipeConfig } from '../../../model.js';
import type { CleanupContext } from '../../contract.js';
import { postgresRunFailure } from './run-failure.js';

// Neither is read unless the server refused a privilege (42501), which these errors are not.
const config = {} as PipeConfig;
const context = {} as CleanupContext;

describe("postgresRunFailure names a lost connection from pg's error", () => {
  it('a connection that ended, also under a wrapping error, is SLUICE_ERR_SOURCE_UNREACHABLE, its words kept', async () => {
    const lost = new Error('Connection terminated unexpectedly');
    const wrapped = new Error(
      'PostgreSQL: the replication stream stopped (Connection terminated unexpectedly)',
      {
        cause: lost,
      },
    );
    for (const error of [lost, wrapped]) {
      const named = (await postgresRunFailure(error, config, context)) as Error;
      expect(codeOf(named)).toBe('SLUICE_ERR_SOURCE_UNREACHABLE');
      expect(named.message).toBe(error.message);
    }
  });

  it('any other error comes back as it was', async () => {
    const other = Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03' });
    expect(await postgresRunFailure(other, config, context)).toBe(other);
  });
});
