import type { StatusReport } from './collect.ts';

/** Left-aligned columns, two spaces apart; `-` for empty cells. */
export function table(header: readonly string[], rows: ReadonlyArray<ReadonlyArray<string>>): string {
  const cells = [header, ...rows].map((row) => header.map((_, i) => row[i] || '-'));
  const widths = header.map((_, i) => Math.max(...cells.map((row) => row[i]?.length ?? 0)));
  return cells
    .map((row) =>
      row
        .map((c, i) => c.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

const age = (s: number | undefined) => (s === undefined ? '' : `${s}s`);

/** The human-readable form of `npm run status`. */
export function renderStatus(report: StatusReport): string {
  const out: string[] = [];
  out.push(
    `serverless-virtual-kubelet status at ${report.generatedAt} (table ${report.table}, provider ${report.provider})`,
  );
  out.push('', 'NODES');
  out.push(
    table(
      ['NAME', 'REGISTERED', 'READY', 'REASON', 'LEASE AGE', 'CONFIGOK', 'DEGRADED'],
      report.nodes.map((n) => [
        n.name,
        n.registered ? 'yes' : 'no',
        n.ready ?? '',
        n.readyReason ?? '',
        age(n.leaseAgeSeconds),
        n.configOk ? `${n.configOk.status}${n.configOk.reason ? ` (${n.configOk.reason})` : ''}` : '',
        n.stateStoreUnavailable === 'True' ? 'yes (no DynamoDB)' : 'no',
      ]),
    ),
  );
  out.push('', 'LOCKS');
  out.push(
    table(
      ['NAME', 'STATE', 'EPOCH', 'OWNER', 'AGE', 'LEASE'],
      report.locks.map((l) => [
        l.name,
        l.state,
        l.epoch === undefined ? '' : String(l.epoch),
        l.owner ?? '',
        age(l.ageSeconds),
        age(l.ttlSeconds),
      ]),
    ),
  );
  out.push('', 'RECONCILER');
  out.push(
    report.reconciler
      ? table(
          ['FIELD', 'VALUE'],
          Object.entries(report.reconciler).map(([k, v]) => [k, String(v)]),
        )
      : 'none',
  );
  out.push('', 'PODS');
  out.push(
    report.pods.length === 0
      ? 'none'
      : table(
          ['NODE', 'POD', 'UID', 'KNOWN', 'APPLIED', 'API', 'PROVIDER', 'NOTE'],
          report.pods.map((p) => [
            p.node,
            p.pod,
            p.uid.slice(0, 8),
            p.known ? 'yes' : 'no',
            p.applied ? 'yes' : 'no',
            p.apiPhase,
            p.providerPhase,
            [
              p.claimedBy ? `claimed by ${p.claimedBy}` : '',
              p.forceDeleteAt ? `force delete at ${p.forceDeleteAt}` : '',
            ]
              .filter(Boolean)
              .join('; '),
          ]),
        ),
  );
  out.push('', 'DEAD-LETTER QUEUE', ...deadLetterLines(report.deadLetterQueue));
  if (report.errors.length > 0) {
    out.push('', 'ERRORS');
    for (const e of report.errors) out.push(`${e.section}: ${e.error}`);
  }
  return `${out.join('\n')}\n`;
}

function deadLetterLines(dlq: StatusReport['deadLetterQueue']): string[] {
  const lines: string[] = [];
  lines.push(
    dlq.depth === null
      ? (dlq.note ?? 'n/a')
      : `${dlq.depth} message(s) waiting${dlq.inFlight ? `, ${dlq.inFlight} in flight` : ''}` +
          `${dlq.oldestAgeSeconds !== undefined ? `, oldest ${Math.round(dlq.oldestAgeSeconds)} s old` : ''} (${dlq.url})`,
  );
  if (dlq.depth) lines.push('redrive them with `npm run redrive` (docs/operations.md, "Dead letters")');
  return lines;
}
