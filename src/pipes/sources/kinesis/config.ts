import { type Static, Type as T } from '@sinclair/typebox';
import { Integer, NonEmpty, StrictObject, StringEnum } from '../../../schema/index.js';
import { AccessKey } from '../aws/index.js';

/** Allowed values, from the hosted service's API and Terraform provider (README, "Pipes"). */
export const KINESIS_FORMATS = ['JSONEachRow', 'Avro', 'AvroConfluent'] as const;
export const KINESIS_ITERATOR_TYPES = ['TRIM_HORIZON', 'LATEST', 'AT_TIMESTAMP'] as const;
export const KINESIS_AUTHENTICATIONS = ['IAM_ROLE', 'IAM_USER'] as const;

export const KinesisSource = StrictObject({
  streamName: NonEmpty(),
  region: NonEmpty(),
  format: StringEnum(KINESIS_FORMATS),
  iteratorType: T.Optional(StringEnum(KINESIS_ITERATOR_TYPES, { default: 'TRIM_HORIZON' })),
  timestamp: T.Optional(
    T.Union([Integer(0), T.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2})?Z?$' })], {
      description: 'For AT_TIMESTAMP: UNIX seconds, or YYYY-MM-DDThh:mm (UTC) as Terraform sends it',
    }),
  ),
  useEnhancedFanOut: T.Optional(T.Boolean()),
  authentication: T.Optional(StringEnum(KINESIS_AUTHENTICATIONS)),
  iamRole: T.Optional(NonEmpty()),
  accessKey: T.Optional(AccessKey),
});
export type KinesisConfig = Static<typeof KinesisSource>;

/** Fields fixed at create that Terraform sends back on every update, with their assumed values. */
export const KINESIS_IMMUTABLE = {
  format: undefined,
  streamName: undefined,
  region: undefined,
  iteratorType: 'TRIM_HORIZON',
  timestamp: undefined,
  useEnhancedFanOut: false,
};

/** PATCH: the authentication and its key, and the immutable fields as Terraform sends them. */
export const KinesisPatch = T.Partial(
  T.Pick(KinesisSource, [
    'authentication',
    'iamRole',
    'accessKey',
    ...(Object.keys(KINESIS_IMMUTABLE) as (keyof typeof KINESIS_IMMUTABLE)[]),
  ]),
  { additionalProperties: false, minProperties: 1 },
);
