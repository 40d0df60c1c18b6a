import type { KafkaCertificates } from './certs.js';

export interface BrokerPorts {
  plaintext: number;
  saslSsl: number;
  ssl: number;
  controller: number;
}

export type SaslMechanism = 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512';

export interface KafkaUser {
  mechanism: SaslMechanism;
  username: string;
  password: string;
}

export interface BrokerConfig {
  ports: BrokerPorts;
  dataDir: string;
  certificates: KafkaCertificates;
  /** The PLAIN users, declared in the listener's JAAS config (PLAIN has no credential store). */
  plainUsers: KafkaUser[];
  /** The one AWS key the listener's MSK IAM stand-in (MskIamValidator.java) accepts. */
  mskIam: MskIamKey;
}

export interface MskIamKey {
  accessKeyId: string;
  secretKey: string;
  region: string;
  /** The temporary keys of a role (as STS hands them out): accepted only with their session token. */
  role: { accessKeyId: string; secretKey: string; sessionToken: string };
}

const HOST = '127.0.0.1';

/**
 * One KRaft node acting as broker and controller. The client-facing listeners are PLAINTEXT,
 * SASL_SSL (PLAIN and both SCRAMs) and SSL with client certificates required; the controller
 * listens on a port of its own. Replication factors are 1 because there is one node, and the
 * initial rebalance delay is 0 so that a consumer group forms at once instead of after 3 s.
 */
export function serverProperties(config: BrokerConfig): string {
  const { ports, certificates } = config;
  const listeners = [
    `PLAINTEXT://${HOST}:${ports.plaintext}`,
    `SASL_SSL://${HOST}:${ports.saslSsl}`,
    `SSL://${HOST}:${ports.ssl}`,
  ];
  const plainUsers = config.plainUsers.map((user) => `user_${user.username}="${user.password}"`).join(' ');
  const properties: Record<string, string | number | boolean> = {
    'process.roles': 'broker,controller',
    'node.id': 1,
    // A static voter set: the quorum needs no `--standalone` formatting and survives restarts as is.
    'controller.quorum.voters': `1@${HOST}:${ports.controller}`,
    'controller.listener.names': 'CONTROLLER',
    // After a kill the controller keeps the dead broker's registration until its session times
    // out (9 s by default) and refuses the restarted broker meanwhile; 4 s shortens a restart
    // while still riding out a GC pause or a busy CPU.
    'broker.heartbeat.interval.ms': 1_000,
    'broker.session.timeout.ms': 4_000,
    listeners: [...listeners, `CONTROLLER://${HOST}:${ports.controller}`].join(','),
    'advertised.listeners': listeners.join(','),
    'listener.security.protocol.map': 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL',
    'inter.broker.listener.name': 'PLAINTEXT',
    'log.dirs': config.dataDir,
    'auto.create.topics.enable': false,
    'num.partitions': 1,
    'offsets.topic.replication.factor': 1,
    'offsets.topic.num.partitions': 1,
    'transaction.state.log.replication.factor': 1,
    'transaction.state.log.min.isr': 1,
    'share.coordinator.state.topic.replication.factor': 1,
    'share.coordinator.state.topic.min.isr': 1,
    'group.initial.rebalance.delay.ms': 0,
    'sasl.enabled.mechanisms': 'PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER',
    // OAUTHBEARER as Amazon MSK's IAM access takes it: a SigV4-signed token, checked by the
    // tests' stand-in (MskIamValidator.java, compiled onto the broker's classpath).
    'listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class': 'MskIamValidator',
    'listener.name.sasl_ssl.oauthbearer.sasl.jaas.config': `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="broker" accessKeyId="${config.mskIam.accessKeyId}" secretKey="${config.mskIam.secretKey}" region="${config.mskIam.region}" roleAccessKeyId="${config.mskIam.role.accessKeyId}" roleSecretKey="${config.mskIam.role.secretKey}" roleSessionToken="${config.mskIam.role.sessionToken}";`,
    'listener.name.sasl_ssl.plain.sasl.jaas.config': `org.apache.kafka.common.security.plain.PlainLoginModule required ${plainUsers};`,
    'listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config':
      'org.apache.kafka.common.security.scram.ScramLoginModule required;',
    'listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config':
      'org.apache.kafka.common.security.scram.ScramLoginModule required;',
    'ssl.keystore.type': 'PKCS12',
    'ssl.keystore.location': certificates.brokerKeystore,
    'ssl.keystore.password': certificates.brokerKeystorePassword,
    'ssl.key.password': certificates.brokerKeystorePassword,
    'ssl.truststore.type': 'PEM',
    'ssl.truststore.location': certificates.caFile,
    // Only on the SSL listener: SASL_SSL clients authenticate with SASL, not with a certificate.
    'listener.name.ssl.ssl.client.auth': 'required',
  };
  return `${Object.entries(properties)
    .map(([key, value]) => `${key}=${value}`)
    .join('\n')}\n`;
}

/** Everything Kafka logs goes to the file named by the `sluice.kafka.log` system property. */
export const LOG4J2_PROPERTIES = `status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = \${sys:sluice.kafka.log}
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.file.ref = file
`;

/** StorageTool's `--add-scram` argument that creates `user` when the storage is formatted. */
export function scramArgument(user: KafkaUser): string {
  return `${user.mechanism}=[name=${user.username},password=${user.password}]`;
}
