import type { ObjectOptions, TObject, TProperties } from '@sinclair/typebox';
import { Type as T, type TSchema, type TUnsafe } from '@sinclair/typebox';

/**
 * Schema helpers shared by every domain. Enums are plain JSON-schema `enum`s (not unions of
 * literals) so a validation error reads "use one of ..." instead of a cascade of anyOf branches.
 */
export function StringEnum<const V extends readonly string[]>(
  values: V,
  options: { description?: string; default?: V[number] } = {},
): TUnsafe<V[number]> {
  return T.Unsafe<V[number]>({ type: 'string', enum: [...values], ...options });
}

/** A string that must not be empty (the hosted service rejects "" for such fields). */
export const NonEmpty = (options: { maxLength?: number; description?: string } = {}) =>
  T.String({ minLength: 1, ...options });

/** An object that rejects unknown fields, so a typo is named instead of silently dropped. */
export function StrictObject<P extends TProperties>(properties: P, options: ObjectOptions = {}): TObject<P> {
  return T.Object(properties, { additionalProperties: false, ...options });
}

export const Integer = (minimum?: number, maximum?: number, options: { description?: string } = {}) =>
  T.Integer({
    ...(minimum === undefined ? {} : { minimum }),
    ...(maximum === undefined ? {} : { maximum }),
    ...options,
  });

/** A value or null (a response field that is known only sometimes). */
export const Nullable = <S extends TSchema>(schema: S) => T.Union([schema, T.Null()]);

export type { TSchema };
