import type { RunningKafka } from './kafka.js';
import type { RunningKinesis } from './kinesis.js';

// Request bodies of schema discovery as the hosted service's cloud CLI builds them
// (ClickHouse/clickhousectl, crates/clickhousectl/src/cloud/commands.rs), and PostgreSQL sources of
// the tests' server as a user writes them.

/**
 * `clickhousectl cloud clickpipe schema-discover <service> kafka --brokers ... --topics ... --format
 * JSONEachRow --auth PLAIN --username ... --password ... --ca-certificate ca.pem`: build_kafka_source,
 * serialized by serde, leaves the unset options out, always sends reversePrivateEndpointIds, and an
 * offset with the default strategy.
 */
export function cliKafkaDiscovery(
  kafka: RunningKafka,
  topics: string,
  overrides: Record<string, unknown> = {},
) {
  return {
    source: {
      kafka: {
        authentication: 'PLAIN',
        brokers: kafka.bootstrap.saslSsl,
        caCertificate: kafka.caPem,
        credentials: { username: kafka.users.plain.username, password: kafka.users.plain.password },
        format: 'JSONEachRow',
        offset: { strategy: 'from_beginning' },
        reversePrivateEndpointIds: [],
        topics,
        type: 'kafka',
        ...overrides,
      },
    },
  };
}

/**
 * `clickhousectl cloud clickpipe schema-discover <service> kinesis --stream-name ... --region ...
 * --format JSONEachRow --auth IAM_USER --access-key-id ... --secret-key ...`: build_kinesis_source,
 * with the default iterator type, no timestamp and no enhanced fan-out (both left out).
 */
export function cliKinesisDiscovery(kinesis: RunningKinesis, streamName: string) {
  return {
    source: {
      kinesis: {
        accessKey: {
          accessKeyId: kinesis.credentials.accessKeyId,
          secretKey: kinesis.credentials.secretAccessKey,
        },
        authentication: 'IAM_USER',
        format: 'JSONEachRow',
        iteratorType: 'TRIM_HORIZON',
        region: kinesis.region,
        streamName,
      },
    },
  };
}

/** The tests' PostgreSQL server as a postgres source names it (no TLS, the superuser). */
export function postgresConnection(port: number, database: string, password = 'postgres') {
  return {
    host: '127.0.0.1',
    port,
    database,
    disableTls: true,
    credentials: { username: 'postgres', password },
  };
}

/** The fields as the CLI reads and prints them (commands.rs, clickpipe_schema_discover: name, type, optional). */
export function asCliRows(result: {
  fields?: { name?: string; type?: string; optional?: boolean | null }[];
}) {
  return (result.fields ?? []).map((f) => ({ name: f.name, type: f.type, optional: f.optional }));
}
