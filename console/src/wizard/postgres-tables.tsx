import type { PickedTable } from './model.js';

export interface PostgresTable {
  schema: string;
  table: string;
  estimatedRows: number | null;
  primaryKey: string[];
  replicaIdentity: string;
  columns: { name: string; type: string; clickhouseType: string; nullable: boolean }[];
  problems: { message: string; replicationModes: string[] }[];
}

export interface PostgresTables {
  server: { version: string; walLevel: string; mayReplicate: boolean };
  problems: { message: string; replicationModes: string[] }[];
  tables: PostgresTable[];
  truncated: boolean;
}

/**
 * The server's tables, each with its key, replica identity and the problems a pipe in the chosen
 * replication mode would meet (postgresTables, the same rules as the create checks).
 */
export function TablePicker(props: {
  listing: PostgresTables;
  mode: string;
  picked: PickedTable[];
  onChange: (picked: PickedTable[]) => void;
}) {
  const { listing, mode } = props;
  const isPicked = (t: PostgresTable) =>
    props.picked.some((p) => p.schema === t.schema && p.table === t.table);
  const toggle = (t: PostgresTable, on: boolean) =>
    props.onChange(
      on
        ? [
            ...props.picked,
            {
              schema: t.schema,
              table: t.table,
              targetTable: t.schema === 'public' ? t.table : `${t.schema}_${t.table}`,
            },
          ]
        : props.picked.filter((p) => !(p.schema === t.schema && p.table === t.table)),
    );
  const serverProblems = listing.problems.filter((p) => p.replicationModes.includes(mode));
  return (
    <>
      <p class="muted">
        PostgreSQL {listing.server.version}, wal_level {listing.server.walLevel}
        {listing.truncated ? ' · the first 1000 tables' : ''}
      </p>
      {serverProblems.map((p) => (
        <p key={p.message} class="error">
          {p.message}
        </p>
      ))}
      <div class="table-wrap">
        <table class="pg-tables">
          <thead>
            <tr>
              <th>Pick</th>
              <th>Table</th>
              <th class="num">Rows (estimate)</th>
              <th>Primary key</th>
              <th>Replica identity</th>
              <th>Problems for {mode}</th>
            </tr>
          </thead>
          <tbody>
            {listing.tables.map((t) => {
              const problems = t.problems.filter((p) => p.replicationModes.includes(mode));
              return (
                <tr key={`${t.schema}.${t.table}`} data-table={`${t.schema}.${t.table}`}>
                  <td>
                    <input
                      type="checkbox"
                      aria-label={`Pick ${t.schema}.${t.table}`}
                      checked={isPicked(t)}
                      onChange={(e) => toggle(t, e.currentTarget.checked)}
                    />
                  </td>
                  <td>
                    {t.schema}.{t.table}
                  </td>
                  <td class="num">{t.estimatedRows ?? '–'}</td>
                  <td>{t.primaryKey.join(', ') || <span class="muted">none</span>}</td>
                  <td>{t.replicaIdentity}</td>
                  <td class="problems">
                    {problems.length ? (
                      problems.map((p) => <div key={p.message}>{p.message}</div>)
                    ) : (
                      <span class="muted">none</span>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </>
  );
}
