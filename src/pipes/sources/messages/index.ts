export { ClaimedMessages } from './claimed.js';
export { FirstMessages } from './first-messages.js';
export { batchLimits, flushDue, type HeldMessages, type StreamFlush, streamFlush } from './flush.js';
export {
  describe,
  type InferredMessages,
  inferenceReason,
  inferMessages,
  previewRecords,
  unreadableRecords,
} from './infer.js';
export { loadMessages, sampleProblem } from './load.js';
export { badRecord, type MessageFormat, type MessagePlan, messagePlan } from './plan.js';
export type { Reading } from './reading.js';
export { RegistryError, type SchemaAnswer, SchemaRegistryClient } from './schema-registry.js';
export type { MessageSource, VirtualType, VirtualValue } from './source.js';
export { RecentWrites, takeAfterMs, type WriteTiming } from './visible-within.js';
