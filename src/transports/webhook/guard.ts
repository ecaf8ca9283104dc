/**
 * The URL and connection checks of a webhook: {@link isPublicUrl} (a ready `allowsUrl`
 * check, usable on its own when a subscriber registers a URL) and the resolve-once,
 * check, connect-to-that-address lookup the transport's connections use, so what was
 * checked is what is connected to (no DNS-rebinding gap between a check and a connect).
 */

import type { LookupAddress } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { nonPublicAddressReason, refusedHostnameReason } from './public-address.js';

/** One address a name resolved to. */
export interface ResolvedAddress {
  readonly address: string;
  /** 4 or 6. */
  readonly family: number;
}

/**
 * Resolves a host name to every address it has: what the webhook's connections (and
 * {@link isPublicUrl}) look names up with. The default is the system resolver
 * (`dns.lookup` with `all: true`, so `/etc/hosts` counts); pass your own to use another
 * resolver, or in tests to make a name resolve where the test needs it.
 */
export type WebhookLookup = (hostname: string) => Promise<readonly ResolvedAddress[]>;

/**
 * Decides whether a connection may be made to `address`, resolved from `hostname` (the
 * same text for a URL naming an IP address). Called with every address, after DNS
 * resolution, right before connecting; a refusal fails the request before any byte is sent.
 */
export type AllowsAddress = (address: string, hostname: string) => boolean | Promise<boolean>;

/** The system resolver: every address of the name, in the resolver's order. */
export const systemLookup: WebhookLookup = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((a: LookupAddress) => ({
    address: a.address,
    family: a.family,
  }));

/** A connection the guard refused: what the webhook reports, never a secret. */
export class WebhookAddressRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookAddressRefused';
  }
}

/** The host of a URL without IPv6 brackets. */
export function bareHost(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

/** Why a URL may not be requested at all (not http(s), refused name), or undefined. */
export function urlShapeProblem(url: URL): string | undefined {
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    return `only http: and https: URLs are sent to (got ${url.protocol})`;
  return refusedHostnameReason(bareHost(url.hostname));
}

/**
 * Whether `url` is safe to send a webhook to from inside a service's network: an http(s)
 * URL whose host is not `localhost` or a cloud metadata service's name and whose every
 * address — the literal one, or each the name resolves to — is public (see
 * `isPublicAddress` for the ranges refused). A name that does not resolve is refused.
 *
 * Usable as a webhook's `allowsUrl`, or when a subscriber registers a URL, to refuse it
 * up front. The transport itself does not rely on it alone: a name can resolve to
 * something else a moment later, so its connections check the address they connect to
 * (`allowsAddress`, `isPublicAddress` by default).
 */
export async function isPublicUrl(
  url: string | URL,
  options: { readonly lookup?: WebhookLookup } = {},
): Promise<boolean> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (urlShapeProblem(parsed) !== undefined) return false;
  const host = bareHost(parsed.hostname);
  if (isIP(host)) return nonPublicAddressReason(host) === undefined;
  let addresses: readonly ResolvedAddress[];
  try {
    addresses = await (options.lookup ?? systemLookup)(host);
  } catch {
    return false;
  }
  return (
    addresses.length > 0 && addresses.every((a) => nonPublicAddressReason(a.address) === undefined)
  );
}

/** `net.connect`'s `lookup` callback, in the two shapes Node calls it with. */
type NetLookupCallback = (
  error: Error | null,
  address: string | readonly { address: string; family: number }[],
  family?: number,
) => void;

/**
 * A `lookup` for `net.connect` / `tls.connect` that resolves the name ONCE, checks every
 * address with `allowsAddress`, and hands back only those checked addresses, so the
 * socket connects to exactly what was checked. One refused address refuses the name: a
 * name that resolves to both a public and a private address is an attack or a mistake.
 */
export function checkedLookup(
  lookup: WebhookLookup,
  allowsAddress: AllowsAddress,
): (hostname: string, options: unknown, callback: NetLookupCallback) => void {
  return (hostname, options, callback) => {
    const opts = (typeof options === 'object' && options !== null ? options : {}) as {
      family?: number | string;
      all?: boolean;
    };
    const family = opts.family === 'IPv4' ? 4 : opts.family === 'IPv6' ? 6 : Number(opts.family);
    void (async () => {
      const resolved = await lookup(hostname);
      const addresses = resolved.filter(
        (a) => !(family === 4 || family === 6) || a.family === family,
      );
      if (addresses.length === 0)
        throw new WebhookAddressRefused(`the name ${hostname} resolved to no address`);
      for (const { address } of addresses) {
        if (!(await allowsAddress(address, hostname)))
          throw new WebhookAddressRefused(
            `the name ${hostname} resolved to ${address}, which allowsAddress refused${reasonSuffix(address)}`,
          );
      }
      return addresses;
    })().then(
      (addresses) => {
        if (opts.all) callback(null, addresses);
        else callback(null, addresses[0].address, addresses[0].family);
      },
      (error: unknown) => callback(error instanceof Error ? error : new Error(String(error)), ''),
    );
  };
}

/** ` (a loopback address)` for a non-public address, to say why it was refused. */
export function reasonSuffix(address: string): string {
  const reason = nonPublicAddressReason(address);
  return reason ? ` (${reason})` : '';
}
