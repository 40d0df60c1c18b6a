import { randomBytes } from 'node:crypto';
import { Type as T, type TSchema } from '@sinclair/typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretBox } from '../src/crypto/index.js';
import { type AnySourceKind, SOURCE_KINDS, secretPathsOf } from '../src/pipes/index.js';
import type { PipeConfig } from '../src/pipes/model.js';
import { SealedConfigs } from '../src/pipes/sealed-configs.js';
import { isSecret, NonEmpty, Secret, StrictObject } from '../src/schema/index.js';
import { azurePipe, kafkaPipe, kinesisPipe, objectStoragePipe, postgresPipe } from './support/pipes.js';
import { startSluice, type TestSluice } from './support/sluice.js';

/**
 * Every field a kind's schema marks Secret, found by a walk of its own (not the one Sluice derives
 * its secret paths with, src/schema/secret.ts): it goes into arrays and unions too, so a marked
 * field the derivation does not reach still shows up here, filled, and in the clear.
 */
function markedFields(schema: TSchema, path: string[] = []): { path: string[]; schema: TSchema }[] {
  if (isSecret(schema)) return [{ path, schema }];
  const found: { path: string[]; schema: TSchema }[] = [];
  for (const [name, field] of Object.entries((schema.properties ?? {}) as Record<string, TSchema>)) {
    found.push(...markedFields(field, [...path, name]));
  }
  if (schema.items) found.push(...markedFields(schema.items as TSchema, [...path, '[]']));
  for (const member of (schema.anyOf ?? []) as TSchema[]) found.push(...markedFields(member, path));
  return found;
}

/** A value for a marked field with a marker in each of its strings, unique to where it stands. */
function markerValue(schema: TSchema, label: string): unknown {
  if (schema.type === 'object') {
    return Object.fromEntries(
      Object.keys(schema.properties ?? {}).map((name) => [name, `SECRET-MARKER-${label}.${name}`]),
    );
  }
  return `SECRET-MARKER-${label}`;
}

function setAt(root: Record<string, unknown>, path: string[], value: unknown): void {
  let node = root;
  for (const part of path.slice(0, -1)) {
    node[part] ??= {};
    node = node[part] as Record<string, unknown>;
  }
  node[path.at(-1) as string] = value;
}

/** A configuration of `kind` whose every Secret-marked field holds a marker. */
function configWithEverySecret(kind: AnySourceKind): { config: PipeConfig; markers: number } {
  const source: Record<string, unknown> = {};
  const fields = markedFields(kind.config);
  for (const field of fields)
    setAt(source, field.path, markerValue(field.schema, `${kind.name}.${field.path.join('.')}`));
  const config = {
    source: { [kind.name]: source },
    destination: {},
    fieldMappings: [],
    scaling: {},
    settings: {},
  };
  return { config: config as unknown as PipeConfig, markers: fields.length };
}

describe('secrets are sealed at rest: every field a kind marks Secret (issue 36)', () => {
  const box = new SecretBox(randomBytes(32));
  const sealed = new SealedConfigs(box, secretPathsOf(SOURCE_KINDS));

  it.each(SOURCE_KINDS.map((kind) => [kind.name, kind] as const))(
    '%s: no marked field is stored in the clear, and each comes back opened',
    (_name, kind) => {
      const { config, markers } = configWithEverySecret(kind);
      expect(markers).toBeGreaterThan(0);
      const stored = sealed.seal('00000000-0000-4000-8000-000000000001', config);
      expect(JSON.stringify(stored.config)).not.toContain('SECRET-MARKER');
      expect(stored.secrets).not.toContain('SECRET-MARKER');
      const opened = sealed.open({ id: '00000000-0000-4000-8000-000000000001', ...stored });
      expect(opened.config).toEqual(config);
    },
  );

  it('the secret paths are derived from the marks: the seven the registry held by hand before', () => {
    expect(secretPathsOf(SOURCE_KINDS).map((path) => path.join('.'))).toEqual([
      'source.kafka.schemaRegistry.credentials',
      'source.kafka.credentials',
      'source.objectStorage.connectionString',
      'source.objectStorage.accessKey',
      'source.objectStorage.serviceAccountKey',
      'source.kinesis.accessKey',
      'source.postgres.credentials',
    ]);
  });

  it('a secret the derivation cannot split out (inside an array) stops the server from starting', () => {
    const kind = {
      ...SOURCE_KINDS[0],
      name: 'listed',
      config: StrictObject({ keys: T.Array(StrictObject({ token: Secret(NonEmpty()) })) }),
    };
    expect(() => secretPathsOf([kind])).toThrow(/keys: a secret inside an array or a union cannot be sealed/);
  });
});

describe('secrets are sealed at rest: through the API, in the metadata store and in GET', () => {
  let s: TestSluice;
  beforeAll(async () => {
    s = await startSluice({ runtime: false });
  });
  afterAll(async () => {
    await s?.close();
  });

  const gcsPipe = () => {
    const body = objectStoragePipe();
    const storage = body.source.objectStorage as Record<string, unknown>;
    storage.type = 'gcs';
    storage.authentication = 'SERVICE_ACCOUNT';
    delete storage.accessKey;
    storage.serviceAccountKey = 'a-key';
    return body;
  };
  const bodies: [string, () => { source: Record<string, unknown> }][] = [
    ['kafka', kafkaPipe],
    ['objectStorage (s3)', objectStoragePipe],
    ['objectStorage (azure)', () => azurePipe()],
    ['objectStorage (gcs)', gcsPipe],
    ['kinesis', kinesisPipe],
    ['postgres', postgresPipe],
  ];

  it.each(bodies)(
    '%s: every marked field sent is neither stored in the clear nor returned',
    async (name, make) => {
      const body = make();
      const kind = SOURCE_KINDS.find((k) => body.source[k.name] !== undefined) as AnySourceKind;
      const source = body.source[kind.name] as Record<string, unknown>;
      const markers: string[] = [];
      for (const field of markedFields(kind.config)) {
        const parent = field.path.slice(0, -1).reduce<any>((node, part) => node?.[part], source);
        const leaf = field.path.at(-1) as string;
        if (parent?.[leaf] === undefined) continue;
        const value = parent[leaf];
        if (typeof value === 'string') parent[leaf] = `SECRET-MARKER-${markers.push(leaf)}-${name}`;
        else for (const key of Object.keys(value)) value[key] = `SECRET-MARKER-${markers.push(key)}-${name}`;
      }
      expect(markers.length).toBeGreaterThan(0);
      const created = await s.request({ method: 'POST', url: s.pipesUrl, body });
      expect(created.statusCode, created.body).toBe(200);
      const id = created.json.result.id;
      const [row] = await s.sluice.store.db.query<{ config: unknown; secrets: string }>(
        'select config, secrets from pipes where id = $1',
        [id],
      );
      expect(JSON.stringify(row?.config)).toContain(kind.name);
      expect(JSON.stringify(row?.config)).not.toContain('SECRET-MARKER');
      expect(row?.secrets).toMatch(/^v1:/);
      const read = await s.request({ method: 'GET', url: `${s.pipesUrl}/${id}` });
      expect(read.statusCode).toBe(200);
      expect(created.body).not.toContain('SECRET-MARKER');
      expect(read.body).not.toContain('SECRET-MARKER');
    },
  );
});

describe('secrets sent by a PATCH are sealed at rest too', () => {
  let s: TestSluice;
  beforeAll(async () => {
    s = await startSluice({ runtime: false });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('new Kafka credentials (the rotation Terraform sends) are neither stored in the clear nor returned', async () => {
    const created = await s.request({ method: 'POST', url: s.pipesUrl, body: kafkaPipe() });
    expect(created.statusCode, created.body).toBe(200);
    const id = created.json.result.id;
    const credentials = { username: 'PATCH-MARKER-user', password: 'PATCH-MARKER-password' };
    const patched = await s.request({
      method: 'PATCH',
      url: `${s.pipesUrl}/${id}`,
      body: { source: { kafka: { credentials } } },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    const [row] = await s.sluice.store.db.query<{ config: unknown; secrets: string }>(
      'select config, secrets from pipes where id = $1',
      [id],
    );
    expect(JSON.stringify(row?.config)).not.toContain('PATCH-MARKER');
    expect(row?.secrets).not.toContain('PATCH-MARKER');
    expect(patched.body).not.toContain('PATCH-MARKER');
    // Sealed, not dropped: the configuration the runtime opens has the new credentials.
    const view = await s.sluice.pipes.runtimeView(id);
    expect((view?.config.source.kafka as { credentials?: unknown } | undefined)?.credentials).toEqual(
      credentials,
    );
  });
});
