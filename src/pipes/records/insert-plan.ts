import { ident, literal } from '../../engine/index.js';

export interface InsertPlan {
  /** The structure the engine reads the file with: `name Type, ...`. */
  structure: string;
  /** `(col, ...)` of the destination. */
  columnList: string;
  /** `expr, ...` producing those columns from the file's fields. */
  selectList: string;
  /** The same, each named as its destination column (`expr AS col`). */
  namedSelectList: string;
  /**
   * Every destination column is the text's field of the same name, read as the column's own type
   * (no rename, cast or table function's virtual column): the service's engine can load the text
   * itself into `columnList` (BatchSink.loadText).
   */
  textIsTarget?: boolean;
}

interface Mapping {
  sourceField: string;
  destinationField: string;
}

/**
 * Field mappings and virtual columns done by the engine (docs/architecture.md, "Formats are the
 * engine's"): the file is read
 * with each mapped field typed as its destination column, so a value that does not fit is a parse
 * error of that row (isolated by the engine), and the insert renames and casts in its SELECT.
 * Formats without a header (CSV, TabSeparated) name their fields c1, c2, ... by position.
 */
export function insertPlan(
  mappings: Mapping[],
  columns: { name: string; type: string }[],
  options: {
    positional: boolean;
    virtualColumns: readonly string[];
    wholeRecord?: boolean;
    /**
     * Virtual columns written into each record as fields (Kafka's, beside the message's own),
     * read with these types; the others come from the table function (`_path`, `_file`).
     */
    virtualTypes?: Readonly<Record<string, string>>;
  },
): InsertPlan {
  const typeOf = new Map(columns.map((column) => [column.name, column.type]));
  const fields = new Map<string, string>();
  for (const mapping of mappings) {
    const virtualType = options.virtualTypes?.[mapping.sourceField];
    if (virtualType !== undefined) fields.set(mapping.sourceField, virtualType);
    if (options.virtualColumns.includes(mapping.sourceField)) continue;
    // JSONAsObject reads each record whole, as one value of type JSON (the engine allows no other).
    const type = options.wholeRecord ? 'JSON' : (typeOf.get(mapping.destinationField) ?? 'String');
    if (!fields.has(mapping.sourceField)) fields.set(mapping.sourceField, type);
  }
  const structure = options.positional
    ? positionalStructure(fields)
    : [...fields].map(([n, t]) => `${ident(n)} ${t}`);
  const selectList = mappings.map((mapping) => {
    const wanted = typeOf.get(mapping.destinationField) ?? 'String';
    const read = fields.get(mapping.sourceField);
    const source = ident(mapping.sourceField);
    // The type as a string literal: the source reader is not confined, so not even a stored type
    // that slipped past the engine's check could add SQL to what it runs.
    return read === undefined || read === wanted ? source : `CAST(${source}, ${literal(wanted)})`;
  });
  const textIsTarget =
    !options.positional &&
    !options.wholeRecord &&
    mappings.every(
      (mapping) =>
        mapping.sourceField === mapping.destinationField &&
        fields.get(mapping.sourceField) === (typeOf.get(mapping.destinationField) ?? 'String'),
    );
  return {
    textIsTarget,
    structure: structure.join(', '),
    columnList: `(${mappings.map((m) => ident(m.destinationField)).join(', ')})`,
    selectList: selectList.join(', '),
    namedSelectList: selectList
      .map((select, i) => `${select} AS ${ident(mappings[i]?.destinationField ?? '')}`)
      .join(', '),
  };
}

/** c1 .. cN up to the highest position mapped; unmapped positions are read as text. */
function positionalStructure(fields: Map<string, string>): string[] {
  const highest = Math.max(0, ...[...fields.keys()].map(positionOf));
  return Array.from({ length: highest }, (_, i) => `c${i + 1} ${fields.get(`c${i + 1}`) ?? 'String'}`);
}

export function positionOf(field: string): number {
  const match = /^c([1-9]\d{0,3})$/.exec(field);
  return match ? Number(match[1]) : Number.NaN;
}

export const POSITIONAL_FORMATS = ['CSV', 'TabSeparated'];
