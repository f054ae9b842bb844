/**
 * Which URLs an event may be sent to (docs/events.md, "Where events go"). A product's `webhook_url` is the
 * store's data, and the Worker fetches it: a URL naming this machine or a private network would have the
 * Worker knock on doors its caller cannot reach. So the same rule is asked where the target is decided (the
 * change that makes the event), where it is fetched (each delivery, so an event stored under an older rule is
 * not sent) and on a redelivery.
 *
 * The host is judged as the URL parser leaves it: WHATWG parsing already turns every spelling of an IPv4
 * address (`2130706433`, `0x7f.1`, `127.1`, full-width digits) into dotted decimal and every IPv6 address
 * into its compressed hex form, so only those two forms are read here. A name is judged by its text only:
 * no DNS is asked (a name that resolves to a private address is not caught here).
 */

/** IPv4 blocks no event goes to: [first address as a number, prefix length]. */
const localIpv4: readonly (readonly [number, number])[] = [
  [ipv4(0, 0, 0, 0), 8], // "this network", 0.0.0.0 included
  [ipv4(10, 0, 0, 0), 8], // private
  [ipv4(100, 64, 0, 0), 10], // carrier-grade NAT
  [ipv4(127, 0, 0, 0), 8], // loopback
  [ipv4(169, 254, 0, 0), 16], // link-local (cloud metadata services live here)
  [ipv4(172, 16, 0, 0), 12], // private
  [ipv4(192, 168, 0, 0), 16], // private
  [ipv4(224, 0, 0, 0), 4], // multicast: never one receiver
  [ipv4(240, 0, 0, 0), 4], // reserved, and the broadcast address
];

function ipv4(a: number, b: number, c: number, d: number): number {
  return ((a << 24) | (b << 16) | (c << 8) | d) >>> 0;
}

function inIpv4Block(address: number, [first, bits]: readonly [number, number]): boolean {
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  return (address & mask) >>> 0 === first;
}

/** A dotted-decimal IPv4 address as a number; null for any other text. */
function parseIpv4(text: string): number | null {
  const parts = text.split(".");
  if (parts.length !== 4 || !parts.every((part) => /^\d{1,3}$/.test(part) && Number(part) <= 255)) return null;
  const [a, b, c, d] = parts.map(Number) as [number, number, number, number];
  return ipv4(a, b, c, d);
}

const isLocalIpv4 = (address: number) => localIpv4.some((block) => inIpv4Block(address, block));

/**
 * An IPv6 address (without brackets) in the hex form the URL parser writes (groups of up to four hex digits,
 * one `::` at most) as its eight 16-bit groups; null for any other text.
 */
function parseIpv6(text: string): number[] | null {
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const groups = (half: string | undefined) => (half ? half.split(":") : []);
  const head = groups(halves[0]);
  const tail = groups(halves[1]);
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const all = [...head, ...Array.from({ length: halves.length === 2 ? missing : 0 }, () => "0"), ...tail];
  if (!all.every((group) => /^[0-9a-f]{1,4}$/.test(group))) return null;
  return all.map((group) => Number.parseInt(group, 16));
}

/** Whether an IPv6 address (eight groups) is loopback, unspecified, private, link-local or carries a local IPv4. */
function isLocalIpv6(groups: number[]): boolean {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = groups;
  const embedded = ((g6 << 16) | g7) >>> 0;
  const zeroHead = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0;
  // ::/96: the unspecified address, loopback (::1) and the deprecated IPv4-compatible addresses, none a receiver.
  if (zeroHead && g5 === 0) return true;
  // ::ffff:0:0/96, IPv4-mapped: the IPv4 address it carries decides.
  if (zeroHead && g5 === 0xffff) return isLocalIpv4(embedded);
  // 64:ff9b::/96, the NAT64 prefix: a gateway would forward to the IPv4 address it carries.
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return isLocalIpv4(embedded);
  if ((g0 & 0xfe00) === 0xfc00) return true; // fc00::/7, unique local (private)
  if ((g0 & 0xffc0) === 0xfe80) return true; // fe80::/10, link-local
  if ((g0 & 0xffc0) === 0xfec0) return true; // fec0::/10, the deprecated site-local (private)
  if ((g0 & 0xff00) === 0xff00) return true; // ff00::/8, multicast
  return false;
}

/**
 * Whether `hostname`, as `URL.hostname` gives it, names this machine or a private network: `localhost` and
 * any name under it, or an IP address in a loopback, private, link-local, carrier-grade NAT, unspecified,
 * multicast or reserved block. Bracketed text this module cannot read as the parser's IPv6 form counts as
 * local: refused, not guessed.
 */
export function isLocalHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  if (host.startsWith("[") && host.endsWith("]")) {
    const groups = parseIpv6(host.slice(1, -1));
    return groups === null || isLocalIpv6(groups);
  }
  const address = parseIpv4(host);
  return address !== null && isLocalIpv4(address);
}

/**
 * Why no event may be sent to `url`, or null when one may: it must be an `https:` URL without credentials
 * whose host is not local (see {@link isLocalHost}). `developmentTargets()` (`WEBHOOK_ALLOW_HTTP=on`) also
 * allows plain `http:` and local hosts, for receivers on the developer's machine; it is asked only for such
 * a URL, so a malformed setting fails only the events that need it.
 */
export function targetRefusal(url: string | URL, developmentTargets: () => boolean): string | null {
  let parsed: URL;
  try {
    parsed = typeof url === "string" ? new URL(url) : url;
  } catch {
    return "not a URL";
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") return "not an https: URL";
  // Refused rather than sent without them: the receiver would see requests it was never meant to get.
  if (parsed.username !== "" || parsed.password !== "") return "the URL carries credentials";
  if (parsed.protocol === "http:" && !developmentTargets())
    return "plain http: is allowed only with WEBHOOK_ALLOW_HTTP=on";
  if (isLocalHost(parsed.hostname) && !developmentTargets()) {
    return "the host is this machine or a private network (allowed only with WEBHOOK_ALLOW_HTTP=on)";
  }
  return null;
}
