import type { DiscoveryContext, DiscoverySource, SchemaDiscovery } from '../../discovery.js';
import { DiscoveryProblem } from '../../discovery.js';
import { closeClient, connect, type PostgresSource, SourceConnectError } from '../session/index.js';
import { readTable } from './source-tables.js';
import { tablePlan } from './table-plan.js';

const PATH = 'source.postgres';

/** What reaching a server needs: whether private addresses may be reached, where to log. */
export type ServerContext = Pick<DiscoveryContext, 'allowPrivateSources' | 'logger'>;

/**
 * The columns a PostgreSQL pipe would give the target of its one table mapping: read from the
 * server's catalog (source-tables.ts) and typed by the pipe's own type map (column-types.ts, table-plan.ts), so
 * they are exactly the columns the pipe makes, not a guess from sampled rows. No row is read.
 */
export async function discoverPostgres(
  source: DiscoverySource,
  context: DiscoveryContext,
): Promise<SchemaDiscovery> {
  const postgres = source.postgres as PostgresSource;
  const [mapping, ...more] = postgres.tableMappings;
  if (!mapping || more.length > 0) {
    throw new DiscoveryProblem({
      path: `${PATH}.tableMappings`,
      message:
        'schema discovery describes one table: give exactly one mapping (POST .../pipes/postgresTables lists every table of the database)',
    });
  }
  const client = await connectOrProblem(postgres, context);
  try {
    const schema = mapping.sourceSchemaName ?? 'public';
    const table = await readTable(client, schema, mapping.sourceTable, { countUnanalyzed: false });
    if (!table) {
      throw new DiscoveryProblem({
        path: `${PATH}.tableMappings[0].sourceTable`,
        message: `there is no table ${schema}.${mapping.sourceTable}`,
      });
    }
    const plan = tablePlan(mapping, table, {
      database: 'default',
      allowNullableColumns: postgres.settings?.allowNullableColumns === true,
    });
    const notNull = new Map(table.columns.map((column) => [column.name, column.notNull]));
    const added = plan.spec.columns.filter((column) => !plan.columns.some((c) => c.name === column.name));
    return {
      // From the catalog: no row is read.
      records: [],
      fields: plan.columns.map((column) => ({
        name: column.name,
        type: column.target,
        optional: notNull.get(column.name) !== true,
      })),
      meta: {
        sourceTable: `${schema}.${mapping.sourceTable}`,
        targetTable: mapping.targetTable,
        sortingKey: plan.keys.join(', '),
        columnsAdded: added.map((column) => `${column.name} ${column.type}`).join(', '),
      },
    };
  } finally {
    await closeClient(client, context.logger);
  }
}

/** A session to the server, or the 400 naming the field that kept it from opening. */
export async function connectOrProblem(source: PostgresSource, context: ServerContext) {
  try {
    return await connect(source, context);
  } catch (error) {
    if (error instanceof SourceConnectError)
      throw new DiscoveryProblem({ path: `${PATH}.${error.field}`, message: error.message });
    throw error;
  }
}
