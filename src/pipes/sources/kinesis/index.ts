import type { CleansUpOnDelete, ReportsStatus, SourceConnector } from '../contract.js';
import { kinesisProblems } from './checks.js';
import { connectKinesis, type KinesisSource } from './client.js';
import { deregisterConsumer } from './consumer.js';
import { openKinesis } from './reader.js';
import { KINESIS_VIRTUAL_COLUMNS } from './records.js';
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
    const source = config.source.kinesis as KinesisSource | undefined;
    if (!source?.useEnhancedFanOut) return;
    const connection = await connectKinesis(source, context.organizationId);
    try {
      await deregisterConsumer(connection, source.streamName, context.pipeId, context.logger);
    } finally {
      connection.close();
    }
  },
};

export { discoverKinesis } from './discover.js';
