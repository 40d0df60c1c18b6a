import { readFile } from 'node:fs/promises';
import type { ErrorCode } from '../errors.js';

/** The PEM files HTTPS is served with (SLUICE_TLS_CERT and SLUICE_TLS_KEY). */
export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
}

/** The TLS files that cannot be read, each named (one message per file). */
export class TlsFilesError extends Error {
  readonly code: ErrorCode = 'SLUICE_ERR_TLS_FILES';

  constructor(readonly problems: string[]) {
    super(problems.join('; '));
  }
}

/** Reads the certificate chain and key; every file that cannot be read is named in the error. */
export async function readTls(files: TlsFiles): Promise<TlsMaterial> {
  const [cert, key] = await Promise.allSettled([readFile(files.certFile), readFile(files.keyFile)]);
  const problems = [
    [cert, 'certificate', files.certFile],
    [key, 'key', files.keyFile],
  ].flatMap(([result, what, path]) => {
    const settled = result as PromiseSettledResult<Buffer>;
    if (settled.status === 'fulfilled') return [];
    const error = settled.reason as NodeJS.ErrnoException;
    return [`cannot read the TLS ${what} ${path}: ${error.code ?? error.message}`];
  });
  if (cert.status === 'rejected' || key.status === 'rejected') throw new TlsFilesError(problems);
  return { cert: cert.value, key: key.value };
}
