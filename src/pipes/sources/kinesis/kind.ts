import { instantOf } from '../../model.js';
import type { CleansUpOnDelete, ReportsStatus, SourceConnector } from '../contract.js';
import type { SourceKind } from '../kind.js';
import { kinesisProblems } from './checks.js';
import { connectKinesis, type KinesisSource as StoredKinesisSource } from './client.js';
import { KINESIS_IMMUTABLE, KinesisPatch, KinesisSource } from './config.js';
import { deregisterConsumer } from './consumer.js';
import { discoverKinesis } from './discover.js';
import { openKinesis } from './reader.js';
import { KINESIS_VIRTUAL_COLUMNS } from './records.js';
import { kinesisRules } from './rules.js';
import { kinesisStatusShape } from './status-shape.js';

/** Amazon Kinesis Data Streams and servers that speak its API (README, "How a Kinesis pipe runs"). */
export const kinesisConnector: SourceConnector & CleansUpOnDelete & ReportsStatus = {
  kind: 'kinesis',
  virtualColumns: KINESIS_VIRTUAL_COLUMNS,
  createProblems: kinesisProblems,
  open: openKinesis,
  statusShape: kinesisStatusShape,
  // The consumer an enhanced fan-out pipe registered (failures are retried by the runtime).
  async deleted(config, context) {
    const source = config.source.kinesis as StoredKinesisSource | undefined;
    if (!source?.useEnhancedFanOut) return;
    const connection = await connectKinesis(source, context.organizationId);
    try {
      await deregisterConsumer(connection, source.streamName, context.pipeId, context.logger);
    } finally {
      connection.close();
    }
  },
};

/** A timestamp is the same when it names the same instant, in either of its forms. */
const sameInstant = (sent: unknown, stored: unknown) =>
  instantOf(sent as string | number).getTime() === instantOf(stored as string | number).getTime();

export const kinesisKind: SourceKind<typeof KinesisSource, 'kinesis'> = {
  name: 'kinesis',
  label: 'Kinesis',
  config: KinesisSource,
  patch: KinesisPatch,
  immutableFields: Object.fromEntries(
    Object.entries(KINESIS_IMMUTABLE).map(([field, assumed]) => [
      field,
      field === 'timestamp' ? { assumed, same: sameInstant } : { assumed },
    ]),
  ),
  applyDefaults() {},
  rules: kinesisRules,
  connector: kinesisConnector,
  discover: discoverKinesis,
};
