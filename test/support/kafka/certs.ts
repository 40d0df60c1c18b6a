import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface KafkaCertificates {
  /** PEM of the CA that signed both the broker's and the client's certificate. */
  caPem: string;
  /** The CA on disk, as the broker's PEM truststore for client certificates. */
  caFile: string;
  /** The broker's key and chain, as the PKCS#12 keystore Kafka reads. */
  brokerKeystore: string;
  brokerKeystorePassword: string;
  clientCertPem: string;
  clientKeyPem: string;
  /** The broker's certificate and key as PEM files, for other servers a test starts with TLS. */
  serverCertFile: string;
  serverKeyFile: string;
}

/**
 * The extensions each certificate gets. The broker's SAN covers both names a test may dial, and
 * the broker certificate may also act as a client (the broker talks to itself on PLAINTEXT only,
 * but a TLS inter-broker listener would need it).
 */
const OPENSSL_CONFIG = `[req]
distinguished_name = dn
[dn]
[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[broker_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
authorityKeyIdentifier = keyid
[client_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
authorityKeyIdentifier = keyid
`;

/** EC keys: generated in milliseconds, and both the JDK and Node's OpenSSL take them. */
const NEW_EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-noenc'];
const VALID_DAYS = '7';

/** A fresh CA, a broker certificate and a client certificate, made with openssl in `dir`. */
export async function makeCertificates(dir: string): Promise<KafkaCertificates> {
  await mkdir(dir, { recursive: true });
  const file = (name: string) => join(dir, name);
  await writeFile(file('openssl.cnf'), OPENSSL_CONFIG);
  const openssl = (...args: string[]) => run('openssl', args, { cwd: dir });

  await openssl(
    'req',
    '-config',
    'openssl.cnf',
    '-x509',
    ...NEW_EC_KEY,
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    VALID_DAYS,
    '-subj',
    '/CN=Sluice test CA',
    '-extensions',
    'ca_ext',
  );
  await signedCertificate(openssl, 'broker', '/CN=localhost', 'broker_ext');
  await signedCertificate(openssl, 'client', '/CN=sluice-test-client', 'client_ext');

  const brokerKeystorePassword = randomBytes(12).toString('hex');
  await openssl(
    'pkcs12',
    '-export',
    '-in',
    'broker.pem',
    '-inkey',
    'broker.key',
    '-certfile',
    'ca.pem',
    '-name',
    'broker',
    '-out',
    'broker.p12',
    '-passout',
    `pass:${brokerKeystorePassword}`,
  );
  return {
    caPem: await readFile(file('ca.pem'), 'utf8'),
    caFile: file('ca.pem'),
    brokerKeystore: file('broker.p12'),
    brokerKeystorePassword,
    clientCertPem: await readFile(file('client.pem'), 'utf8'),
    clientKeyPem: await readFile(file('client.key'), 'utf8'),
    serverCertFile: file('broker.pem'),
    serverKeyFile: file('broker.key'),
  };
}

let serial = 1;

async function signedCertificate(
  openssl: (...args: string[]) => Promise<unknown>,
  name: string,
  subject: string,
  extensions: string,
): Promise<void> {
  await openssl(
    'req',
    '-config',
    'openssl.cnf',
    '-new',
    ...NEW_EC_KEY,
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
    '-subj',
    subject,
  );
  serial += 1;
  await openssl(
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-set_serial',
    String(serial),
    '-days',
    VALID_DAYS,
    '-extfile',
    'openssl.cnf',
    '-extensions',
    extensions,
    '-out',
    `${name}.pem`,
  );
}
