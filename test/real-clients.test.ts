import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForState } from './support/runtime.js';
import { BOOTSTRAP_TOKEN, startSluice, type TestSluice } from './support/sluice.js';

/** A request body as a client shapes it (test/fixtures/clients/). */
async function fixture(name: string): Promise<Record<string, any>> {
  return JSON.parse(await readFile(new URL(`./fixtures/clients/${name}.json`, import.meta.url), 'utf8'));
}

/**
 * What real clients send (the hosted service's Terraform provider and cloud CLI, a new user), to a
 * Sluice started as a user runs it: the pipe runtime on, so create checks run.
 */
describe('what real clients send', () => {
  let s: TestSluice;
  beforeAll(async () => {
    s = await startSluice({ runtime: true });
  });
  afterAll(() => s.close());

  it('a one-off pipe on a location that matches no file is a 400 naming the URL; a continuous one waits', async () => {
    const body = await fixture('oneoff-empty-location');
    const oneOff = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(oneOff.statusCode).toBe(400);
    expect(oneOff.json.error).toContain(
      'source.objectStorage.url: file:///nothing-here/**.ndjson matches no file',
    );
    expect(oneOff.json.error).not.toContain(s.dataDir);
    const listed = await s.request({ method: 'GET', url: s.pipesUrl });
    expect(listed.json.result).toEqual([]);
    body.source.objectStorage.isContinuous = true;
    const continuous = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(continuous.statusCode).toBe(200);
    const status = await waitForState(s, continuous.json.result.id, 'Running');
    expect(status).toMatchObject({ filesDone: 0, filesPending: 0 });
  });

  it('start on a running pipe is a 400 saying it "is already running" (Terraform takes that as success)', async () => {
    const body = await fixture('oneoff-empty-location');
    body.name = 'waiting';
    body.destination.table = 'waiting';
    body.source.objectStorage.isContinuous = true;
    const created = await s.request({ method: 'POST', url: s.pipesUrl, body });
    const id = created.json.result.id;
    await waitForState(s, id, 'Running');
    const start = await s.request({
      method: 'PATCH',
      url: `${s.pipesUrl}/${id}/state`,
      body: await fixture('state-start'),
    });
    expect(start.statusCode).toBe(400);
    expect(start.json.error).toContain('is already running');
  });

  it("errors name file:// paths as the user wrote them, never the server's directories", async () => {
    const files = join(s.dataDir, 'files', 'broken');
    await mkdir(files, { recursive: true });
    await writeFile(join(files, 'a.ndjson'), '{"id": 1, "name": "ok"}\n{"id": "not a number", ');
    const body = await fixture('oneoff-empty-location');
    body.name = 'broken';
    body.destination.table = 'broken';
    body.source.objectStorage.url = 'file:///broken/*.ndjson';
    body.source.validateSamples = true;
    const response = await s.request({ method: 'POST', url: s.pipesUrl, body });
    expect(response.statusCode).toBe(400);
    expect(response.json.error).toContain('source.validateSamples: broken/a.ndjson, record 2');
    expect(response.json.error).toContain('(in file/uri file:///broken/a.ndjson)');
    expect(response.json.error).not.toContain(s.dataDir);
  });

  it('DELETE of an alert that is already gone answers 200', async () => {
    const auth = `Bearer ${BOOTSTRAP_TOKEN}`;
    const missing = '6700000000000000000000aa';
    const response = await s.request({ method: 'DELETE', url: `/api/v2/alerts/${missing}`, auth });
    expect(response.statusCode).toBe(200);
  });
});
