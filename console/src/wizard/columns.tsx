import { DataTable } from '../components/table.js';
import type { ColumnChoice, TableChoice } from './model.js';

/** The first records as the engine read them, and the columns inferred from them, editable. */
export function ColumnEditor(props: {
  records: Record<string, unknown>[];
  columns: ColumnChoice[];
  onChange: (columns: ColumnChoice[]) => void;
  problem: string | undefined;
}) {
  const update = (index: number, change: Partial<ColumnChoice>) =>
    props.onChange(props.columns.map((c, i) => (i === index ? { ...c, ...change } : c)));
  return (
    <>
      <h2>Preview</h2>
      <DataTable
        rows={props.records}
        columns={props.columns.map((c) => c.sourceField)}
        empty="The source answered no records to show."
      />
      <h2>Columns</h2>
      <p class="muted">
        Inferred by the engine from the records above. Rename a column, change its type, or leave it out.
      </p>
      <table class="columns">
        <thead>
          <tr>
            <th>Keep</th>
            <th>Source field</th>
            <th>Column</th>
            <th>Type</th>
          </tr>
        </thead>
        <tbody>
          {props.columns.map((column, index) => (
            <tr key={column.sourceField} data-field={column.sourceField}>
              <td>
                <input
                  type="checkbox"
                  aria-label={`Keep ${column.sourceField}`}
                  checked={column.include}
                  onChange={(e) => update(index, { include: e.currentTarget.checked })}
                />
              </td>
              <td>{column.sourceField}</td>
              <td>
                <input
                  aria-label={`Column name of ${column.sourceField}`}
                  value={column.name}
                  onInput={(e) => update(index, { name: e.currentTarget.value })}
                />
              </td>
              <td>
                <input
                  aria-label={`Type of ${column.sourceField}`}
                  value={column.type}
                  onInput={(e) => update(index, { type: e.currentTarget.value })}
                />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {props.problem && <p class="field-error">{props.problem}</p>}
    </>
  );
}

/** The new table: where it goes, its engine, sorting key and partitioning. */
export function TableDefinition(props: {
  table: TableChoice;
  columns: string[];
  onChange: (table: TableChoice) => void;
  problem: (path: string) => string | undefined;
  withColumns: boolean;
}) {
  const { table } = props;
  const set = (change: Partial<TableChoice>) => props.onChange({ ...table, ...change });
  const toggleKey = (column: string, on: boolean) =>
    set({ sortingKey: on ? [...table.sortingKey, column] : table.sortingKey.filter((c) => c !== column) });
  return (
    <div class="form-grid">
      <label>
        Database
        <input
          name="database"
          value={table.database}
          onInput={(e) => set({ database: e.currentTarget.value })}
        />
        <Problem text={props.problem('destination.database')} />
      </label>
      {props.withColumns && (
        <>
          <label>
            Table
            <input name="table" value={table.table} onInput={(e) => set({ table: e.currentTarget.value })} />
            <Problem text={props.problem('destination.table')} />
          </label>
          <label>
            Engine
            <select
              name="engine"
              value={table.engine}
              onChange={(e) => set({ engine: e.currentTarget.value as TableChoice['engine'] })}
            >
              {['MergeTree', 'ReplacingMergeTree', 'SummingMergeTree', 'Null'].map((engine) => (
                <option key={engine}>{engine}</option>
              ))}
            </select>
          </label>
          <fieldset class="sorting-key">
            <legend>Sorting key, in order</legend>
            {props.columns.map((column) => (
              <label key={column} class="checkbox">
                <input
                  type="checkbox"
                  checked={table.sortingKey.includes(column)}
                  onChange={(e) => toggleKey(column, e.currentTarget.checked)}
                />
                {column}
                {table.sortingKey.includes(column) && (
                  <span class="muted"> ({table.sortingKey.indexOf(column) + 1})</span>
                )}
              </label>
            ))}
            <Problem text={props.problem('destination.tableDefinition.sortingKey')} />
          </fieldset>
          <label>
            Partition by (an expression, optional)
            <input
              name="partitionBy"
              value={table.partitionBy}
              placeholder="toYYYYMM(at)"
              onInput={(e) => set({ partitionBy: e.currentTarget.value })}
            />
            <Problem text={props.problem('destination.tableDefinition.partitionBy')} />
          </label>
        </>
      )}
    </div>
  );
}

function Problem(props: { text: string | undefined }) {
  return props.text ? <span class="field-error">{props.text}</span> : null;
}
