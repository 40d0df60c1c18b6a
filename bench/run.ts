import { benchAlerts } from './alerts.js';
import { benchApi } from './api.js';
import { benchConsole } from './console.js';
import { benchIdlePipes } from './idle-pipes.js';
import { benchKafka } from './kafka.js';
import { benchKinesis } from './kinesis.js';
import { benchMemory } from './memory.js';
import { benchObjectStorage } from './object-storage.js';
import { benchObjectStorageFixed } from './object-storage-fixed.js';
import { benchPostgres } from './postgres.js';

/** `npm run bench`: every benchmark, each printing its figures and its ratio to a baseline. */
const benches: Record<string, () => Promise<void>> = {
  api: benchApi,
  console: benchConsole,
  'object-storage': benchObjectStorage,
  'object-storage-fixed': benchObjectStorageFixed,
  memory: benchMemory,
  'idle-pipes': benchIdlePipes,
  alerts: benchAlerts,
  kafka: benchKafka,
  kinesis: benchKinesis,
  postgres: benchPostgres,
};
const only = process.argv.slice(2);
for (const [name, bench] of Object.entries(benches)) {
  if (only.length === 0 || only.includes(name)) await bench();
}
