import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

const PRIVATE = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
] as const) {
  PRIVATE.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
] as const) {
  PRIVATE.addSubnet(network, prefix, 'ipv6');
}

/** A private, loopback or link-local address (IPv4-mapped IPv6 included). */
export function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return PRIVATE.check(mapped, 'ipv4');
  const family = isIP(address);
  return family === 4
    ? PRIVATE.check(address, 'ipv4')
    : family === 6
      ? PRIVATE.check(address, 'ipv6')
      : false;
}

/**
 * Why a host may not be reached on a user's behalf, or undefined: it does not resolve, or one of
 * its addresses is private, loopback or link-local (the network Sluice itself runs in).
 */
export async function privateHostProblem(hostname: string, allowedBy: string): Promise<string | undefined> {
  const host = hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((entry) => entry.address);
  } catch {
    return `the host ${host} does not resolve`;
  }
  if (addresses.some(isPrivateAddress)) {
    return `the host ${host} is a private, loopback or link-local address; an operator may allow those with ${allowedBy}=true`;
  }
  return undefined;
}
