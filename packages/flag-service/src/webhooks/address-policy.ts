import { BlockList, isIP } from 'node:net'

/**
 * Addresses a webhook may not reach unless private targets are allowed: this
 * host (loopback, unspecified), private networks, link-local (with the cloud
 * metadata service at 169.254.169.254 and fd00:ec2::254), carrier-grade NAT,
 * multicast and reserved ranges. BlockList checks an IPv4-mapped IPv6 address
 * (`::ffff:127.0.0.1`) against the IPv4 rules; NAT64 addresses are refused whole.
 */
const refused = new BlockList()
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  refused.addSubnet(network, prefix, 'ipv4')
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  refused.addSubnet(network, prefix, 'ipv6')
}

/** Whether `address` (an IP literal) is one a webhook must not reach. Anything not an IP is refused too. */
export function isRefusedAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 4) return refused.check(address, 'ipv4')
  if (family === 6) return refused.check(address, 'ipv6')
  return true
}

/** A target the address policy refused: a delivery failure, never retried into a private network. */
export class RefusedTargetError extends Error {
  override readonly name = 'RefusedTargetError'
  readonly code = 'refused_target'
  constructor(host: string, address: string) {
    super(
      `refused: ${host} resolves to ${address}, a loopback, private, link-local or metadata address ` +
        '(set WEBHOOK_ALLOW_PRIVATE_TARGETS=true to allow it)',
    )
  }
}
