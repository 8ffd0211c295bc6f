/**
 * A tar archive of directories, regular files and symlinks, as the engines'
 * archive endpoints extract it (`PUT /containers/{id}/archive`): ustar
 * headers, a PAX header before an entry whose name or link is longer than
 * the 100 bytes ustar holds. Owned by root, in group root unless an entry
 * names its group (a pod's fsGroup). Both engines apply a `./` entry's mode
 * and group to the directory extracted into (Podman does; Docker Engine
 * skips it).
 */

export type TarEntry =
  | { type: 'dir'; name: string; mode: number; gid?: number }
  | { type: 'file'; name: string; mode: number; content: Buffer; gid?: number }
  | { type: 'symlink'; name: string; target: string };

const BLOCK = 512;
const MAX_USTAR_ID = 0o7777777;

export function tarArchive(entries: readonly TarEntry[], mtime: Date): Buffer {
  const parts: Buffer[] = [];
  const seconds = Math.floor(mtime.getTime() / 1000);
  for (const entry of entries) {
    const name = entry.type === 'dir' ? `${entry.name.replace(/\/$/, '')}/` : entry.name;
    const target = entry.type === 'symlink' ? entry.target : '';
    const gid = entry.type === 'symlink' ? 0 : (entry.gid ?? 0);
    // ustar holds a group id of 7 octal digits; a larger one goes in the PAX header.
    const bigGid = gid > MAX_USTAR_ID;
    if (Buffer.byteLength(name) > 100 || Buffer.byteLength(target) > 100 || bigGid) {
      const records = Buffer.concat([
        paxRecord('path', name),
        ...(target ? [paxRecord('linkpath', target)] : []),
        ...(bigGid ? [paxRecord('gid', String(gid))] : []),
      ]);
      parts.push(header('PaxHeader', 0o644, records.length, 'x', '', seconds, 0), padded(records));
    }
    const content = entry.type === 'file' ? entry.content : Buffer.alloc(0);
    const mode = entry.type === 'symlink' ? 0o777 : entry.mode;
    const type = entry.type === 'dir' ? '5' : entry.type === 'symlink' ? '2' : '0';
    parts.push(header(name, mode, content.length, type, target, seconds, bigGid ? 0 : gid));
    if (content.length > 0) parts.push(padded(content));
  }
  parts.push(Buffer.alloc(2 * BLOCK));
  return Buffer.concat(parts);
}

function header(
  name: string,
  mode: number,
  size: number,
  type: string,
  link: string,
  mtime: number,
  gid: number,
): Buffer {
  const h = Buffer.alloc(BLOCK);
  h.write(truncate(name, 100), 0, 100, 'utf8');
  h.write(`${octal(mode, 7)}\0`, 100);
  h.write(`${octal(0, 7)}\0`, 108);
  h.write(`${octal(gid, 7)}\0`, 116);
  h.write(`${octal(size, 11)}\0`, 124);
  h.write(`${octal(mtime, 11)}\0`, 136);
  h.write('        ', 148);
  h.write(type, 156);
  h.write(truncate(link, 100), 157, 100, 'utf8');
  h.write('ustar\0', 257);
  h.write('00', 263);
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(`${octal(sum, 6)}\0 `, 148);
  return h;
}

/** At most `max` bytes of `text` (the PAX header holds the whole of it). */
function truncate(text: string, max: number): string {
  const bytes = Buffer.from(text);
  return bytes.length <= max ? text : bytes.subarray(0, max).toString('latin1');
}

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width, '0');
}

function padded(content: Buffer): Buffer {
  const rest = content.length % BLOCK;
  return rest === 0 ? content : Buffer.concat([content, Buffer.alloc(BLOCK - rest)]);
}

/** A PAX record: `<length> <key>=<value>\n`, the length counting itself. */
function paxRecord(key: string, value: string): Buffer {
  const body = ` ${key}=${value}\n`;
  const bodyLength = Buffer.byteLength(body);
  let length = bodyLength + String(bodyLength).length;
  if (String(length).length + bodyLength !== length) length = bodyLength + String(length).length;
  return Buffer.from(`${length}${body}`);
}
