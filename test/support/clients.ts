import { readFile } from 'node:fs/promises';

/** A request body as a client shapes it (test/fixtures/clients/), fresh on every call. */
export async function fixture(name: string): Promise<Record<string, any>> {
  return JSON.parse(await readFile(new URL(`../fixtures/clients/${name}.json`, import.meta.url), 'utf8'));
}
