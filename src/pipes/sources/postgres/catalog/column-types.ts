import { ident, literal } from '../../../../engine/index.js';

/** A column of a source table as the catalog describes it. */
export interface SourceColumn {
  name: string;
  /** pg_type.typname: int4, numeric, _int4 (an array), ... */
  type: string;
  /** pg_attribute.atttypid: what pgoutput's relation messages name the type by. */
  typeOid: number;
  /** For arrays, the element's typname. */
  element: string | null;
  /** pg_type.typtype: 'e' for enums. */
  kind: string;
  /** atttypmod: precision and scale of numeric. */
  typmod: number;
  notNull: boolean;
  /** attndims > 1: declared with several dimensions. */
  dimensions: number;
}

/**
 * How one column travels (README, "PostgreSQL types"): PostgreSQL sends its text form (COPY's
 * text format in the snapshot, pgoutput's text values for changes), the engine reads that text
 * with `read` and the insert turns it into `target` with `select`. Arrays travel as JSON, made by
 * PostgreSQL in the snapshot (`copy`) and from the text form for changes (`arrayText`).
 */
export interface ColumnPlan {
  name: string;
  target: string;
  read: string;
  select: string;
  copy: string;
  array: boolean;
  /**
   * The engine reads the column's PostgreSQL text as the target type itself, with
   * TARGET_TEXT_SETTINGS (table-plan.ts): no expression between the text and the target.
   */
  textIsTarget: boolean;
}

const DIRECT: Record<string, string> = {
  int2: 'Int16',
  int4: 'Int32',
  int8: 'Int64',
  oid: 'UInt32',
  float4: 'Float32',
  float8: 'Float64',
  date: 'Date32',
  timestamp: 'DateTime64(6)',
  timestamptz: "DateTime64(6, 'UTC')",
  uuid: 'UUID',
};

/** Element types whose arrays become an engine Array; other arrays keep PostgreSQL's text. */
const ARRAY_ELEMENTS: Record<string, string> = {
  int2: 'Int16',
  int4: 'Int32',
  int8: 'Int64',
  float4: 'Float32',
  float8: 'Float64',
  numeric: 'Decimal(76, 38)',
  bool: 'Bool',
  text: 'String',
  varchar: 'String',
  bpchar: 'String',
  uuid: 'UUID',
};

/** Array elements whose JSON carries them as strings, in the snapshot and in changes alike. */
const QUOTED_ELEMENTS = ['numeric', 'float4', 'float8'];

/** numeric(p, s) when it fits the engine's decimals, else the widest decimal with 38 places. */
function numericType(typmod: number): string {
  if (typmod < 4) return 'Decimal(76, 38)';
  const precision = ((typmod - 4) >> 16) & 0xffff;
  const scale = (typmod - 4) & 0xffff;
  return precision <= 76 && scale <= precision ? `Decimal(${precision}, ${scale})` : 'String';
}

/**
 * The plan of one column. `nullable`: the target keeps NULL (allowNullableColumns, a column
 * without NOT NULL, not in the sorting key); else a NULL becomes the type's default.
 */
export function columnPlan(column: SourceColumn, nullable: boolean): ColumnPlan {
  const name = ident(column.name);
  const wrap = (type: string) => (nullable ? `Nullable(${type})` : type);
  const plan = (
    target: string,
    read: string,
    select: string,
    textIsTarget = select === name && read === target,
  ): ColumnPlan => ({
    name: column.name,
    target,
    read,
    select,
    copy: `"${column.name.replace(/"/g, '""')}"`,
    array: false,
    textIsTarget,
  });
  const element = column.element === null ? undefined : ARRAY_ELEMENTS[column.element];
  if (element !== undefined && column.dimensions <= 1) {
    const target = `Array(${nullable ? `Nullable(${element})` : element})`;
    // Extracted with its NULL elements, which become the element's default without
    // allowNullableColumns (extracted as Array(T), an array of nothing but nulls would be []).
    const extracted = `JSONExtract(ifNull(${name}, '[]'), ${literal(`Array(Nullable(${element}))`)})`;
    const select = nullable
      ? extracted
      : `arrayMap(_pipe_item -> ifNull(_pipe_item, defaultValueOfTypeName(${literal(element)})), ${extracted})`;
    // Decimals and floats travel as JSON strings: the engine reads a JSON number as a double (a
    // numeric's digits beyond it are lost, -0 becomes 0).
    const quoted = `"${column.name.replace(/"/g, '""')}"`;
    return {
      ...plan(target, 'Nullable(String)', select),
      copy: `array_to_json(${QUOTED_ELEMENTS.includes(column.element ?? '') ? `${quoted}::text[]` : quoted})`,
      array: true,
      textIsTarget: false,
    };
  }
  const direct = DIRECT[column.type] ?? (column.type === 'numeric' ? numericType(column.typmod) : undefined);
  if (direct !== undefined) return plan(wrap(direct), wrap(direct), name);
  if (column.type === 'bool') {
    // PostgreSQL's t and f are the engine's own Bool text with TARGET_TEXT_SETTINGS.
    return plan(
      wrap('Bool'),
      wrap('String'),
      nullable ? `if(isNull(${name}), NULL, ${name} = 't')` : `${name} = 't'`,
      true,
    );
  }
  if (column.type === 'bytea')
    return plan(wrap('String'), wrap('String'), `unhex(substring(${name}, 3))`, false);
  // Text of every other kind (text, varchar, char, json, jsonb, time, interval, inet, cidr, enums,
  // multi-dimensional arrays, ...): PostgreSQL's own text form.
  return plan(wrap('String'), wrap('String'), name);
}

/**
 * The text a column's value had in the target, as PostgreSQL would send it (for an unchanged
 * TOAST value carried over from the row's last version): the inverse of `select`.
 */
export function textOfTarget(plan: ColumnPlan): string {
  const name = ident(plan.name);
  // Numbers the engine prints as JSON strings: a decimal's digits exactly, NaN and Infinity at all.
  if (plan.array && /Decimal|Float/.test(plan.target))
    return `toJSONString(arrayMap(_pipe_item -> toString(_pipe_item), ${name}))`;
  if (plan.array) return `toJSONString(${name})`;
  if (plan.select.startsWith('unhex(')) return `concat('\\\\x', lower(hex(${name})))`;
  if (plan.target.includes('String')) return name;
  return `toString(${name})`;
}

/**
 * PostgreSQL's text form of a one-dimensional array (`{1,NULL,"a b"}`, `[0:1]={1,2}` when it does
 * not start at 1) as the JSON the snapshot's `copy` gives: integers and booleans bare, the rest
 * (numeric and floats included) as strings.
 */
export function arrayTextToJson(text: string, element: string | null): string {
  const items = parseArrayText(text.replace(/^(\[-?\d+:-?\d+\])+=/, ''));
  if (items === undefined) return '[]';
  const bare = element !== null && ['int2', 'int4', 'int8'].includes(element);
  const json = items.map((item) => {
    if (item === null) return 'null';
    if (element === 'bool') return item === 't' ? 'true' : 'false';
    return bare && /^-?[\d.eE+-]+$/.test(item) ? item : JSON.stringify(item);
  });
  return `[${json.join(',')}]`;
}

/** The items of `{a,"b c",NULL}`; undefined for what is not a flat array literal. */
function parseArrayText(text: string): (string | null)[] | undefined {
  if (!text.startsWith('{') || !text.endsWith('}')) return undefined;
  const items: (string | null)[] = [];
  let at = 1;
  const end = text.length - 1;
  if (at === end) return items;
  while (at <= end) {
    let item = '';
    if (text[at] === '"') {
      at += 1;
      while (at < end && text[at] !== '"') {
        if (text[at] === '\\') at += 1;
        item += text[at];
        at += 1;
      }
      at += 1;
      items.push(item);
    } else {
      while (at < end && text[at] !== ',') {
        if (text[at] === '{') return undefined;
        item += text[at];
        at += 1;
      }
      items.push(item === 'NULL' ? null : item);
    }
    if (text[at] !== ',' && at !== end) return undefined;
    at += 1;
  }
  return items;
}
