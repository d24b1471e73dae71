import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * Where a completion callback may be sent (issue 28 item 6; SSRF): in production never to an address inside the
 * deployment's own networks. Node's own `net.BlockList` holds the ranges (no dependency; it also matches an IPv4
 * address written as IPv4-mapped IPv6, `::ffff:10.0.0.1`). Checked at launch and again at each delivery, on the
 * address the connection actually uses (a `lookup` for the socket), since a name can resolve elsewhere later.
 */
const REFUSED_RANGES: readonly [string, number, 'ipv4' | 'ipv6', string][] = [
  ['0.0.0.0', 8, 'ipv4', 'this network'],
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['10.0.0.0', 8, 'ipv4', 'private'],
  ['172.16.0.0', 12, 'ipv4', 'private'],
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['100.64.0.0', 10, 'ipv4', 'carrier-grade NAT'],
  // Link-local holds the cloud metadata services (169.254.169.254, 169.254.170.2).
  ['169.254.0.0', 16, 'ipv4', 'link-local'],
  ['192.0.0.0', 24, 'ipv4', 'IETF protocol assignments'],
  ['224.0.0.0', 4, 'ipv4', 'multicast'],
  ['240.0.0.0', 4, 'ipv4', 'reserved'],
  ['::', 128, 'ipv6', 'unspecified'],
  ['::1', 128, 'ipv6', 'loopback'],
  // Unique-local holds AWS's IPv6 metadata service (fd00:ec2::254).
  ['fc00::', 7, 'ipv6', 'unique-local'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['fec0::', 10, 'ipv6', 'site-local'],
  ['ff00::', 8, 'ipv6', 'multicast'],
];

const refused = new BlockList();
for (const [net, prefix, type] of REFUSED_RANGES) refused.addSubnet(net, prefix, type);

/** The range an address falls in when a callback may not go there, else null. */
export function refusedRange(address: string): string | null {
  const family = isIP(address);
  if (family === 0) return 'not an IP address';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (!refused.check(address, type)) return null;
  const probe = new BlockList();
  for (const [net, prefix, t, name] of REFUSED_RANGES) {
    if (t !== type) continue;
    probe.addSubnet(net, prefix, t);
    if (probe.check(address, type)) return name;
  }
  // An IPv4-mapped IPv6 address matched an IPv4 range.
  return 'an IPv4 range written as IPv6';
}

export class CallbackAddressRefused extends Error {
  constructor(
    readonly host: string,
    readonly reason: string,
  ) {
    super(`callback host ${host} is refused: ${reason}`);
    this.name = 'CallbackAddressRefused';
  }
}

/** The URL's host as an address or name: `new URL` keeps IPv6 literals in brackets. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/** Every address a name resolves to now (all must be allowed: a connection may use any). */
async function resolveAll(host: string): Promise<LookupAddress[]> {
  if (isIP(host)) return [{ address: host, family: isIP(host) }];
  return new Promise((resolve, reject) => {
    dnsLookup(host, { all: true }, (err, addresses) => (err ? reject(err) : resolve(addresses)));
  });
}

/**
 * The launch's check: throws `CallbackAddressRefused` when the host, or any address it resolves to, is in a refused
 * range, or does not resolve at all. Only in production; in development and tests every address is allowed.
 */
export async function assertPublicCallbackHost(url: URL, production: boolean): Promise<void> {
  if (!production) return;
  const host = hostOf(url);
  let addresses: LookupAddress[];
  try {
    addresses = await resolveAll(host);
  } catch (err) {
    throw new CallbackAddressRefused(host, `it does not resolve (${(err as NodeJS.ErrnoException).code ?? 'lookup failed'})`);
  }
  for (const { address } of addresses) {
    const range = refusedRange(address);
    if (range) throw new CallbackAddressRefused(host, `it resolves to ${address} (${range})`);
  }
}

/**
 * A socket `lookup` that refuses, in production, a name resolving into a refused range: the delivery connects only
 * to an address this checked, so a name re-pointed between the check and the connection gains nothing.
 */
export function guardedLookup(production: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const bad = production ? addresses.find((a) => refusedRange(a.address) !== null) : undefined;
      if (bad) return callback(new CallbackAddressRefused(hostname, `it resolves to ${bad.address} (${refusedRange(bad.address)})`), '', 0);
      if (options.all) return callback(null, addresses);
      const [first] = addresses;
      return callback(null, first.address, first.family);
    });
  };
}
