import { type Static, Type as T } from '@sinclair/typebox';
import { Integer, LIMITS, NonEmpty, StrictObject, StringEnum } from '../../schema/index.js';
import { TABLE_ENGINES } from './enums.js';

export const Column = StrictObject({
  name: NonEmpty({ maxLength: LIMITS.name }),
  type: NonEmpty({ maxLength: LIMITS.expression }),
});
export const Columns = T.Array(Column, { minItems: 1, maxItems: LIMITS.columnsPerTable });

export const TableDefinition = StrictObject({
  engine: StrictObject({
    type: StringEnum(TABLE_ENGINES),
    versionColumnId: T.Optional(NonEmpty({ description: 'ReplacingMergeTree only' })),
    columnIds: T.Optional(
      T.Array(NonEmpty({ maxLength: LIMITS.name }), {
        maxItems: LIMITS.columnsPerTable,
        description: 'SummingMergeTree only',
      }),
    ),
  }),
  sortingKey: T.Optional(
    T.Array(NonEmpty({ maxLength: LIMITS.name }), { maxItems: LIMITS.sortingKeyColumns }),
  ),
  partitionBy: T.Optional(NonEmpty({ maxLength: LIMITS.expression })),
  primaryKey: T.Optional(NonEmpty({ maxLength: LIMITS.expression })),
});

export const Destination = StrictObject({
  database: T.Optional(NonEmpty({ maxLength: 255, description: 'Default "default"' })),
  table: T.Optional(NonEmpty({ maxLength: 255 })),
  managedTable: T.Optional(T.Boolean({ description: 'Default true' })),
  tableDefinition: T.Optional(TableDefinition),
  columns: T.Optional(Columns),
  roles: T.Optional(T.Array(NonEmpty(), { description: 'Request only' })),
});

export const FieldMapping = StrictObject({
  sourceField: NonEmpty({ maxLength: LIMITS.name }),
  destinationField: NonEmpty({ maxLength: LIMITS.name }),
});
export const FieldMappings = T.Array(FieldMapping, { maxItems: LIMITS.mappingsPerPipe });

export const Scaling = StrictObject(
  {
    replicas: T.Optional(Integer(1, 40)),
    concurrency: T.Optional(Integer(0, 34, { description: '0 = automatic; object storage only' })),
    replicaCpuMillicores: T.Optional(Integer(125, 2000)),
    replicaMemoryGb: T.Optional(T.Number({ minimum: 0.5, maximum: 8 })),
  },
  { minProperties: 1 },
);

const SETTINGS_FIELDS = {
  streaming_max_insert_wait_ms: T.Optional(Integer(500, 60000)),
  object_storage_concurrency: T.Optional(Integer(1, 35)),
  object_storage_polling_interval_ms: T.Optional(Integer(100, 3600000)),
  object_storage_max_insert_bytes: T.Optional(Integer(10485760, 53687091200)),
  object_storage_max_file_count: T.Optional(Integer(1, 10000)),
  engine_max_threads: T.Optional(Integer(0, 64)),
  engine_max_insert_threads: T.Optional(Integer(0, 16)),
  engine_min_insert_block_size_bytes: T.Optional(Integer(0, 10737418240)),
  engine_max_download_threads: T.Optional(Integer(0, 32)),
  engine_parallel_distributed_insert_select: T.Optional(Integer(0, 2)),
  object_storage_use_cluster_function: T.Optional(T.Boolean()),
  engine_parallel_view_processing: T.Optional(T.Boolean()),
};

/** Pipe settings in a create body, where `settings: {}` is rejected (README, "Pipes"). */
export const Settings = StrictObject(SETTINGS_FIELDS, { minProperties: 1 });

/** PUT /settings replaces the whole map; `{}` puts every setting back to its default. */
export const SettingsMap = StrictObject(SETTINGS_FIELDS);

/** A create body's fields besides `source`, whose schema follows the kinds a Sluice runs (kinds.ts). */
export const PIPE_FIELDS = {
  name: T.String({ minLength: 1, maxLength: 255 }),
  destination: Destination,
  fieldMappings: T.Optional(FieldMappings),
  scaling: T.Optional(Scaling),
  settings: T.Optional(Settings),
};

export type DestinationConfig = Static<typeof Destination>;
export type ScalingConfig = Static<typeof Scaling>;
export type SettingsConfig = Static<typeof Settings>;
export type FieldMappingConfig = Static<typeof FieldMapping>;
export type ColumnConfig = Static<typeof Column>;
