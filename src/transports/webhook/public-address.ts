/**
 * Which network addresses a webhook may reach: the guard against server-side request
 * forgery. A webhook's URL is often the subscriber's (typed into a settings page), so
 * without a guard anyone who can register a webhook can make the relay POST into the
 * service's own network: the cloud metadata endpoint (169.254.169.254, which hands out
 * credentials), an admin port on loopback, a database on 10.x.
 *
 * The check is on ADDRESSES, after DNS resolution, because a public-looking name can
 * resolve to 127.0.0.1; and the transport connects to exactly the address it checked
 * (see `pinned-connector.ts`), because a name that resolved to a public address a moment
 * ago can resolve to a private one now (DNS rebinding).
 *
 * Parsed by hand, not with `net.BlockList`: a BlockList holding `::ffff:0:0/96` also
 * matches every plain IPv4 address, which is the kind of surprise a guard cannot have.
 */
import { isIP } from 'node:net';

/** One refused range: a name for the error message, the family, the prefix as bits. */
interface Range {
  readonly name: string;
  readonly family: 4 | 6;
  readonly base: bigint;
  readonly bits: number;
}

function range(name: string, cidr: string): Range {
  const [address, bits] = cidr.split('/');
  const family = isIP(address) as 4 | 6;
  const base = family === 4 ? ipv4Value(address)! : ipv6Value(address)!;
  return { name, family, base, bits: Number(bits) };
}

/**
 * The ranges refused: IANA's special-purpose registries, less nothing a webhook needs.
 * Every one is somewhere a public webhook endpoint cannot be.
 */
const REFUSED: readonly Range[] = [
  range('"this network"', '0.0.0.0/8'),
  range('private (RFC 1918)', '10.0.0.0/8'),
  range('carrier-grade NAT (RFC 6598)', '100.64.0.0/10'),
  range('loopback', '127.0.0.0/8'),
  range('link-local (cloud metadata)', '169.254.0.0/16'),
  range('private (RFC 1918)', '172.16.0.0/12'),
  range('IETF protocol assignments', '192.0.0.0/24'),
  range('documentation', '192.0.2.0/24'),
  range('6to4 relay', '192.88.99.0/24'),
  range('private (RFC 1918)', '192.168.0.0/16'),
  range('benchmarking', '198.18.0.0/15'),
  range('documentation', '198.51.100.0/24'),
  range('documentation', '203.0.113.0/24'),
  range('multicast', '224.0.0.0/4'),
  range('reserved', '240.0.0.0/4'),
  range('IPv4-mapped', '::ffff:0:0/96'),
  range('unspecified, loopback or IPv4-compatible', '::/96'),
  range('NAT64', '64:ff9b::/96'),
  range('local NAT64', '64:ff9b:1::/48'),
  range('discard', '100::/64'),
  range('Teredo', '2001::/32'),
  range('documentation', '2001:db8::/32'),
  range('6to4', '2002::/16'),
  range('unique local (ULA)', 'fc00::/7'),
  range('link-local', 'fe80::/10'),
  range('site-local', 'fec0::/10'),
  range('multicast', 'ff00::/8'),
];

/**
 * Names refused before any lookup: the cloud metadata services' names (they resolve to
 * link-local addresses, refused anyway, but a resolver of the cloud may answer them with
 * anything) and `localhost` with its subdomains (RFC 6761: always loopback).
 */
const REFUSED_NAMES: readonly string[] = [
  'localhost',
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'metadata.azure.com',
  'instance-data',
  'instance-data.ec2.internal',
];

/**
 * Why `hostname` is refused before it is even looked up (a metadata service's name,
 * `localhost`), or undefined. Case and a trailing dot do not matter.
 */
export function refusedHostnameReason(hostname: string): string | undefined {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  if (REFUSED_NAMES.includes(name) || name.endsWith('.localhost'))
    return `the name ${name} is refused (loopback or a cloud metadata service)`;
  return undefined;
}

/**
 * Why `address` is not a public address (the name of its range), or undefined for a
 * public one. Anything that is not an IP address at all is refused too.
 */
export function nonPublicAddressReason(address: string): string | undefined {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (bare.includes('%')) return `${bare} carries a zone id (a link-local address)`;
  const family = isIP(bare);
  if (family === 0) return `${bare} is not an IP address`;
  const value = family === 4 ? ipv4Value(bare) : ipv6Value(bare);
  if (value === undefined) return `${bare} is not an IP address`;
  const width = family === 4 ? 32 : 128;
  for (const r of REFUSED) {
    if (r.family !== family) continue;
    const shift = BigInt(width - r.bits);
    if (value >> shift === r.base >> shift) return `${bare} is a ${r.name} address`;
  }
  return undefined;
}

/**
 * Whether `address` (an IPv4 or IPv6 address, brackets allowed) is a public internet
 * address a webhook may be sent to. Refuses loopback (127/8, ::1), private (10/8,
 * 172.16/12, 192.168/16), link-local (169.254/16 with the cloud metadata endpoint
 * 169.254.169.254, fe80::/10), carrier-grade NAT (100.64/10), IPv6 unique local
 * (fc00::/7), IPv4-mapped IPv6 (::ffff:0:0/96), 0.0.0.0, multicast, documentation and
 * the other special-purpose ranges — and anything that is not an address.
 *
 * The default `allowsAddress` of {@link webhook}, which calls it with every address a
 * request is about to connect to (and the name it was resolved from, refused when it is
 * `localhost` or a metadata service's).
 */
export function isPublicAddress(address: string, hostname?: string): boolean {
  if (hostname !== undefined && refusedHostnameReason(hostname) !== undefined) return false;
  return nonPublicAddressReason(address) === undefined;
}

function ipv4Value(address: string): bigint | undefined {
  const parts = address.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0n;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part) || Number(part) > 255) return undefined;
    value = (value << 8n) | BigInt(part);
  }
  return value;
}

function ipv6Value(address: string): bigint | undefined {
  let text = address.toLowerCase();
  // A dotted IPv4 tail (::ffff:127.0.0.1) is two hextets.
  const dotted = text.match(/^(.*:)(\d+\.\d+\.\d+\.\d+)$/);
  if (dotted) {
    const v4 = ipv4Value(dotted[2]);
    if (v4 === undefined) return undefined;
    text = `${dotted[1]}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const head = halves[0] ? halves[0].split(':') : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail];
  let value = 0n;
  for (const group of groups) {
    if (!/^[0-9a-f]{1,4}$/.test(group)) return undefined;
    value = (value << 16n) | BigInt(`0x${group}`);
  }
  return value;
}
