/**
 * Optional fields whose empty string or empty array real clients send for "not set": the cloud
 * CLI sends postgres table mappings with `"partitionKey": ""`, `"partitionByExpr": ""` and
 * `"sortingKeys": []` (README, "Pipes"). Other empty strings stay errors, as on the hosted
 * service (`caCertificate`, `iamRole`, `tlsHost`, names).
 */
const EMPTY_MEANS_UNSET = new Set([
  'partitionKey',
  'partitionByExpr',
  'sortingKeys',
  'excludedColumns',
  'sourceSchemaName',
  'publicationName',
  'replicationSlotName',
  'consumerGroup',
  'reversePrivateEndpointIds',
  'startAfter',
  'queueUrl',
  'roles',
  'fieldMappings',
]);

/**
 * A request body as the hosted service reads it: `null` means absent wherever it stands (the cloud
 * CLI sends `"credentials": null`, Terraform `null` for every unset attribute), and so do the empty
 * values above. A nested object left empty only by such removals is absent too, so
 * `"settings": {"x": null}` is no settings rather than the refused `"settings": {}`.
 */
export function withoutUnset(body: unknown): unknown {
  return isPlainObject(body) ? prune(body) : body;
}

function prune(object: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(object)) {
    if (value === null) continue;
    if (EMPTY_MEANS_UNSET.has(key) && (value === '' || (Array.isArray(value) && value.length === 0)))
      continue;
    const kept = pruneValue(value);
    if (kept !== undefined) out[key] = kept;
  }
  return out;
}

function pruneValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => (isPlainObject(item) ? prune(item) : item));
  if (!isPlainObject(value)) return value;
  const pruned = prune(value);
  const emptiedByUs = Object.keys(pruned).length === 0 && Object.keys(value).length > 0;
  return emptiedByUs ? undefined : pruned;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
