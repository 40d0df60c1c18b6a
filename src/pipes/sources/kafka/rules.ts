import type { Problem } from '../../../errors.js';
import { iamRoleRule } from '../aws/index.js';
import type { KafkaConfig } from './config.js';

/** Which credential fields each Kafka authentication takes (README, "How a Kafka pipe runs"). */
const KAFKA_CREDENTIALS: Record<string, string[]> = {
  PLAIN: ['username', 'password'],
  'SCRAM-SHA-256': ['username', 'password'],
  'SCRAM-SHA-512': ['username', 'password'],
  IAM_USER: ['accessKeyId', 'secretKey'],
  IAM_ROLE: [],
  MUTUAL_TLS: ['certificate', 'privateKey'],
};

export function kafkaRules(kafka: KafkaConfig, path: string, problems: Problem[]): void {
  const authentication = kafka.authentication ?? 'PLAIN';
  // Azure Event Hubs speaks Kafka with SASL PLAIN whose password is the namespace connection string.
  const wanted =
    kafka.type === 'azureeventhub' && authentication === 'PLAIN'
      ? ['connectionString']
      : (KAFKA_CREDENTIALS[authentication] ?? []);
  const credentials: Record<string, string | undefined> | undefined = kafka.credentials;
  // A local broker without TLS (plaintext://, SLUICE_ALLOW_PLAINTEXT_KAFKA) may have no SASL either.
  const plaintext = kafka.brokers
    .split(',')
    .every((broker) => broker.trim().toLowerCase().startsWith('plaintext://'));
  if (wanted.length > 0) {
    if (!credentials) {
      if (!(plaintext && authentication !== 'MUTUAL_TLS'))
        problems.push({
          path: `${path}.credentials`,
          message: `Required for ${authentication}: give ${wanted.join(' and ')}`,
        });
    } else {
      for (const field of wanted) {
        if (credentials[field] === undefined) {
          problems.push({ path: `${path}.credentials.${field}`, message: `Required for ${authentication}` });
        }
      }
      for (const field of Object.keys(credentials)) {
        if (!wanted.includes(field)) {
          problems.push({
            path: `${path}.credentials.${field}`,
            message: `Not used with ${authentication}: give only ${wanted.join(' and ')}`,
          });
        }
      }
    }
  } else if (credentials) {
    problems.push({ path: `${path}.credentials`, message: `Not used with ${authentication}: remove it` });
  }
  iamRoleRule(kafka, path, authentication === 'IAM_ROLE', problems);
  const offset = kafka.offset;
  if (offset) {
    const strategy = offset.strategy ?? (offset.timestamp !== undefined ? 'from_timestamp' : undefined);
    if (strategy === 'from_timestamp' && offset.timestamp === undefined) {
      problems.push({ path: `${path}.offset.timestamp`, message: 'Required with strategy from_timestamp' });
    }
    if (strategy !== 'from_timestamp' && offset.timestamp !== undefined) {
      problems.push({ path: `${path}.offset.timestamp`, message: 'Only used with strategy from_timestamp' });
    }
    if (offset.timestamp !== undefined && !isValidMinute(offset.timestamp)) {
      problems.push({ path: `${path}.offset.timestamp`, message: 'Not a real date and time' });
    }
  }
  const registry = kafka.schemaRegistry;
  if (registry && !registry.url.startsWith('https://')) {
    problems.push({ path: `${path}.schemaRegistry.url`, message: 'Must be an https URL' });
  }
  if (kafka.format === 'AvroConfluent' && !registry) {
    problems.push({ path: `${path}.schemaRegistry`, message: 'Required for format AvroConfluent' });
  }
}

function isValidMinute(text: string): boolean {
  const date = new Date(`${text}:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().startsWith(text);
}
