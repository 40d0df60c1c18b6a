import type { PipeConfig } from '../../model.js';
import { PermanentError } from '../../records/index.js';
import { mskTokenProvider } from './msk-iam.js';

export type KafkaConfig = NonNullable<PipeConfig['source']['kafka']>;

/** A broker without TLS is written `plaintext://host:port` and needs SLUICE_ALLOW_PLAINTEXT_KAFKA. */
const PLAINTEXT = 'plaintext://';

export interface Broker {
  host: string;
  port: number;
  plaintext: boolean;
}

/** How @platformatic/kafka reaches a pipe's brokers (its BaseOptions' connection fields). */
export interface ConnectionOptions {
  bootstrapBrokers: string[];
  tls?: { ca?: string; cert?: string; key?: string };
  sasl?:
    | { mechanism: 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512'; username: string; password: string }
    | { mechanism: 'OAUTHBEARER'; token: () => Promise<string> };
}

/** `host:port` entries of the comma list; a missing port is Kafka's 9092 (9093 on Event Hubs). */
export function parseBrokers(source: Pick<KafkaConfig, 'brokers' | 'type'>): Broker[] {
  return source.brokers
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0)
    .map((entry) => {
      const plaintext = entry.toLowerCase().startsWith(PLAINTEXT);
      const address = plaintext ? entry.slice(PLAINTEXT.length) : entry;
      const match = /^(\[[^\]]+\]|[^:/\s]+)(?::(\d{1,5}))?$/.exec(address);
      if (!match)
        throw new PermanentError(
          'SLUICE_ERR_SOURCE_CONFIG',
          `"${entry}" is not a broker address: write host:port`,
        );
      const host = (match[1] ?? '').replace(/^\[|\]$/g, '');
      const port = match[2] ? Number(match[2]) : source.type === 'azureeventhub' ? 9093 : 9092;
      if (port < 1 || port > 65_535)
        throw new PermanentError('SLUICE_ERR_SOURCE_CONFIG', `"${entry}" has no valid port`);
      return { host, port, plaintext };
    });
}

/** Options that the API accepts and ingestion cannot honour yet (README, "What works today"). */
export function unsupportedKafka(source: KafkaConfig): { field: string; message: string } | undefined {
  if (source.format === 'Protobuf') {
    return {
      field: 'format',
      message: 'format Protobuf is not supported yet for Kafka pipes: use JSONEachRow, Avro or AvroConfluent',
    };
  }
  return undefined;
}

/**
 * The connection a pipe's configuration asks for: TLS always (with the pipe's CA, and its client
 * certificate for MUTUAL_TLS), SASL for PLAIN and SCRAM; plaintext only where the operator allowed
 * it and the pipe spelled it out for every broker.
 */
export function connectionOptions(
  source: KafkaConfig,
  context: { allowPlaintextKafka: boolean; organizationId: string; awsRegion: string | undefined },
): ConnectionOptions {
  const allowPlaintext = context.allowPlaintextKafka;
  const brokers = parseBrokers(source);
  if (brokers.length === 0)
    throw new PermanentError('SLUICE_ERR_SOURCE_CONFIG', 'brokers names no broker: write host:port, ...');
  const plaintext = brokers.filter((broker) => broker.plaintext).length;
  if (plaintext > 0 && plaintext < brokers.length) {
    throw new PermanentError(
      'SLUICE_ERR_SOURCE_CONFIG',
      'brokers mixes plaintext:// and TLS brokers: a cluster is one or the other',
    );
  }
  if (plaintext > 0 && !allowPlaintext) {
    throw new PermanentError(
      'SLUICE_ERR_PLAINTEXT_REFUSED',
      'plaintext:// brokers are refused: the server allows them only with SLUICE_ALLOW_PLAINTEXT_KAFKA=true',
    );
  }
  const options: ConnectionOptions = {
    bootstrapBrokers: brokers.map((b) => `${b.host.includes(':') ? `[${b.host}]` : b.host}:${b.port}`),
  };
  const credentials = source.credentials ?? {};
  const authentication = source.authentication ?? 'PLAIN';
  if (plaintext === 0) {
    options.tls = {
      ...(source.caCertificate ? { ca: source.caCertificate } : {}),
      ...(authentication === 'MUTUAL_TLS' && credentials.certificate && credentials.privateKey
        ? { cert: credentials.certificate, key: credentials.privateKey }
        : {}),
    };
  }
  if (source.type === 'azureeventhub' && authentication === 'PLAIN' && credentials.connectionString) {
    // Event Hubs' Kafka endpoint: SASL PLAIN whose user is literally $ConnectionString.
    options.sasl = {
      mechanism: 'PLAIN',
      username: '$ConnectionString',
      password: credentials.connectionString,
    };
  } else if (authentication === 'IAM_USER' || authentication === 'IAM_ROLE') {
    options.sasl = {
      mechanism: 'OAUTHBEARER',
      token: mskTokenProvider(source, brokers, context),
    };
  } else if (
    (authentication === 'PLAIN' || authentication.startsWith('SCRAM-')) &&
    credentials.username &&
    credentials.password
  ) {
    options.sasl = {
      mechanism: authentication as 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512',
      username: credentials.username,
      password: credentials.password,
    };
  }
  return options;
}

/** The topics of the comma list, each once, in the order given. */
export function topicNames(source: Pick<KafkaConfig, 'topics'>): string[] {
  return [
    ...new Set(
      source.topics
        .split(',')
        .map((topic) => topic.trim())
        .filter((topic) => topic.length > 0),
    ),
  ];
}
