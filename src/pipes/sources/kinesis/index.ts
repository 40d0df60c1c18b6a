import type { SourceConnector } from '../contract.js';
import { kinesisProblems } from './checks.js';
import { openKinesis } from './reader.js';
import { KINESIS_VIRTUAL_COLUMNS } from './records.js';

/** Amazon Kinesis Data Streams and servers that speak its API (README, "How a Kinesis pipe runs"). */
export const kinesisConnector: SourceConnector = {
  kind: 'kinesis',
  virtualColumns: KINESIS_VIRTUAL_COLUMNS,
  createProblems: kinesisProblems,
  open: openKinesis,
};
