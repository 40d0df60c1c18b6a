/**
 * A friendly first error for expressions, never the security boundary: the engine's grants are
 * (chdb/confinement.ts), and statement.ts has the engine parse what is stored. This only says early,
 * without asking an engine, that a table function reaching outside the service will be refused.
 */
const OUTSIDE = [
  'file',
  'fileCluster',
  'url',
  'urlCluster',
  's3',
  's3Cluster',
  'gcs',
  'oss',
  'cosn',
  'azureBlobStorage',
  'azureBlobStorageCluster',
  'hdfs',
  'hdfsCluster',
  'remote',
  'remoteSecure',
  'cluster',
  'clusterAllReplicas',
  'mysql',
  'postgresql',
  'mongodb',
  'redis',
  'sqlite',
  'odbc',
  'jdbc',
  'executable',
  'input',
  'iceberg',
  'icebergS3',
  'icebergAzure',
  'icebergHDFS',
  'icebergLocal',
  'deltaLake',
  'deltaLakeS3',
  'deltaLakeAzure',
  'deltaLakeLocal',
  'hudi',
  'paimon',
  'arrowFlight',
  'ytsaurus',
  'dictionary',
  'loop',
  'merge',
  'filesystem',
];
const OUTSIDE_CALL = new RegExp(`\\b(${OUTSIDE.join('|')})\\s*\\(`, 'i');

/** The text with its string literals and quoted identifiers blanked, so only the SQL is checked. */
function withoutLiterals(sql: string): string {
  return sql.replace(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|`(?:[^`\\]|\\.)*`/g, "''");
}

/**
 * Why SQL a user wrote may not run, or undefined. For whole statements of the query endpoint: no
 * table function that reaches outside the service, no INTO OUTFILE.
 */
function callProblem(sql: string): string | undefined {
  const text = withoutLiterals(sql).replace(/--[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\//g, ' ');
  const call = OUTSIDE_CALL.exec(text);
  if (call) return `${call[1]}() reaches outside the service and is not allowed here`;
  if (/\bINTO\s+OUTFILE\b/i.test(text)) return 'INTO OUTFILE writes to the host and is not allowed here';
  return undefined;
}

/**
 * Why an expression or a type a user wrote (a column type, PARTITION BY, a tile's filter) may not be
 * put into a statement, or undefined: it must be one expression, with no comment, no statement
 * separator, balanced parentheses and closed quotes, no clause of its own, and nothing that reaches
 * outside the service.
 */
export function fragmentProblem(fragment: string): string | undefined {
  if (!balancedQuotes(fragment)) return 'a quote is not closed';
  const text = withoutLiterals(fragment);
  if (/--|\/\*|\*\/|#|;/.test(text)) return 'comments and ";" are not allowed in an expression';
  let depth = 0;
  for (const c of text) {
    if (c === '(') depth += 1;
    if (c === ')') depth -= 1;
    if (depth < 0) return 'a parenthesis closes that was not opened';
  }
  if (depth !== 0) return 'a parenthesis is not closed';
  if (/\b(SELECT|SETTINGS|FORMAT|UNION|INTO)\b/i.test(text))
    return 'write one expression, not a query or a clause';
  return callProblem(fragment);
}

function balancedQuotes(text: string): boolean {
  let quote: string | undefined;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (quote) {
      if (c === '\\') i += 1;
      else if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"' || c === '`') {
      quote = c;
    }
  }
  return quote === undefined;
}
