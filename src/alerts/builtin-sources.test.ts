import { describe, expect, it } from 'vitest';
import type { Service } from '../store/index.js';
import { BuiltInSources } from './builtin-sources.js';

describe('the built-in sources make their table again', () => {
  it('at most once a minute per service, so a table an admin dropped comes back without a batch', async () => {
    let now = 0;
    const made: string[] = [];
    const sources = new BuiltInSources(
      {
        databaseName: '_sluice_history',
        tableName: 'pipe_minutes',
        timestampExpression: 'minute',
        prepare: async (service) => {
          made.push(service.id);
        },
      },
      () => now,
    );
    const one = { id: 'one' } as Service;
    await sources.prepare(one);
    now = 59_000;
    await sources.prepare(one);
    await sources.prepare({ id: 'two' } as Service);
    expect(made).toEqual(['one', 'two']);
    now = 60_000;
    await sources.prepare(one);
    expect(made).toEqual(['one', 'two', 'one']);
  });
});
