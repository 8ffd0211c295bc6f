/** A host (IPv4 address, [IPv6] address or DNS name) and a port. */
export interface HostPort {
  host: string;
  port: number;
}

const HOST_PORT =
  /^(\d{1,3}(?:\.\d{1,3}){3}|\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*):(\d{1,5})$/;

/** `host:port` read, or what is wrong with it. */
export function parseHostPort(value: string): HostPort | { problem: string } {
  const match = HOST_PORT.exec(value.trim());
  const port = Number(match?.[2]);
  if (!match?.[1] || !Number.isInteger(port) || port < 1 || port > 65535)
    return {
      problem: `must be host:port (an IPv4 address, [IPv6 address] or DNS name, and a port 1-65535), such as 10.0.0.1:443, not "${value}"`,
    };
  const host = match[1].replace(/^\[|\]$/g, '');
  if (/^\d+(\.\d+){3}$/.test(host) && host.split('.').some((octet) => Number(octet) > 255))
    return { problem: `"${host}" is not an IPv4 address` };
  return { host, port };
}
