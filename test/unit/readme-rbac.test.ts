/**
 * The RBAC tables of docs/deploy.md list exactly the rules of infra/rbac.yaml,
 * one table per identity (the user its bindings name): one row per rule of
 * each ClusterRole and Role bound to it, with the same resources, API
 * group, resource names, namespace and verbs. A rule added to the manifest
 * fails this test until the document has its row (the message gives it).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadAll } from 'js-yaml';
import { doc, section, tableRows } from '../support/readme.ts';
import { ROOT } from '../support/source-graph.ts';

/** One rule, in the terms of a table row. */
interface Grant {
  resources: string[];
  group: string;
  names: string[];
  /** The Role's namespace; undefined for a ClusterRole. */
  namespace: string | undefined;
  verbs: string[];
}

const sorted = (values: readonly string[]) => [...values].sort();

/** A grant as the table row that states it, e.g. ``leases (coordination.k8s.io) in `kube-node-lease` (Role) | get, update``. */
function asRow(g: Grant): string {
  return [
    g.resources.join(', '),
    g.group ? ` (${g.group})` : '',
    g.names.length > 0 ? ` named ${g.names.map((n) => `\`${n}\``).join(', ')}` : '',
    g.namespace ? ` in \`${g.namespace}\` (Role)` : '',
    ` | ${g.verbs.join(', ')}`,
  ].join('');
}

/** Comparable text of a grant: sets sorted. */
function key(g: Grant): string {
  return asRow({ ...g, resources: sorted(g.resources), names: sorted(g.names), verbs: sorted(g.verbs) });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function strings(value: unknown, what: string): string[] {
  assert.ok(
    Array.isArray(value) && value.every((v) => typeof v === 'string'),
    `${what} is a list of strings`,
  );
  return value;
}

/** Each identity of infra/rbac.yaml and the docs/deploy.md section whose table lists its rules. */
const SECTIONS: Record<string, string> = {
  'serverless-virtual-kubelet': 'RBAC: what the virtual kubelet may do',
  'serverless-virtual-kubelet-kubelet-api': 'RBAC: what the kubelet API may do',
};

/** `kind/namespace/name` of a role, as a binding's roleRef names it. */
function roleKey(kind: unknown, namespace: unknown, name: unknown): string {
  return `${String(kind)}/${kind === 'Role' ? String(namespace) : ''}/${String(name)}`;
}

/** Every rule of every ClusterRole and Role in infra/rbac.yaml bound to the user `user`. */
function manifestGrants(user: string): Grant[] {
  const docs = loadAll(readFileSync(join(ROOT, 'infra/rbac.yaml'), 'utf8')).filter(isRecord);
  const boundTo = new Map<string, string[]>();
  for (const doc of docs) {
    if (doc.kind !== 'ClusterRoleBinding' && doc.kind !== 'RoleBinding') continue;
    const metadata = isRecord(doc.metadata) ? doc.metadata : {};
    const ref = isRecord(doc.roleRef) ? doc.roleRef : {};
    const users = (Array.isArray(doc.subjects) ? doc.subjects : [])
      .filter((s): s is Record<string, unknown> => isRecord(s) && s.kind === 'User')
      .map((s) => String(s.name));
    boundTo.set(roleKey(ref.kind, metadata.namespace, ref.name), users);
  }
  const grants: Grant[] = [];
  for (const doc of docs) {
    if (doc.kind !== 'ClusterRole' && doc.kind !== 'Role') continue;
    const metadata = isRecord(doc.metadata) ? doc.metadata : {};
    const users = boundTo.get(roleKey(doc.kind, metadata.namespace, metadata.name)) ?? [];
    assert.equal(users.length, 1, `${String(metadata.name)} is bound to one user`);
    assert.ok(
      users[0] && users[0] in SECTIONS,
      `${String(metadata.name)}: its user ${users[0]} has a section`,
    );
    if (users[0] !== user) continue;
    const namespace = doc.kind === 'Role' ? String(metadata.namespace) : undefined;
    for (const rule of Array.isArray(doc.rules) ? doc.rules : []) {
      assert.ok(isRecord(rule), 'a rule is a mapping');
      const groups = strings(rule.apiGroups, 'apiGroups');
      grants.push({
        resources: strings(rule.resources, 'resources'),
        group: groups.join(', '),
        names: rule.resourceNames === undefined ? [] : strings(rule.resourceNames, 'resourceNames'),
        namespace,
        verbs: strings(rule.verbs, 'verbs'),
      });
    }
  }
  return grants;
}

/**
 * A table row: `resources[ (group)][ named names][ in namespace[ only] (Role)] | verbs | why`,
 * code spans allowed anywhere.
 */
const ROW = new RegExp(
  [
    '^(?<resources>[a-z/]+(?:, [a-z/]+)*)',
    '(?: \\((?<group>[a-z0-9.-]+)\\))?',
    '(?: named (?<names>[a-z0-9.-]+(?:, [a-z0-9.-]+)*))?',
    '(?: in (?<namespace>[a-z0-9-]+)(?: only)? \\(Role\\))?$',
  ].join(''),
);

function documentedGrants(title: string): Grant[] {
  const rows = tableRows(section(doc('docs/deploy.md'), title));
  assert.ok(rows.length > 0, `the section "${title}" has a table`);
  return rows.map(([resource = '', verbs = '']) => {
    const match = ROW.exec(resource.replaceAll('`', ''));
    assert.ok(
      match?.groups,
      `docs/deploy.md RBAC row "${resource}" does not read as: resources (group) named names in namespace (Role)`,
    );
    const { groups } = match;
    const list = (text: string | undefined) => (text ? text.split(', ') : []);
    return {
      resources: list(groups.resources),
      group: groups.group ?? '',
      names: list(groups.names),
      namespace: groups.namespace,
      verbs: list(verbs.replaceAll('`', '')),
    };
  });
}

describe('docs/deploy.md RBAC tables (infra/rbac.yaml)', () => {
  it('reads the manifest: rules of both ClusterRoles and of both Roles', () => {
    const grants = manifestGrants('serverless-virtual-kubelet');
    assert.ok(grants.some((g) => g.namespace === undefined && g.resources.includes('nodes')));
    assert.ok(grants.some((g) => g.namespace === 'kube-node-lease' && g.group === 'coordination.k8s.io'));
    assert.ok(grants.some((g) => g.namespace === 'kube-system' && g.names.length > 0));
    const api = manifestGrants('serverless-virtual-kubelet-kubelet-api');
    assert.ok(api.some((g) => g.resources.includes('tokenreviews')));
    assert.ok(
      !grants.some((g) => g.resources.includes('tokenreviews')),
      "the reviews are the kubelet API's only",
    );
  });

  for (const [user, title] of Object.entries(SECTIONS)) {
    it(`"${title}" has one row per rule bound to ${user}, with the same resources, group, names, namespace and verbs`, () => {
      const manifest = manifestGrants(user);
      const documented = documentedGrants(title);
      const wanted = manifest.map(key);
      const have = documented.map(key);
      const missing = manifest.filter((g) => !have.includes(key(g))).map(asRow);
      const extra = documented.filter((g) => !wanted.includes(key(g))).map(asRow);
      assert.deepEqual(
        { missing, extra },
        { missing: [], extra: [] },
        'missing: rows to add; extra: rows to fix or drop',
      );
      assert.deepEqual(sorted(have), sorted(wanted), 'one row per rule');
    });
  }
});
