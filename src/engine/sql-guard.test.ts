import { describe, expect, it } from 'vitest';
import { fragmentProblem } from './sql-guard.js';

describe('SQL written by users', () => {
  it.each([
    ['String) ENGINE = Memory AS SELECT 1 --', 'comments'],
    ['String); DROP TABLE x', 'comments and ";"'],
    ["JSON) FROM file('/etc/passwd'", 'parenthesis closes'],
    ['toYYYYMM(ts', 'parenthesis is not closed'],
    ["Enum8('a", 'quote is not closed'],
    ['(SELECT 1)', 'not a query'],
    ["concat(file('/etc/hosts'))", 'reaches outside'],
  ])('refuses the fragment %s', (fragment, message) => {
    expect(fragmentProblem(fragment)).toContain(message);
  });

  it.each([
    "DateTime64(3, 'UTC')",
    "Enum8('a' = 1, 'b-c' = 2)",
    'Map(String, Array(Nullable(UInt64)))',
    'toYYYYMM(ts)',
    "status >= 500 AND path LIKE '/api/%'",
  ])('accepts the fragment %s', (fragment) => {
    expect(fragmentProblem(fragment)).toBeUndefined();
  });
});
