import { BadRequestError, type Problem, ValidationError } from '../errors.js';
import type { PipeRow } from '../store/index.js';
import { copyJson } from './json-copy.js';
import type { PipeConfig } from './model.js';
import type { PipeRules } from './rules.js';
import type { UpdatePipeBody } from './schema/index.js';
import { objectAt } from './secrets.js';
import type { AnySourceKind, ImmutableField, SourceKinds } from './sources/index.js';

/** Fields that belong to one way of authenticating; a new `authentication` clears the old ones. */
const AUTH_FIELDS = ['credentials', 'accessKey', 'iamRole', 'serviceAccountKey'];

type Json = Record<string, unknown>;

/**
 * A PATCH applied to a pipe: its new name and configuration, which must still be a pipe one could
 * create (a ValidationError names every problem).
 */
export function planUpdate(
  row: Pick<PipeRow, 'name' | 'sourceKind' | 'state'>,
  config: PipeConfig,
  patch: UpdatePipeBody,
  kinds: SourceKinds,
  rules: PipeRules,
): { name: string; config: PipeConfig } {
  const kind = kinds.require(row.sourceKind);
  const updated = applyUpdate(config, patch, kind, row.state);
  const name = patch.name ?? row.name;
  const body = {
    name,
    source: updated.source,
    destination: updated.destination,
    fieldMappings: updated.fieldMappings,
    scaling: updated.scaling,
    ...(Object.keys(updated.settings).length > 0 ? { settings: updated.settings } : {}),
  };
  const problems = rules.createProblems(body);
  if (problems.length > 0) throw new ValidationError(problems);
  return { name, config: updated };
}

/**
 * Applies a PATCH body to a pipe's full configuration and returns the new one; `planUpdate`
 * validates the result as a whole. Objects given in the patch replace the stored ones field by
 * field where the kind merges them (kind.ts `mergedOnPatch`), or as the kind applies them.
 */
function applyUpdate(
  config: PipeConfig,
  patch: UpdatePipeBody,
  kind: AnySourceKind,
  state: string,
): PipeConfig {
  const next = copyJson(config);
  const { validateSamples: _requestOnly, ...sourcePatch } = patch.source ?? {};
  for (const other of Object.keys(sourcePatch)) {
    if (other !== kind.name) {
      throw new BadRequestError(
        'SLUICE_ERR_PIPE_IMMUTABLE',
        `source.${other}: this pipe reads from ${kind.name}; only source.${kind.name} may change`,
      );
    }
  }
  const sent = sourcePatch[kind.name] as Json | undefined;
  const source = (next.source as Json)[kind.name] as Json | undefined;
  if (sent && source) {
    const changes = withoutImmutable(kind, sent, source);
    if (changes.authentication !== undefined && changes.authentication !== source.authentication) {
      for (const field of AUTH_FIELDS) delete source[field];
    }
    if (kind.applyPatch) kind.applyPatch(source, changes, { state });
    else {
      for (const [field, value] of Object.entries(changes)) {
        source[field] = kind.mergedOnPatch?.includes(field)
          ? { ...(source[field] as Json | undefined), ...(value as Json) }
          : value;
      }
    }
  }
  if (patch.destination?.columns) next.destination.columns = patch.destination.columns;
  if (patch.fieldMappings) next.fieldMappings = patch.fieldMappings;
  if (patch.settings) next.settings = { ...next.settings, ...patch.settings };
  return next;
}

/**
 * The changes of a source PATCH without the fields that cannot change, once each is found equal to
 * its stored value; a changed one is a 400 naming it and why (Terraform sends the whole object on
 * update, every computed setting included).
 */
function withoutImmutable(kind: AnySourceKind, sent: Json, stored: Json): Json {
  const problems: Problem[] = [];
  const changes = copyJson(sent);
  for (const [dotted, field] of Object.entries(kind.immutableFields)) {
    const path = dotted.split('.');
    const leaf = path.pop() as string;
    const sentParent = objectAt(changes, path);
    if (!sentParent || !(leaf in sentParent)) continue;
    const before = objectAt(stored, path)?.[leaf] ?? field.assumed;
    if (!same(field, sentParent[leaf], before)) {
      problems.push({
        path: `source.${kind.name}.${dotted}`,
        message: `cannot change after create (it is ${JSON.stringify(before ?? null)})${field.why ? `: ${field.why}` : ''}; create a new pipe instead`,
      });
    }
    delete sentParent[leaf];
    // An object the PATCH sent only fixed fields of changes nothing.
    if (path.length > 0 && Object.keys(sentParent).length === 0)
      delete objectAt(changes, path.slice(0, -1))?.[path.at(-1) as string];
  }
  if (problems.length > 0) throw new ValidationError(problems);
  return changes;
}

function same(field: ImmutableField, value: unknown, before: unknown): boolean {
  if (field.same && value !== undefined && before !== undefined) return field.same(value, before);
  return JSON.stringify(value) === JSON.stringify(before);
}
