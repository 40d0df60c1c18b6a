import { type LookupAddress, lookup as lookupCallback } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * An address Sluice must not reach on a user's behalf: anything but a global unicast address, as
 * ipaddr.js classifies it (private, loopback, link-local, carrier-grade NAT, multicast, reserved,
 * unspecified...). IPv6 forms that carry an IPv4 address (IPv4-mapped, IPv4-compatible, NAT64
 * 64:ff9b::/96 and its local-use prefix, 6to4, Teredo, SIIT) are judged by the IPv4 address they
 * carry, and refused when it is not global either.
 */
export function isPrivateAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv4') return parsed.range() !== 'unicast';
  const v6 = parsed as ipaddr.IPv6;
  const carried = carriedIPv4(v6);
  if (carried && carried.range() !== 'unicast') return true;
  return v6.range() !== 'unicast' && !(carried && EMBEDDING_RANGES.has(v6.range()));
}

/** IPv6 ranges whose addresses stand for an IPv4 address (judged by that address). */
const EMBEDDING_RANGES = new Set(['rfc6052', '6to4']);

/** The IPv4 address an IPv6 address carries, if it is of a form that carries one. */
function carriedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const bytes = address.toByteArray();
  const at = (offset: number) => new ipaddr.IPv4(bytes.slice(offset, offset + 4));
  const words = address.parts;
  if (address.isIPv4MappedAddress()) return address.toIPv4Address();
  // IPv4-compatible ::a.b.c.d (deprecated, still routed by some stacks) and SIIT ::ffff:0:a.b.c.d.
  if (words.slice(0, 6).every((word) => word === 0)) return at(12);
  if (words.slice(0, 4).every((w) => w === 0) && words[4] === 0xffff && words[5] === 0) return at(12);
  // NAT64: 64:ff9b::/96 and the local-use 64:ff9b:1::/48 carry the address in their last 32 bits.
  if (words[0] === 0x64 && words[1] === 0xff9b) return at(12);
  // 6to4: 2002:AABB:CCDD::/48 carries AA.BB.CC.DD.
  if (words[0] === 0x2002) return at(2);
  // Teredo: 2001:0::/32 carries the client's address, inverted, in the last 32 bits.
  if (words[0] === 0x2001 && words[1] === 0) {
    return new ipaddr.IPv4(bytes.slice(12, 16).map((byte) => byte ^ 0xff));
  }
  return undefined;
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

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for http(s).request and net.connect that refuses private, loopback and link-local
 * addresses at connect time: a check made before the request cannot hold, since the name may
 * resolve elsewhere when the request looks it up again (DNS rebinding).
 */
export function publicOnlyLookup(
  hostname: string,
  options: { all?: boolean; family?: number | 'IPv4' | 'IPv6' },
  callback: LookupCallback,
): void {
  lookupCallback(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, []);
    const refused = addresses.find((entry) => isPrivateAddress(entry.address));
    if (refused || addresses.length === 0) {
      const problem = new Error(`the host ${hostname} resolves to a private, loopback or link-local address`);
      return callback(Object.assign(problem, { code: 'SLUICE_ERR_PRIVATE_ADDRESS' }), []);
    }
    if (options.all) return callback(null, addresses);
    const first = addresses[0] as LookupAddress;
    callback(null, first.address, first.family);
  });
}
