import { readFile } from 'node:fs/promises';

/** The PEM files HTTPS is served with (SLUICE_TLS_CERT and SLUICE_TLS_KEY). */
export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
}

/** Reads the certificate chain and key; a file that cannot be read is named in the error. */
export async function readTls(files: TlsFiles): Promise<TlsMaterial> {
  const read = (path: string, what: string) =>
    readFile(path).catch((error: NodeJS.ErrnoException) => {
      throw new Error(`cannot read the TLS ${what} ${path}: ${error.code ?? error.message}`);
    });
  const [cert, key] = await Promise.all([read(files.certFile, 'certificate'), read(files.keyFile, 'key')]);
  return { cert, key };
}
