import { CloneType, OptionalKind, Type as T, type TObject, type TSchema } from '@sinclair/typebox';
import { NonEmpty, StrictObject } from './types.js';

/**
 * Marks a field as a secret: sealed at rest, never returned, never logged (README, "Security").
 * The mark is a symbol, so the JSON schema (ajv's input, the OpenAPI document) is unchanged;
 * TypeBox copies symbols when it clones a schema (Optional, Pick, Partial keep the mark).
 */
const SECRET = Symbol.for('sluice.secret');

export function Secret<S extends TSchema>(schema: S): S {
  const marked = CloneType(schema) as S & { [SECRET]?: true };
  marked[SECRET] = true;
  return marked;
}

export function isSecret(schema: TSchema): boolean {
  return (schema as { [SECRET]?: true })[SECRET] === true;
}

/** A username and password, both secret as one object. */
export const UsernamePassword = Secret(
  StrictObject(
    { username: NonEmpty(), password: NonEmpty() },
    { description: 'Secret: stored encrypted, never returned' },
  ),
);

/**
 * The path of every field marked Secret in an object schema, through nested objects. A mark under
 * an array or a union has no path a configuration could be split at: that throws, so a secret
 * cannot be left in the clear by a shape this walk does not follow.
 */
export function secretPaths(schema: TSchema, prefix: readonly string[] = []): string[][] {
  const paths: string[][] = [];
  for (const [name, field] of Object.entries(propertiesOf(schema))) {
    const path = [...prefix, name];
    if (isSecret(field)) paths.push(path);
    else if (field.type === 'object') paths.push(...secretPaths(field, path));
    else if (hasSecretInside(field)) {
      throw new Error(`${path.join('.')}: a secret inside an array or a union cannot be sealed`);
    }
  }
  return paths;
}

/** The schema without its secret fields, at any depth (a response schema: secrets never go out). */
export function withoutSecrets<S extends TObject>(schema: S): TObject {
  const properties: Record<string, TSchema> = {};
  for (const [name, field] of Object.entries(schema.properties)) {
    if (isSecret(field)) continue;
    properties[name] =
      field.type === 'object' && hasSecretInside(field)
        ? T.Optional(withoutSecrets(field as TObject), isOptional(field))
        : field;
  }
  const { properties: _all, required: _required, ...options } = schema;
  return T.Object(properties, options);
}

function propertiesOf(schema: TSchema): Record<string, TSchema> {
  return schema.type === 'object' && schema.properties ? schema.properties : {};
}

function isOptional(schema: TSchema): boolean {
  return (schema as { [OptionalKind]?: string })[OptionalKind] === 'Optional';
}

function hasSecretInside(schema: unknown): boolean {
  if (schema === null || typeof schema !== 'object') return false;
  if (isSecret(schema as TSchema)) return true;
  return Object.values(schema).some(hasSecretInside);
}
