import { describe, expect, it } from 'vitest';
import { LuceneError, luceneToSql } from './lucene.js';

describe('luceneToSql', () => {
  it.each([
    ['status:500', "`status` = '500'"],
    ['service.name:"checkout api"', "`service`.`name` = 'checkout api'"],
    ['level:error AND status:500', "(`level` = 'error' AND `status` = '500')"],
    ['level:error status:500', "(`level` = 'error' AND `status` = '500')"],
    ['level:error OR level:fatal', "(`level` = 'error' OR `level` = 'fatal')"],
    ['NOT level:debug', "NOT `level` = 'debug'"],
    ['-level:debug', "NOT `level` = 'debug'"],
    [
      '(level:error OR level:fatal) AND NOT path:/health',
      "((`level` = 'error' OR `level` = 'fatal') AND NOT `path` = '/health')",
    ],
    ['path:/api/*', "toString(`path`) LIKE '/api/%'"],
    ['code:E?1', "toString(`code`) LIKE 'E_1'"],
    ['name:100%_done*', "toString(`name`) LIKE '100\\\\%\\\\_done%'"],
    ['trace:*', '`trace` IS NOT NULL'],
    ['latency:[100 TO 500]', "(`latency` >= '100' AND `latency` <= '500')"],
    ['latency:{100 TO *}', "(`latency` > '100')"],
    ['temp:>30', "`temp` > '30'"],
    ['temp:>=30', "`temp` >= '30'"],
    ['temp:<30.5', "`temp` < '30.5'"],
    ['temp:<=-4 AND host:a', "(`temp` <= '-4' AND `host` = 'a')"],
    // Dates: a time's colons escaped, or a range's ends quoted; the engine reads the literal as the column's type.
    ['day:{2026-11-20 TO 2026-11-23}', "(`day` > '2026-11-20' AND `day` < '2026-11-23')"],
    ['ts:>=2026-11-22T10\\:21\\:30', "`ts` >= '2026-11-22T10:21:30'"],
    [
      'ts:["2026-11-22 10:21:10" TO "2026-11-22 10:21:40"]',
      "(`ts` >= '2026-11-22 10:21:10' AND `ts` <= '2026-11-22 10:21:40')",
    ],
    ['', '1'],
  ])('%s', (query, sql) => {
    expect(luceneToSql(query)).toBe(sql);
  });

  it('escapes every value, so a value cannot leave its literal', () => {
    expect(luceneToSql(`name:"x' OR 1=1 --"`)).toBe("`name` = 'x\\' OR 1=1 --'");
    expect(luceneToSql('name:a\\\\b')).toBe("`name` = 'a\\\\b'");
  });

  it.each([
    ['error', 'needs a field'],
    ['level:', 'expected a value'],
    ['(level:error', 'parenthesis is not closed'],
    ['latency:[1 TO 2', 'not closed'],
    ['name:"open', 'quoted phrase is not closed'],
    ['`x`:1', 'not a field name'],
    ['level:error)', 'unexpected'],
  ])('refuses %s', (query, message) => {
    expect(() => luceneToSql(query)).toThrow(LuceneError);
    expect(() => luceneToSql(query)).toThrow(expect.objectContaining({ code: 'SLUICE_ERR_LUCENE_SYNTAX' }));
    expect(() => luceneToSql(query)).toThrow(message);
  });
});
