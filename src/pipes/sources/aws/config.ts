import { NonEmpty, Secret, StrictObject } from '../../../schema/index.js';

/** An AWS access key (S3 and the stores that speak its API, Kinesis): one secret object. */
export const AccessKey = Secret(
  StrictObject(
    { accessKeyId: NonEmpty(), secretKey: NonEmpty() },
    { description: 'Secret: stored encrypted, never returned' },
  ),
);
