import { describe, expect, it } from 'vitest';
import type { SourceTable } from '../catalog/index.js';
import { tablePlan } from '../catalog/index.js';
import { rowsOfChanges, rowsText } from './change-rows.js';
import type { Change, Transaction } from './change-stream.js';
import { UNCHANGED } from './pgoutput.js';

const column = (name: string, type: string, typeOid: number) => ({
  name,
  type,
  typeOid,
  element: null,
  kind: 'b',
  typmod: -1,
  notNull: true,
  dimensions: 0,
});
const twins: SourceTable = {
  schema: 'public',
  table: 'twins',
  oid: 1,
  columns: [column('a', 'int4', 23), column('b', 'text', 25)],
  estimatedRows: 0,
  blocks: 0,
  partitioned: false,
  descendants: [],
  unreadableColumns: [],
  primaryKey: [],
  replicaIdentity: 'f',
  identityIndex: [],
};
const plan = tablePlan({ sourceTable: 'twins', targetTable: 'twins' }, twins, {
  database: 'mirror',
  allowNullableColumns: false,
});
const relation = {
  oid: 1,
  schema: 'public',
  name: 'twins',
  replicaIdentity: 'f',
  columns: [
    { name: 'a', typeOid: 23, typmod: -1, key: true },
    { name: 'b', typeOid: 25, typmod: -1, key: true },
  ],
};
const transaction = (xid: number, changes: Change[]): Transaction => ({
  xid,
  finalLsn: 0n,
  endLsn: 0n,
  changes,
  receivedAt: 0,
  bytes: 0,
});
const insert = (lsn: bigint, a: string): Change => ({
  kind: 'insert',
  lsn,
  relation,
  row: [a, 'same'],
  old: null,
  oldIsKey: false,
});

describe('changes of a table without a key, row for row', () => {
  it('plans a target ordered by the row hash and id, with the hash made by the table', () => {
    expect(plan.keyless).toBe(true);
    expect(plan.spec.sortingKey).toEqual(['_pipe_row_hash', '_pipe_row_id']);
    expect(plan.spec.columns.at(-1)).toEqual({
      name: '_pipe_row_hash',
      type: 'UInt64',
      default: 'xxh3(tuple(`a`, `b`))',
    });
    expect(plan.copySelect).toMatch(/, ctid$/);
  });

  it('gives each inserted row an id of its own, rows at one WAL position (a multi-row insert) by their place', () => {
    const rows = rowsOfChanges(
      [transaction(7, [insert(100n, '1'), insert(100n, '1'), insert(100n, '1'), insert(101n, '1')])],
      () => plan,
    ).get('twins')?.rows;
    expect(rows?.map((row) => row.rowId)).toEqual(['100.0', '100.1', '100.2', '101.0']);
    expect(rowsText(rows ?? []).split('\n')[1]).toBe('1\tsame\t0\t100\t100.1');
  });

  it('a delete is a deleted version without an id (its twin is found later); an update both, its unchanged values the old row’s', () => {
    const rows = rowsOfChanges(
      [
        transaction(8, [
          { kind: 'delete', lsn: 200n, relation, row: null, old: ['1', 'same'], oldIsKey: false },
          { kind: 'update', lsn: 201n, relation, row: ['2', UNCHANGED], old: ['1', 'same'], oldIsKey: false },
        ]),
      ],
      () => plan,
    ).get('twins')?.rows;
    expect(rows).toEqual([
      { fields: ['1', 'same'], deleted: 1, version: 200n },
      { fields: ['1', 'same'], deleted: 1, version: 201n },
      { fields: ['2', 'same'], deleted: 0, version: 201n, rowId: '201.0' },
    ]);
  });

  it('skips the transactions a later snapshot of the table saw', () => {
    const tables = rowsOfChanges(
      [transaction(5, [insert(300n, '1')]), transaction(6, [insert(301n, '1')])],
      () => plan,
      (_plan, transaction) => transaction.xid === 5,
    );
    expect(tables.get('twins')?.rows.map((row) => row.rowId)).toEqual(['301.0']);
  });
});
