import { type Static, Type as T, type TObject, type TSchema } from '@sinclair/typebox';
import { StrictObject, withoutSecrets } from '../../schema/index.js';
import type { AnySourceKind, SOURCE_KINDS } from '../sources/index.js';
import { PIPE_STATES } from '../state.js';
import { Columns, Destination, FieldMappings, PIPE_FIELDS, Scaling, Settings, SettingsMap } from './pipe.js';

/**
 * The schemas that name source kinds, built from the kinds a Sluice runs (createSluice's
 * `sourceKinds`, the registry's list in sources/index.ts by default): one property per kind, in the
 * registry's order, each the kind's own schema.
 */
export function pipeSchemas(kinds: readonly AnySourceKind[]) {
  const each = (schemaOf: (kind: AnySourceKind) => TSchema) =>
    Object.fromEntries(kinds.map((kind) => [kind.name, T.Optional(schemaOf(kind))]));
  const Source = StrictObject({
    validateSamples: T.Optional(T.Boolean({ description: 'Request only: read a few records at create' })),
    ...each((kind) => kind.config),
  });
  const CreatePipeBody = StrictObject({
    name: PIPE_FIELDS.name,
    source: Source,
    destination: PIPE_FIELDS.destination,
    fieldMappings: PIPE_FIELDS.fieldMappings,
    scaling: PIPE_FIELDS.scaling,
    settings: PIPE_FIELDS.settings,
  });
  return {
    Source,
    CreatePipeBody,
    UpdatePipeBody: updatePipeBody(each((kind) => kind.patch)),
    PipeRecord: pipeRecord(each((kind) => withoutSecrets(kind.config))),
    /** `POST .../pipes/schemaDiscovery`: one source of a kind that offers discovery, as a create body gives it. */
    SchemaDiscoveryBody: StrictObject({
      source: StrictObject(
        Object.fromEntries(
          kinds.filter((kind) => kind.discover).map((kind) => [kind.name, T.Optional(kind.config)]),
        ),
      ),
    }),
  };
}

export type PipeSchemas = ReturnType<typeof pipeSchemas>;

/**
 * PATCH /pipes/{id}: what may change after create (README, "Pipes"): the name, each kind's own
 * PATCH of its source (credentials, authentication, ...; the source object whole, as Terraform sends
 * it, with its immutable fields unchanged), destination columns, field mappings and settings.
 */
function updatePipeBody(sources: Record<string, TSchema>): TObject {
  return StrictObject(
    {
      name: T.Optional(T.String({ minLength: 1, maxLength: 255 })),
      source: T.Optional(
        StrictObject(
          {
            ...sources,
            validateSamples: T.Optional(T.Boolean({ description: 'Request only; sent by Terraform' })),
          },
          { minProperties: 1 },
        ),
      ),
      destination: T.Optional(StrictObject({ columns: Columns })),
      fieldMappings: T.Optional(FieldMappings),
      settings: T.Optional(Settings),
    },
    { minProperties: 1 },
  );
}

/**
 * The pipe record returned by every pipe endpoint: the request's configuration without its secrets
 * (the fields the kinds' schemas mark Secret), `validateSamples` or `roles` (README, "Pipes").
 * Used as the response schema, so the serializer also drops anything that is not listed here.
 */
function pipeRecord(sources: Record<string, TSchema>): TObject {
  const { source: _placeholder, ...fields } = RECORD_FIELDS;
  return StrictObject({ ...fields, source: StrictObject(sources), ...RECORD_TAIL });
}

/** The record's fields around `source`, in the order the API lists them. */
const RECORD_FIELDS = {
  id: T.String({ format: 'uuid' }),
  serviceId: T.String({ format: 'uuid' }),
  name: T.String(),
  state: T.Unsafe<string>({ type: 'string', enum: [...PIPE_STATES] }),
  scaling: T.Partial(Scaling),
  source: T.Object({}),
};
const RECORD_TAIL = {
  destination: T.Omit(Destination, ['roles']),
  fieldMappings: FieldMappings,
  settings: SettingsMap,
  createdAt: T.String({ format: 'date-time' }),
  updatedAt: T.String({ format: 'date-time' }),
};

type RegistryKinds = (typeof SOURCE_KINDS)[number];

/** A create body's `source`, typed by the registry's kinds (a kind added at run time is not typed). */
export type SourceConfig = { validateSamples?: boolean } & {
  [K in RegistryKinds as K['name']]?: Static<K['config']>;
};

const CreatePipeFields = T.Object(PIPE_FIELDS);
export type CreatePipeBody = Static<typeof CreatePipeFields> & { source: SourceConfig };

const UpdatePipeFields = T.Object({
  name: T.Optional(T.String()),
  destination: T.Optional(T.Object({ columns: Columns })),
  fieldMappings: T.Optional(FieldMappings),
  settings: T.Optional(Settings),
});
export type UpdatePipeBody = Static<typeof UpdatePipeFields> & {
  source?: { validateSamples?: boolean } & { [kind: string]: Record<string, unknown> | boolean | undefined };
};

const { source: _untyped, ...recordHead } = RECORD_FIELDS;
const RecordFields = T.Object({ ...recordHead, ...RECORD_TAIL });
export type PipeRecord = Static<typeof RecordFields> & { source: Omit<SourceConfig, 'validateSamples'> };
