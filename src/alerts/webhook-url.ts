import { isPrivateAddress, privateHostProblem } from '../net/index.js';

export { isPrivateAddress };

/**
 * Why a webhook URL is refused, or undefined: it must be http(s), and unless the operator allows
 * it (SLUICE_ALLOW_PRIVATE_WEBHOOKS), every address its host resolves to must be public, so an
 * alert cannot be aimed at the network Sluice runs in.
 */
export async function webhookUrlProblem(url: string, allowPrivate: boolean): Promise<string | undefined> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'Must be a URL';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'Must be an http or https URL';
  if (parsed.username || parsed.password) return 'Must not carry credentials: use headers for them';
  if (allowPrivate) return undefined;
  const problem = await privateHostProblem(parsed.hostname, 'SLUICE_ALLOW_PRIVATE_WEBHOOKS');
  return problem && problem.charAt(0).toUpperCase() + problem.slice(1);
}
