/**
 * `npm run bench`: every benchmark, each printing its figures and its ratio to a baseline. Each is
 * imported only when it runs: a bench measures Sluice in this process, and the others' modules
 * (a browser driver, storage emulators, a second PostgreSQL) would otherwise sit in its heap,
 * which every full garbage collection of Sluice's marks again.
 */
const benches: Record<string, () => Promise<void>> = {
  api: async () => (await import('./api.js')).benchApi(),
  console: async () => (await import('./console.js')).benchConsole(),
  'object-storage': async () => (await import('./object-storage.js')).benchObjectStorage(),
  'object-storage-fixed': async () => (await import('./object-storage-fixed.js')).benchObjectStorageFixed(),
  memory: async () => (await import('./memory.js')).benchMemory(),
  'idle-pipes': async () => (await import('./idle-pipes.js')).benchIdlePipes(),
  alerts: async () => (await import('./alerts.js')).benchAlerts(),
  kafka: async () => (await import('./kafka.js')).benchKafka(),
  kinesis: async () => (await import('./kinesis.js')).benchKinesis(),
  postgres: async () => (await import('./postgres.js')).benchPostgres(),
};
const only = process.argv.slice(2);
for (const [name, bench] of Object.entries(benches)) {
  if (only.length === 0 || only.includes(name)) await bench();
}
