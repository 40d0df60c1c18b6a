import { type ComponentChildren, isValidElement } from 'preact';

/** Rows of objects as a table, columns in the order given (or of the first row); a cell may be an element. */
export function DataTable(props: { rows: Record<string, unknown>[]; columns?: string[]; empty?: string }) {
  const columns = props.columns ?? Object.keys(props.rows[0] ?? {});
  if (props.rows.length === 0) return <p class="muted">{props.empty ?? 'Nothing yet.'}</p>;
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c}>{c}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((row, i) => (
            <tr key={i}>
              {columns.map((c) => (
                <td key={c}>{cell(row[c])}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function cell(value: unknown): ComponentChildren {
  if (value === null || value === undefined) return <span class="muted">NULL</span>;
  // A page may put its own element in a cell (a button, a link).
  if (isValidElement(value)) return value;
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

export function ErrorNote(props: { error: Error | undefined }) {
  if (!props.error) return null;
  return (
    <p class="error" role="alert">
      {props.error.message}
    </p>
  );
}
