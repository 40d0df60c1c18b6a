import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_RATE_LIMIT, loadConfig } from './config.js';

describe('loadConfig', () => {
  it('has defaults that need nothing installed', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      host: '127.0.0.1',
      port: 8080,
      databaseUrl: undefined,
      masterKey: undefined,
      logLevel: 'info',
      rateLimit: DEFAULT_RATE_LIMIT,
    });
    expect(config.dataDir).toMatch(/\/data$/);
  });

  it('takes flags over variables', () => {
    const config = loadConfig({ SLUICE_PORT: '9000', SLUICE_HOST: '0.0.0.0' }, { port: '9100' });
    expect(config.port).toBe(9100);
    expect(config.host).toBe('0.0.0.0');
  });

  it('takes SLUICE_PUBLIC_URL as an http(s) URL without its trailing slash', () => {
    expect(loadConfig({ SLUICE_PUBLIC_URL: 'https://sluice.example.com/' }).publicUrl).toBe(
      'https://sluice.example.com',
    );
    expect(() => loadConfig({ SLUICE_PUBLIC_URL: 'sluice.example.com' })).toThrow(
      'SLUICE_PUBLIC_URL (--public-url) must be an http(s) URL, got "sluice.example.com"',
    );
  });

  it('takes SLUICE_CONSOLE_SESSION_HOURS as hours, fractions allowed', () => {
    expect(loadConfig({}).consoleSessionHours).toBe(12);
    expect(loadConfig({ SLUICE_CONSOLE_SESSION_HOURS: '0.5' }).consoleSessionHours).toBe(0.5);
    expect(loadConfig({}, { 'console-session-hours': '24' }).consoleSessionHours).toBe(24);
    for (const bad of ['0', '-1', 'abc', '1e3', '9000'])
      expect(() => loadConfig({ SLUICE_CONSOLE_SESSION_HOURS: bad })).toThrow(
        `SLUICE_CONSOLE_SESSION_HOURS (--console-session-hours) must be a number of hours from 0.001 to 8760 (fractions allowed, like 0.5), got "${bad}"`,
      );
  });

  it('reports every bad value at once', () => {
    let error: ConfigError | undefined;
    try {
      loadConfig({
        SLUICE_PORT: '70000',
        SLUICE_RATE_LIMIT: '-1',
        SLUICE_DATABASE_URL: 'mysql://x',
        SLUICE_MASTER_KEY: 'abc',
        SLUICE_BOOTSTRAP_KEY_ID: 'only-the-id',
      });
    } catch (caught) {
      error = caught as ConfigError;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect(error?.code).toBe('SLUICE_ERR_CONFIG');
    expect(error?.problems).toHaveLength(5);
    expect(error?.message).toContain(
      'SLUICE_DATABASE_URL (--database-url) must be a postgres:// or postgresql:// URL',
    );
    expect(error?.message).toContain(
      'SLUICE_BOOTSTRAP_KEY_ID and SLUICE_BOOTSTRAP_KEY_SECRET must be set together',
    );
  });

  it('accepts a master key as hex or base64', () => {
    expect(loadConfig({ SLUICE_MASTER_KEY: 'ab'.repeat(32) }).masterKey).toBe('ab'.repeat(32));
    const base64 = Buffer.alloc(32, 7).toString('base64');
    expect(loadConfig({ SLUICE_MASTER_KEY: base64 }).masterKey).toBe(base64);
  });
});
