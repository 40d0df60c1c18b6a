import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import {
  POSTGRES_MAJORS,
  type PostgresMajor,
  postgresPipeBody,
  type RunningPostgres,
} from './support/postgres.js';
import { usePostgresAndSluice } from './support/postgres-sluice.js';
import { createPipe, sql, waitForState } from './support/runtime.js';
import type { TestSluice } from './support/sluice.js';
import { waitFor } from './support/wait.js';

// Every PostgreSQL type of the type map (src/pipes/sources/postgres/catalog/column-types.ts, README "PostgreSQL
// types") through a real PostgreSQL and a Sluice: rows copied by the snapshot (COPY's text) and
// rows written after it (pgoutput's text: inserts, updates, TOAST values an update left
// unchanged) must land with the values PostgreSQL reports, column by column, in a target with
// allowNullableColumns and in one without (where a NULL is the type's default). COLUMNS says what
// each type becomes in the target; the second test pins what happens to values the target types
// cannot hold.
//
// Each column is compared in one canonical text form, computed on both sides:
//   PostgreSQL                                  engine
//   integers, oid, bool, date, uuid:
//     col::text                                 toString(col)
//   numeric to Decimal:
//     trim_scale(col)::text                     toString(col) (no trailing zeros either)
//   real, double precision (NaN, ±Infinity, -0 included, every bit):
//     encode(float4send(col), 'hex')            the bits in hex, big-endian
//   timestamp, timestamptz:
//     to_char(col [AT TIME ZONE 'UTC'], 'YYYY-MM-DD HH24:MI:SS.US')
//                                               toString(col)
//   bytea:
//     encode(col, 'hex')                        lower(hex(col))
//   types kept as String (text, char(n) with its padding, json, jsonb, time, interval, inet, enums, ...):
//     the type's output text, as the session Sluice opens prints it (the client parses nothing)
//                                               col
//   arrays: a JSON array of each element's form above, NULL as null.

const SESSION = '-c TimeZone=UTC -c DateStyle=ISO -c IntervalStyle=postgres -c extra_float_digits=3';

let server: RunningPostgres;
let s: TestSluice;
let client: pg.Client;
let port: number;

/** A PostgreSQL of `major` with the `kinds` database, and a Sluice, for one describe's tests. */
function onPostgres(major: PostgresMajor): void {
  usePostgresAndSluice(async (started) => {
    ({ server, s } = started);
    const url = await server.createDatabase('kinds');
    // Every value as PostgreSQL's text: the client turns nothing into a JavaScript type.
    client = new pg.Client({
      connectionString: url,
      options: SESSION,
      types: { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig,
    });
    client.on('error', () => {});
    await client.connect();
    // A server whose default prints bytea as escapes: Sluice's sessions ask for hex whatever it says.
    await client.query(`ALTER DATABASE kinds SET bytea_output = 'escape'`);
    port = Number(new URL(url).port);
  }, major);

  afterAll(async () => {
    await client?.end().catch(() => {});
  });
}

/** How a value is compared: its canonical text in PostgreSQL and in the engine, and a NULL's default. */
interface Form {
  pg: (c: string) => string;
  ch: (c: string) => string;
  /** The canonical text of the value a NULL becomes without allowNullableColumns. */
  zero: string;
}

const FORMS = {
  int: { pg: (c) => `${c}::text`, ch: (c) => `toString(${c})`, zero: '0' },
  decimal: { pg: (c) => `trim_scale(${c})::text`, ch: (c) => `toString(${c})`, zero: '0' },
  float4: {
    pg: (c) => `encode(float4send(${c}), 'hex')`,
    ch: (c) => `if(isNull(${c}), NULL, leftPad(lower(hex(reinterpretAsUInt32(${c}))), 8, '0'))`,
    zero: '00000000',
  },
  float8: {
    pg: (c) => `encode(float8send(${c}), 'hex')`,
    ch: (c) => `if(isNull(${c}), NULL, leftPad(lower(hex(reinterpretAsUInt64(${c}))), 16, '0'))`,
    zero: '0000000000000000',
  },
  bool: { pg: (c) => `${c}::text`, ch: (c) => `toString(${c})`, zero: 'false' },
  date: { pg: (c) => `${c}::text`, ch: (c) => `toString(${c})`, zero: '1970-01-01' },
  timestamp: {
    pg: (c) => `to_char(${c}, 'YYYY-MM-DD HH24:MI:SS.US')`,
    ch: (c) => `toString(${c})`,
    zero: '1970-01-01 00:00:00.000000',
  },
  timestamptz: {
    pg: (c) => `to_char(${c} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')`,
    ch: (c) => `toString(${c})`,
    zero: '1970-01-01 00:00:00.000000',
  },
  uuid: {
    pg: (c) => `${c}::text`,
    ch: (c) => `toString(${c})`,
    zero: '00000000-0000-0000-0000-000000000000',
  },
  bytea: { pg: (c) => `encode(${c}, 'hex')`, ch: (c) => `lower(hex(${c}))`, zero: '' },
  // The type's output text (char(n) with its padding, inet without /32, ...); array elements
  // through concat, which keeps a char's padding as the output function does.
  string: { pg: (c) => c, ch: (c) => c, zero: '' },
  element: {
    pg: (c) => `CASE WHEN ${c} IS NULL THEN NULL ELSE concat(${c}) END`,
    ch: (c) => c,
    zero: '',
  },
} satisfies Record<string, Form>;

interface Column {
  name: string;
  declared: string;
  /** The target's type with allowNullableColumns; without, the same without Nullable. */
  target: string;
  form: Form;
  /** Arrays that become an engine Array: compared element by element. */
  array?: boolean;
}

const scalar = (name: string, declared: string, target: string, form: Form): Column => ({
  name,
  declared,
  target: `Nullable(${target})`,
  form,
});
const array = (name: string, declared: string, element: string, form: Form): Column => ({
  name,
  declared,
  target: `Array(Nullable(${element}))`,
  form,
  array: true,
});

const COLUMNS: Column[] = [
  scalar('c_int2', 'smallint', 'Int16', FORMS.int),
  scalar('c_int4', 'integer', 'Int32', FORMS.int),
  scalar('c_int8', 'bigint', 'Int64', FORMS.int),
  scalar('c_oid', 'oid', 'UInt32', FORMS.int),
  scalar('c_num', 'numeric(12,3)', 'Decimal(12, 3)', FORMS.decimal),
  scalar('c_num_any', 'numeric', 'Decimal(76, 38)', FORMS.decimal),
  scalar('c_num_wide', 'numeric(80,5)', 'String', FORMS.string),
  scalar('c_real', 'real', 'Float32', FORMS.float4),
  scalar('c_double', 'double precision', 'Float64', FORMS.float8),
  scalar('c_text', 'text', 'String', FORMS.string),
  scalar('c_varchar', 'varchar(20)', 'String', FORMS.string),
  scalar('c_char', 'char(5)', 'String', FORMS.string),
  scalar('c_bool', 'boolean', 'Bool', FORMS.bool),
  scalar('c_date', 'date', 'Date32', FORMS.date),
  scalar('c_ts', 'timestamp', 'DateTime64(6)', FORMS.timestamp),
  scalar('c_tstz', 'timestamptz', "DateTime64(6, 'UTC')", FORMS.timestamptz),
  scalar('c_time', 'time', 'String', FORMS.string),
  scalar('c_timetz', 'timetz', 'String', FORMS.string),
  scalar('c_interval', 'interval', 'String', FORMS.string),
  scalar('c_uuid', 'uuid', 'UUID', FORMS.uuid),
  scalar('c_json', 'json', 'String', FORMS.string),
  scalar('c_jsonb', 'jsonb', 'String', FORMS.string),
  scalar('c_bytea', 'bytea', 'String', FORMS.bytea),
  scalar('c_inet', 'inet', 'String', FORMS.string),
  scalar('c_cidr', 'cidr', 'String', FORMS.string),
  scalar('c_macaddr', 'macaddr', 'String', FORMS.string),
  scalar('c_mood', 'mood', 'String', FORMS.string),
  scalar('c_domain', 'positive', 'String', FORMS.string),
  scalar('c_range', 'int4range', 'String', FORMS.string),
  scalar('c_money', 'money', 'String', FORMS.string),
  array('a_int2', 'smallint[]', 'Int16', FORMS.int),
  array('a_int4', 'integer[]', 'Int32', FORMS.int),
  array('a_int8', 'bigint[]', 'Int64', FORMS.int),
  array('a_real', 'real[]', 'Float32', FORMS.float4),
  array('a_double', 'double precision[]', 'Float64', FORMS.float8),
  array('a_num', 'numeric[]', 'Decimal(76, 38)', FORMS.decimal),
  array('a_bool', 'boolean[]', 'Bool', FORMS.bool),
  array('a_text', 'text[]', 'String', FORMS.element),
  array('a_varchar', 'varchar(10)[]', 'String', FORMS.element),
  array('a_char', 'char(3)[]', 'String', FORMS.element),
  array('a_uuid', 'uuid[]', 'UUID', FORMS.uuid),
  // Arrays of other elements, and arrays declared with several dimensions: PostgreSQL's text.
  scalar('a_date', 'date[]', 'String', FORMS.string),
  scalar('a_int4_2d', 'integer[][]', 'String', FORMS.string),
  scalar('a_jsonb', 'jsonb[]', 'String', FORMS.string),
  scalar('a_mood', 'mood[]', 'String', FORMS.string),
  scalar('a_tstz', 'timestamptz[]', 'String', FORMS.string),
  // NOT NULL: never Nullable in the target.
  { name: 'n_text', declared: "text NOT NULL DEFAULT ''", target: 'String', form: FORMS.string },
];

type Row = Partial<Record<string, string | null>>;

/** An array literal with every element quoted (PostgreSQL's input, whatever the element holds). */
const arr = (items: (string | null)[]) =>
  `{${items.map((item) => (item === null ? 'NULL' : `"${item.replace(/[\\"]/g, '\\$&')}"`)).join(',')}}`;

const TRICKY = [
  'tab\there',
  'new\nline and crlf\r\n',
  'back\\slash \\N \\t \\\\',
  `'single' "double" \`back\``,
  'é 中文 😀 e\u0301 \u00a0 \u2028',
  'control \b \f \v \u0001 \u001f',
  '{braces}, [brackets]',
].join(' | ');

function randomText(length: number): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \t\n\\"\'é中😀';
  const chars = [...alphabet];
  const bytes = randomBytes(length);
  let text = '';
  for (const byte of bytes) text += chars[byte % chars.length];
  return text;
}

const digits = (n: number) => [...randomBytes(n)].map((b) => String(b % 10)).join('');

function randomDouble(): string {
  const value = randomBytes(8).readDoubleBE(0);
  return Number.isNaN(value) ? 'NaN' : String(value);
}

/** Values large enough to be TOASTed (stored out of line, not compressible). */
function bigRow(): Row {
  return {
    c_int4: '1',
    c_text: randomText(40_000),
    c_bytea: `\\x${randomBytes(20_000).toString('hex')}`,
    c_json: JSON.stringify(
      Array.from({ length: 400 }, () => randomText(30)),
      null,
      1,
    ),
    c_jsonb: JSON.stringify(
      Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`k${i}`, randomText(30)])),
    ),
    c_num_wide: `${digits(70)}.${digits(5)}`,
    a_int8: arr(Array.from({ length: 1000 }, () => randomBytes(8).readBigInt64BE(0).toString())),
    a_double: arr([
      ...Array.from({ length: 1000 }, randomDouble),
      'NaN',
      'Infinity',
      '-Infinity',
      '-0',
      null,
    ]),
    a_real: arr([...Array.from({ length: 1000 }, () => String(randomBytes(4).readFloatBE(0))), 'NaN', null]),
    a_num: arr(
      Array.from({ length: 1500 }, (_, i) =>
        i % 50 === 0 ? null : `${i % 2 ? '-' : ''}${digits(25)}.${digits(20)}`,
      ),
    ),
    a_text: arr(Array.from({ length: 1000 }, (_, i) => (i % 100 === 0 ? null : randomText(25)))),
    a_uuid: arr(Array.from({ length: 400 }, () => randomUUID())),
    a_date: arr(
      Array.from({ length: 300 }, (_, i) => `20${String(i % 100).padStart(2, '0')}-01-0${(i % 9) + 1}`),
    ),
  };
}

/** The rows, by id; the same values go through the snapshot (id), an insert (id + 100), an update (id + 200). */
const ROWS: Record<number, Row> = {
  1: {
    c_int2: '12',
    c_int4: '123456',
    c_int8: '1234567890123',
    c_oid: '4000000000',
    c_num: '1234.5',
    c_num_any: '12345678901234567890.123456789012345678',
    c_num_wide: '123.45',
    c_real: '1.1',
    c_double: '3.141592653589793',
    c_text: 'hello',
    c_varchar: 'world',
    c_char: 'ab',
    c_bool: 'true',
    c_date: '2024-02-29',
    c_ts: '2024-02-29 13:14:15.123456',
    c_tstz: '2024-02-29 13:14:15.5+05:30',
    c_time: '12:30:00',
    c_timetz: '12:30:00.25+05:30',
    c_interval: '1 year 2 mons 3 days 04:05:06.789',
    c_uuid: 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
    c_json: '{"b": 1,  "a": [1, 2.50, "x"]}',
    c_jsonb: '{"b": 1,  "a": [1, 2.50, "x"]}',
    c_bytea: '\\xdeadbeef00ff',
    c_inet: '192.168.0.1',
    c_cidr: '10.0.0.0/8',
    c_macaddr: '08:00:2b:01:02:03',
    c_mood: 'happy',
    a_int2: '{1,-2,3}',
    a_int4: '{1,2,3}',
    a_int8: '{9223372036854775807,-9223372036854775808}',
    a_real: '{1.1,2.5,3.4028235e+38}',
    a_double: '{3.141592653589793,1e+100,-2.2250738585072014e-308}',
    a_num: '{1.50,12345678901234567890.123456789012345678,-0.00000000000000000000000000000000000001}',
    a_bool: '{t,f}',
    a_text: '{a,"b c"}',
    a_varchar: '{x,y}',
    a_char: '{ab,c}',
    a_uuid: '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11,00000000-0000-0000-0000-000000000000}',
    a_date: '{2024-01-01,2024-12-31}',
    a_int4_2d: '{{1,2},{3,4}}',
    c_domain: '42',
    c_range: '[1,10)',
    c_money: '12.34',
    a_jsonb: arr(['{"b": 1,  "a": [1, 2.50]}', '"x"', null]),
    a_mood: '{happy,sad}',
    a_tstz: arr(['2024-02-29 13:14:15.5+05:30', null]),
    n_text: 'typical',
  },
  2: {
    c_int2: '-32768',
    c_int4: '-2147483648',
    c_int8: '-9223372036854775808',
    c_oid: '0',
    c_num: '-999999999.999',
    c_num_any: '-0.00000000000000000000000000000000000001',
    c_num_wide: '-12345678901234567890123456789012345678901234567890123456789012345678901234.56789',
    c_real: '3.4028235e+38',
    c_double: '-1.7976931348623157e+308',
    c_text: 'x'.repeat(300),
    c_varchar: 'twenty characters!!!',
    c_char: 'abcde',
    c_bool: 'false',
    c_date: '1900-01-01',
    c_ts: '1900-01-01 00:00:00',
    c_tstz: '2299-12-31 23:59:59.999999+00',
    c_time: '23:59:59.999999',
    c_timetz: '00:00:00-12',
    c_interval: '-177999999 years -1 mons -00:00:00.000001',
    c_uuid: 'ffffffff-ffff-ffff-ffff-ffffffffffff',
    c_json: '[]',
    c_jsonb: '{"a":{"b":[null,true,false,1e-5,12345678901234567890]}}',
    c_bytea: '\\x00',
    c_inet: '::1',
    c_cidr: '2001:db8::/32',
    c_macaddr: 'ff:ff:ff:ff:ff:ff',
    c_mood: 'sad',
    a_int2: '{32767,-32768}',
    a_int4: '{2147483647,-2147483648}',
    a_int8: '{0}',
    a_real: '{1.4e-45,-3.4028235e+38}',
    a_double: '{4.9e-324,1.7976931348623157e+308}',
    a_num: '{99999999999999999999999999999999999999.99999999999999999999999999999999999999}',
    a_bool: '{f}',
    a_text: arr([TRICKY]),
    a_varchar: '{0123456789}',
    a_char: '{abc}',
    a_uuid: '{ffffffff-ffff-ffff-ffff-ffffffffffff}',
    a_date: '{}',
    a_int4_2d: '{{{1}}}',
    c_domain: '2147483647',
    c_range: 'empty',
    c_money: '-92233720368547758.08',
    a_mood: arr(['it\'s "complicated", \\ isn\'t it', null]),
    a_tstz: '{infinity,-infinity}',
    n_text: 'extremes',
  },
  3: {
    c_real: 'NaN',
    c_double: 'Infinity',
    a_real: '{NaN,Infinity,-Infinity,-0}',
    a_double: '{NaN,-Infinity,Infinity,-0}',
    n_text: 'special floats',
  },
  4: { c_real: '-Infinity', c_double: 'NaN', n_text: 'special floats' },
  5: { c_real: '-0', c_double: '-0', c_num: '0', c_num_any: '0', c_int4: '0', n_text: 'zeroes' },
  6: {
    c_text: TRICKY,
    c_varchar: 'a\tb\\c"d\'é😀\n',
    c_char: '\t"\\é',
    c_json: '"tab\\t é \\\\ \\" \\u00e9"',
    c_jsonb: '{"k": "line\\nbreak é \\\\ \\" \\u00e9 😀"}',
    c_bytea: `\\x${Buffer.from('\t\n\\\r\0é').toString('hex')}`,
    c_mood: 'it\'s "complicated", \\ isn\'t it',
    a_text: arr([
      '',
      'NULL',
      null,
      'null',
      'a,b',
      '{x}',
      'quote"s',
      'back\\slash',
      ' spaces ',
      'tab\there',
      'new\nline',
      'é😀',
    ]),
    a_varchar: arr(['', null, 'NULL', ' ', '"', '\\']),
    a_char: arr(['a', '', null, ' b', '"']),
    a_date: arr([null, '2024-01-01']),
    n_text: TRICKY,
  },
  7: {
    c_text: '',
    c_varchar: '',
    c_char: '',
    c_bytea: '\\x',
    c_json: '""',
    c_jsonb: '{}',
    c_time: '00:00:00',
    c_interval: '0',
    a_int2: '{}',
    a_int4: '{}',
    a_int8: '{}',
    a_real: '{}',
    a_double: '{}',
    a_num: '{}',
    a_bool: '{}',
    a_text: '{}',
    a_varchar: '{}',
    a_char: '{}',
    a_uuid: '{}',
    a_date: '{}',
    a_int4_2d: '{}',
    a_jsonb: '{}',
    a_mood: '{}',
    a_tstz: '{}',
    n_text: '',
  },
  // Every nullable column NULL.
  8: { n_text: 'nulls' },
  9: {
    a_int2: '{NULL}',
    a_int4: '{1,NULL,3}',
    a_int8: '{NULL,NULL}',
    a_real: '{NULL,1}',
    a_double: '{NULL}',
    a_num: '{NULL,0,1.000}',
    a_bool: '{NULL,t}',
    a_text: '{NULL}',
    a_varchar: '{NULL}',
    a_char: '{NULL}',
    a_uuid: '{NULL,a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}',
    n_text: 'null elements',
  },
  // Arrays with other lower bounds than 1: their text starts with the bounds ([0:2]={...}).
  10: {
    a_int4: '[0:2]={7,8,9}',
    a_text: '[-1:0]={x,"y z"}',
    a_num: '[5:5]={2.5}',
    a_bool: '[0:0]={t}',
    a_int4_2d: '[0:1][1:1]={{1},{2}}',
    n_text: 'lower bounds',
  },
  11: bigRow(),
};

const IDS = Object.keys(ROWS).map(Number);
const names = COLUMNS.map((column) => column.name);

async function insert(id: number, row: Row): Promise<void> {
  const values = names.map((name) => (name === 'n_text' ? (row[name] ?? '') : (row[name] ?? null)));
  const params = names.map((_, i) => `$${i + 2}`).join(', ');
  await client.query(`INSERT INTO kinds (id, ${names.join(', ')}) VALUES ($1, ${params})`, [id, ...values]);
}

type Values = Record<string, unknown>;

/** Each row of the source in the canonical forms, by id. */
async function sourceRows(): Promise<Map<number, Values>> {
  const selects = COLUMNS.map((column) =>
    column.array
      ? `(SELECT coalesce(json_agg(${column.form.pg('x')} ORDER BY n), '[]')::text FROM unnest(${column.name}) WITH ORDINALITY AS u(x, n)) AS ${column.name}`
      : `${column.form.pg(column.name)} AS ${column.name}`,
  );
  const result = await client.query(`SELECT id, ${selects.join(', ')} FROM kinds ORDER BY id`);
  return new Map(result.rows.map((row) => [Number(row.id), parsed(row)]));
}

/**
 * The columns the third target keeps: without arrays and bytea, the engine reads every column's
 * PostgreSQL text as its target type itself (the other two go through the source reader).
 */
const TEXT_COLUMNS = COLUMNS.filter((column) => !column.array && column.form !== FORMS.bytea);
const EXCLUDED = COLUMNS.filter((column) => !TEXT_COLUMNS.includes(column)).map((column) => column.name);

/** A pipe of `table` into `destination` with allowNullableColumns, without the `excluded` columns. */
function pipeExcluding(table: string, excluded: string[], destination: string) {
  const body = postgresPipeBody('kinds', port, [table], { allowNullableColumns: true }, { destination });
  body.source.postgres.tableMappings = [
    { sourceTable: table, targetTable: table, excludedColumns: excluded } as never,
  ];
  return { ...body, name: `pg ${table} without ${excluded.length} columns` };
}

/** Each row of a target in the canonical forms, by id. */
async function targetRows(database: string, columns = COLUMNS): Promise<Map<number, Values>> {
  const selects = columns.map((column) =>
    column.array
      ? `toJSONString(arrayMap(x -> ${column.form.ch('x')}, ${column.name})) AS ${column.name}`
      : `${column.form.ch(column.name)} AS ${column.name}`,
  );
  const rows = await sql(
    s,
    `SELECT toString(id) AS id, ${selects.join(', ')} FROM ${database}.kinds FINAL WHERE _pipe_is_deleted = 0`,
  );
  return new Map(rows.map((row) => [Number(row.id), parsed(row, columns)]));
}

function parsed(row: Values, columns = COLUMNS): Values {
  const values: Values = {};
  for (const column of columns) {
    const value = row[column.name];
    values[column.name] = column.array && typeof value === 'string' ? JSON.parse(value) : value;
  }
  return values;
}

/** The source's values as a target without allowNullableColumns holds them: NULL is the default. */
function withoutNulls(rows: Map<number, Values>): Map<number, Values> {
  return new Map(
    [...rows].map(([id, row]) => [
      id,
      Object.fromEntries(
        COLUMNS.map((column) => {
          const value = row[column.name];
          if (column.array) return [column.name, (value as unknown[]).map((v) => v ?? column.form.zero)];
          return [column.name, value ?? column.form.zero];
        }),
      ),
    ]),
  );
}

const short = (value: unknown) => {
  const text = JSON.stringify(value) ?? 'undefined';
  return text.length > 300 ? `${text.slice(0, 300)}... (${text.length} characters)` : text;
};

/** Where the target differs from what is expected: one line per row and column. */
function differences(
  expected: Map<number, Values>,
  actual: Map<number, Values>,
  columns = COLUMNS,
): string[] {
  const found: string[] = [];
  for (const id of new Set([...expected.keys(), ...actual.keys()])) {
    const want = expected.get(id);
    const got = actual.get(id);
    if (!want || !got) {
      found.push(`row ${id}: ${want ? 'missing from the target' : 'not in the source'}`);
      continue;
    }
    for (const column of columns) {
      const [a, b] = [JSON.stringify(want[column.name]), JSON.stringify(got[column.name])];
      if (a !== b) {
        found.push(
          `row ${id} ${column.name}: postgres ${short(want[column.name])}, target ${short(got[column.name])}`,
        );
      }
    }
  }
  return found;
}

/** Waits for both targets to hold the source's rows, then says where they differ (nowhere, if right). */
async function compare(what: string): Promise<{ nullable: string[]; plain: string[]; text: string[] }> {
  const source = await sourceRows();
  const plainSource = withoutNulls(source);
  const check = async () => ({
    nullable: differences(source, await targetRows('mirror_kinds')),
    plain: differences(plainSource, await targetRows('mirror_kinds_plain')),
    text: differences(source, await targetRows('mirror_kinds_text', TEXT_COLUMNS), TEXT_COLUMNS),
  });
  // Waits until the rows are all there and the differences stay the same for ten seconds (a
  // value that comes wrong stays wrong), then reports them.
  let last = '';
  let steady = 0;
  await waitFor(
    what,
    async () => {
      const now = await check();
      const text = JSON.stringify(now);
      steady = text === last ? steady + 1 : 0;
      last = text;
      const all = [...now.nullable, ...now.plain, ...now.text];
      if (all.length === 0) return true;
      const missing = all.some((d) => d.includes('missing'));
      return !missing && steady >= 10 ? true : undefined;
    },
    90_000,
    1000,
  ).catch(() => {});
  return check();
}

describe.each(POSTGRES_MAJORS)('postgres types on PostgreSQL %i', (major) => {
  onPostgres(major);

  it('every type of the map lands with the values PostgreSQL reports, from the snapshot and from changes', async () => {
    await client.query(
      `CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy', 'it''s "complicated", \\ isn''t it')`,
    );
    await client.query('CREATE DOMAIN positive AS integer CHECK (VALUE > 0)');
    await client.query(
      `CREATE TABLE kinds (id int PRIMARY KEY, ${COLUMNS.map((c) => `${c.name} ${c.declared}`).join(', ')})`,
    );
    for (const id of IDS) await insert(id, ROWS[id] ?? {});

    const nullable = await createPipe(
      s,
      postgresPipeBody(
        'kinds',
        port,
        ['kinds'],
        { allowNullableColumns: true },
        { name: 'pg kinds', destination: 'mirror_kinds' },
      ),
    );
    const plain = await createPipe(
      s,
      postgresPipeBody(
        'kinds',
        port,
        ['kinds'],
        {},
        { name: 'pg kinds plain', destination: 'mirror_kinds_plain' },
      ),
    );
    const text = await createPipe(s, pipeExcluding('kinds', EXCLUDED, 'mirror_kinds_text'));
    await waitForState(s, nullable, 'Running', 120_000);
    await waitForState(s, plain, 'Running', 120_000);
    await waitForState(s, text, 'Running', 120_000);

    // The target's columns: the documented map.
    const columnTypes = async (database: string) =>
      Object.fromEntries(
        (
          await sql(
            s,
            `SELECT name, type FROM system.columns WHERE database = '${database}' AND table = 'kinds' ORDER BY position`,
          )
        ).map((r) => [r.name, r.type]),
      );
    const extra = { _pipe_synced_at: 'DateTime64(9)', _pipe_is_deleted: 'UInt8', _pipe_version: 'Int64' };
    expect(await columnTypes('mirror_kinds')).toEqual({
      id: 'Int32',
      ...Object.fromEntries(COLUMNS.map((c) => [c.name, c.target])),
      ...extra,
    });
    expect(await columnTypes('mirror_kinds_plain')).toEqual({
      id: 'Int32',
      ...Object.fromEntries(
        COLUMNS.map((c) => [c.name, c.target.replace(/Nullable\(([^()]*(\([^()]*\))?)\)/, '$1')]),
      ),
      ...extra,
    });

    // The snapshot.
    expect(await compare('the snapshot')).toEqual({ nullable: [], plain: [], text: [] });

    // Changes: the same values inserted (id + 100), and written by an update over a row of NULLs
    // (id + 200).
    for (const id of IDS) await insert(id + 100, ROWS[id] ?? {});
    for (const id of IDS) {
      await insert(id + 200, { n_text: 'to be updated' });
      await client.query(
        `UPDATE kinds SET (${names.join(', ')}) = (SELECT ${names.join(', ')} FROM kinds WHERE id = $1) WHERE id = $2`,
        [id, id + 200],
      );
    }
    expect(await compare('the inserts and updates')).toEqual({ nullable: [], plain: [], text: [] });

    // Updates that leave the TOASTed values unchanged (pgoutput does not send them: they come from
    // the target), and updates of every row copied by the snapshot.
    await client.query('UPDATE kinds SET c_int4 = c_int4 + 1 WHERE id IN (11, 111, 211)');
    await client.query(`UPDATE kinds SET n_text = n_text || '!' WHERE id < 100`);
    expect(await compare('the updates')).toEqual({ nullable: [], plain: [], text: [] });

    // Rows the engine loaded itself are stamped when they load, as the source reader stamps its own.
    const stamps = await sql(
      s,
      `SELECT min(_pipe_synced_at) > now() - INTERVAL 1 HOUR AS recent FROM mirror_kinds_text.kinds`,
    );
    expect(Number(stamps[0]?.recent)).toBe(1);
    for (const database of ['mirror_kinds', 'mirror_kinds_plain', 'mirror_kinds_text']) {
      const errors = await sql(
        s,
        `SELECT count() AS n FROM system.tables WHERE database = '${database}' AND name = 'kinds_pipes_error'`,
      );
      if (Number(errors[0]?.n) > 0) {
        expect(await sql(s, `SELECT source, error FROM ${database}.kinds_pipes_error`)).toEqual([]);
      }
    }
  }, 420_000);

  it('values the target types cannot hold are clamped, cut or set aside, the same from the snapshot and from changes', async () => {
    const columns = ['d', 'ts', 'tstz', 'n', 'na', 'ia', 'fa'];
    await client.query(
      'CREATE TABLE edges (id int PRIMARY KEY, d date, ts timestamp, tstz timestamptz, n numeric, na numeric[], ia int[], fa float8[])',
    );
    // What each row's values become (canonical forms as above; a column not named is NULL), or
    // `aside` for a row the engine cannot read: it goes to edges_pipes_error.
    const cases: { id: number; row: Row; lands: Values | 'aside' }[] = [
      // date is Date32: clamped to 1900-01-01 .. 2299-12-31. DateTime64 keeps these.
      {
        id: 1,
        row: { d: '1800-01-01', ts: '1800-01-01 00:00:00', tstz: '1800-01-01 00:00:00+00' },
        lands: { d: '1900-01-01', ts: '1800-01-01 00:00:00.000000', tstz: '1800-01-01 00:00:00.000000' },
      },
      {
        id: 2,
        row: { d: '2400-01-01', ts: '9999-12-31 23:59:59.999999', tstz: '0001-01-01 00:00:00+00' },
        lands: { d: '2299-12-31', ts: '9999-12-31 23:59:59.999999', tstz: '0001-01-01 00:00:00.000000' },
      },
      // More than 38 decimal places in a numeric without precision: cut (not rounded) to 38.
      {
        id: 3,
        row: {
          n: '1.123456789012345678901234567890123456789999',
          na: '{1.123456789012345678901234567890123456789999}',
        },
        lands: {
          n: '1.12345678901234567890123456789012345678',
          na: ['1.12345678901234567890123456789012345678'],
        },
      },
      // Array elements Decimal cannot hold are NULL (their default without allowNullableColumns);
      // an array with no element it can hold is []. float arrays keep NaN and the infinities.
      {
        id: 4,
        row: { na: '{NaN,1.5,Infinity}', fa: '{NaN,Infinity,-Infinity,-0}' },
        lands: { na: [null, '1.5', null], fa: ['nan', 'inf', '-inf', '-0'] },
      },
      { id: 5, row: { na: '{NaN}' }, lands: { na: [] } },
      // A value of several dimensions in a column declared with one: lost ([]).
      { id: 6, row: { ia: '{{1,2},{3,4}}' }, lands: { ia: [] } },
      { id: 7, row: { d: 'infinity' }, lands: 'aside' },
      { id: 8, row: { ts: '-infinity' }, lands: 'aside' },
      { id: 9, row: { tstz: 'infinity' }, lands: 'aside' },
      { id: 10, row: { d: '0044-03-15 BC' }, lands: 'aside' },
      { id: 11, row: { n: 'NaN' }, lands: 'aside' },
      { id: 12, row: { n: 'Infinity' }, lands: 'aside' },
      // More than 38 digits before the point.
      { id: 13, row: { n: '123456789012345678901234567890123456789' }, lands: 'aside' },
    ];
    const insertEdge = (id: number, row: Row) =>
      client.query(
        `INSERT INTO edges (id, ${columns.join(', ')}) VALUES ($1, ${columns.map((_, i) => `$${i + 2}`).join(', ')})`,
        [id, ...columns.map((c) => row[c] ?? null)],
      );
    for (const { id, row } of cases) await insertEdge(id, row);
    const pipe = await createPipe(
      s,
      postgresPipeBody(
        'kinds',
        port,
        ['edges'],
        { allowNullableColumns: true },
        { name: 'pg edges', destination: 'mirror_edges' },
      ),
    );
    // Without the arrays the engine reads the rows' text itself: a value it cannot take sends the
    // batch through the source reader, which sets that row aside as for the first pipe.
    const arrays = ['na', 'ia', 'fa'];
    const textPipe = await createPipe(s, pipeExcluding('edges', arrays, 'mirror_edges_text'));
    await waitForState(s, pipe, 'Running', 120_000);
    await waitForState(s, textPipe, 'Running', 120_000);
    for (const { id, row } of cases) await insertEdge(id + 100, row);

    const landed = cases.filter((c) => c.lands !== 'aside');
    const expected = [...landed, ...landed.map((c) => ({ ...c, id: c.id + 100 }))]
      .sort((a, b) => a.id - b.id)
      .map(({ id, lands }) => ({
        id: String(id),
        ...Object.fromEntries(columns.map((c) => [c, ['na', 'ia', 'fa'].includes(c) ? [] : null])),
        ...(lands as Values),
      }));
    const aside = cases
      .filter((c) => c.lands === 'aside')
      .flatMap((c) => [c.id, c.id + 100])
      .sort((a, b) => a - b);
    const target = async (database: string, withArrays: boolean) => ({
      rows: (
        await sql(
          s,
          `SELECT toString(id) AS id, toString(d) AS d, toString(ts) AS ts, toString(tstz) AS tstz, toString(n) AS n
                  ${withArrays ? ', toJSONString(arrayMap(x -> toString(x), na)) AS na, toJSONString(arrayMap(x -> toString(x), ia)) AS ia, toJSONString(arrayMap(x -> toString(x), fa)) AS fa' : ''}
             FROM ${database}.edges FINAL WHERE _pipe_is_deleted = 0 ORDER BY toInt32(id)`,
        )
      ).map((r) =>
        withArrays
          ? { ...r, na: JSON.parse(String(r.na)), ia: JSON.parse(String(r.ia)), fa: JSON.parse(String(r.fa)) }
          : r,
      ),
      aside: (
        await sql(
          s,
          `SELECT toInt32(splitByChar(char(9), raw)[1]) AS id FROM ${database}.edges_pipes_error ORDER BY id`,
        )
      ).map((r) => Number(r.id)),
    });
    const withoutArrays = expected.map((row) =>
      Object.fromEntries(Object.entries(row).filter(([column]) => !arrays.includes(column))),
    );
    for (const [database, withArrays] of [
      ['mirror_edges', true],
      ['mirror_edges_text', false],
    ] as const) {
      await waitFor(
        `the edge rows in ${database}`,
        async () => {
          const now = await target(database, withArrays).catch(() => undefined);
          return now && now.rows.length === expected.length && now.aside.length === aside.length;
        },
        60_000,
        500,
      ).catch(() => {});
      expect(await target(database, withArrays)).toEqual({
        rows: withArrays ? expected : withoutArrays,
        aside,
      });
    }
    expect(s.logs.some((line) => line.includes("the engine could not load PostgreSQL's text itself"))).toBe(
      true,
    );
  }, 300_000);
});
