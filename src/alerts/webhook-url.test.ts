import { describe, expect, it } from 'vitest';
import { isPrivateAddress, webhookUrlProblem } from './webhook-url.js';

describe('webhook URLs', () => {
  it.each([
    ['127.0.0.1', true],
    ['10.1.2.3', true],
    ['172.20.0.1', true],
    ['192.168.1.1', true],
    ['169.254.169.254', true],
    ['100.64.0.1', true],
    ['0.0.0.0', true],
    ['::1', true],
    ['fe80::1', true],
    ['fd00::1', true],
    ['::ffff:127.0.0.1', true],
    ['8.8.8.8', false],
    ['2001:4860:4860::8888', false],
  ])('%s is private: %s', (address, expected) => {
    expect(isPrivateAddress(address)).toBe(expected);
  });

  it('refuses private, loopback and link-local targets, including names that resolve to them', async () => {
    expect(await webhookUrlProblem('http://127.0.0.1:8080/hook', false)).toContain(
      'private, loopback or link-local',
    );
    expect(await webhookUrlProblem('http://[::1]/hook', false)).toContain('private, loopback or link-local');
    expect(await webhookUrlProblem('http://localhost/hook', false)).toContain(
      'private, loopback or link-local',
    );
    expect(await webhookUrlProblem('http://169.254.169.254/latest/meta-data', false)).toContain('link-local');
    expect(await webhookUrlProblem('http://127.0.0.1:8080/hook', true)).toBeUndefined();
    expect(await webhookUrlProblem('https://user:pass@example.com/hook', true)).toContain(
      'Must not carry credentials',
    );
    expect(await webhookUrlProblem('file:///etc/passwd', true)).toBe('Must be an http or https URL');
  });
});
