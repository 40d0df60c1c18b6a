import type pg from 'pg';
import type { Problem } from '../../../../errors.js';
import { type PostgresSource, pgIdent, pgTable } from './connection.js';
import { ownedNames } from './owned-names.js';

const PATH = 'source.postgres';
const OWN_PUBLICATION =
  'or create a publication of the mapped tables yourself and give its name in settings.publicationName';
/**
 * The grantee of the statements named: the user of `credentials`, which a message never repeats
 * (the credentials are secret, username too: README, "Security").
 */
const USER = '<user>';

/**
 * What the pipe's user must be allowed for the publication Sluice makes itself when no
 * `publicationName` is given (catalog/publication.ts, ensurePublication; README, "How a PostgreSQL pipe
 * runs"): CREATE PUBLICATION needs CREATE on the database, and PostgreSQL lets only a table's owner
 * add it to a publication, when it is made and at every ALTER PUBLICATION ... SET TABLE after (the
 * table mappings changed while stopped, a resync), for every table of the list. A publication the
 * pipe already made (a PATCH of a pipe that ran: `pipeId`) needs its owner instead of CREATE.
 * Ownership is PostgreSQL's own test: membership in the owning role counts where it passes its
 * privileges (pg_has_role USAGE), and a superuser passes everything. Tables that do not exist are
 * left to the table checks.
 */
export async function publicationPrivilegeProblems(
  client: pg.Client,
  source: PostgresSource,
  pipeId?: string,
): Promise<Problem[]> {
  if (source.settings?.publicationName) return [];
  const publication = pipeId ? ownedNames(pipeId).publication : null;
  const rights = await client.query<{
    database: string;
    may_create: boolean;
    publication_owner: string | null;
    owns_publication: boolean | null;
  }>(
    `SELECT current_database() AS database,
            has_database_privilege(current_database(), 'CREATE') AS may_create,
            pg_get_userbyid(p.pubowner) AS publication_owner, pg_has_role(p.pubowner, 'USAGE') AS owns_publication
       FROM (SELECT 1) AS one LEFT JOIN pg_publication p ON p.pubname = $1`,
    [publication],
  );
  const row = rights.rows[0];
  if (!row) return [];
  const problems: Problem[] = [];
  if (publication && row.publication_owner !== null) {
    if (!row.owns_publication) {
      problems.push({
        path: `${PATH}.credentials`,
        message: `the user does not own the pipe's publication ${pgIdent(publication)} (its owner is ${pgIdent(row.publication_owner)}), which Sluice alters when the tables change or the pipe resyncs: ALTER PUBLICATION ${pgIdent(publication)} OWNER TO ${USER}`,
      });
    }
  } else if (!row.may_create) {
    problems.push({
      path: `${PATH}.credentials`,
      message: `the user may not create the publication Sluice makes for the pipe (it needs CREATE on the database): GRANT CREATE ON DATABASE ${pgIdent(row.database)} TO ${USER}, ${OWN_PUBLICATION}`,
    });
  }
  problems.push(...(await ownershipProblems(client, source)));
  return problems;
}

/** A problem for each mapped table the user does not own, at its first mapping. */
async function ownershipProblems(client: pg.Client, source: PostgresSource): Promise<Problem[]> {
  const schemas = source.tableMappings.map((m) => m.sourceSchemaName ?? 'public');
  const tables = source.tableMappings.map((m) => m.sourceTable);
  const owners = await client.query<{ schema: string; table: string; owner: string; owns: boolean }>(
    `SELECT n.nspname AS schema, c.relname AS table, pg_get_userbyid(c.relowner) AS owner,
            pg_has_role(c.relowner, 'USAGE') AS owns
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE (n.nspname, c.relname) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
    [schemas, tables],
  );
  const problems: Problem[] = [];
  const named = new Set<string>();
  source.tableMappings.forEach((mapping, index) => {
    const schema = mapping.sourceSchemaName ?? 'public';
    const found = owners.rows.find((r) => r.schema === schema && r.table === mapping.sourceTable);
    const name = `${schema}.${mapping.sourceTable}`;
    if (!found || found.owns || named.has(name)) return;
    named.add(name);
    problems.push({
      path: `${PATH}.tableMappings[${index}].sourceTable`,
      message: `the user does not own ${name} (its owner is ${pgIdent(found.owner)}), and PostgreSQL lets only a table's owner add it to a publication: ALTER TABLE ${pgTable(schema, mapping.sourceTable)} OWNER TO ${USER} (or to a role the user is a member of), ${OWN_PUBLICATION}`,
    });
  });
  return problems;
}
