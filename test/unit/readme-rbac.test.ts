/**
 * The RBAC tables of docs/deploy.md list exactly the rules of infra/rbac.yaml,
 * one table per identity of its own (each control-loop function's user, and
 * the kubelet API's): one row per rule of each ClusterRole and Role bound to
 * it, with the same resources, API group, resource names, namespace and
 * verbs. A rule added to the manifest fails this test until the document has
 * its row (the message gives it). The tick's user and the shared identity
 * have no rules of their own: they are bound to the functions' roles (the
 * tick to its four parts', the shared user and group to all), which the
 * table of the section above them states and this test checks.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadAll } from 'js-yaml';
import { codeSpans, doc, section, tableRows } from '../support/readme.ts';
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

/** The shared identity (user and group) of a control loop with one kubeconfig. */
const SHARED = 'serverless-virtual-kubelet';
const KUBELET_API = 'serverless-virtual-kubelet-kubelet-api';
/** The control loop's functions with an identity of their own, and the tick's parts among them. */
const FUNCTIONS = ['heartbeat', 'pod-watch', 'pod-sync', 'pod-status', 'reconcile', 'ecs-task-state'];
const TICK_PARTS = ['heartbeat', 'pod-watch', 'pod-status', 'reconcile'];
const functionUser = (fn: string) => `${SHARED}:${fn}`;
const TICK = functionUser('tick');

/** Each identity with a table of its own in docs/deploy.md, and the section that holds it. */
const SECTIONS: Record<string, string> = {
  ...Object.fromEntries(FUNCTIONS.map((fn) => [functionUser(fn), `${fn}: \`${functionUser(fn)}\``])),
  [KUBELET_API]: 'RBAC: what the kubelet API may do',
};
/** The section whose first table names each control-loop user's roles. */
const CONTROL_LOOP = 'RBAC: what the virtual kubelet may do';

/** `kind/namespace/name` of a role, as a binding's roleRef names it. */
function roleKey(kind: unknown, namespace: unknown, name: unknown): string {
  return `${String(kind)}/${kind === 'Role' ? String(namespace) : ''}/${String(name)}`;
}

/** A ClusterRole or Role of infra/rbac.yaml with its rules and who is bound to it. */
interface Role {
  key: string;
  name: string;
  grants: Grant[];
  users: string[];
  groups: string[];
}

/** Every ClusterRole and Role of infra/rbac.yaml, with the users and groups its bindings name. */
function manifestRoles(): Role[] {
  const docs = loadAll(readFileSync(join(ROOT, 'infra/rbac.yaml'), 'utf8')).filter(isRecord);
  const subjects = new Map<string, Record<string, unknown>[]>();
  for (const doc of docs) {
    if (doc.kind !== 'ClusterRoleBinding' && doc.kind !== 'RoleBinding') continue;
    const metadata = isRecord(doc.metadata) ? doc.metadata : {};
    const ref = isRecord(doc.roleRef) ? doc.roleRef : {};
    const key = roleKey(ref.kind, metadata.namespace, ref.name);
    const list = (Array.isArray(doc.subjects) ? doc.subjects : []).filter(isRecord);
    subjects.set(key, [...(subjects.get(key) ?? []), ...list]);
  }
  const roles: Role[] = [];
  for (const doc of docs) {
    if (doc.kind !== 'ClusterRole' && doc.kind !== 'Role') continue;
    const metadata = isRecord(doc.metadata) ? doc.metadata : {};
    const key = roleKey(doc.kind, metadata.namespace, metadata.name);
    const bound = subjects.get(key) ?? [];
    const namespace = doc.kind === 'Role' ? String(metadata.namespace) : undefined;
    const grants: Grant[] = [];
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
    roles.push({
      key,
      name: String(metadata.name),
      grants,
      users: bound.filter((s) => s.kind === 'User').map((s) => String(s.name)),
      groups: bound.filter((s) => s.kind === 'Group').map((s) => String(s.name)),
    });
  }
  return roles;
}

/** Every rule of every ClusterRole and Role in infra/rbac.yaml bound to the user `user`. */
function manifestGrants(user: string): Grant[] {
  return manifestRoles()
    .filter((r) => r.users.includes(user))
    .flatMap((r) => r.grants);
}

/** The keys of the roles bound to `user`, sorted. */
function rolesOf(user: string): string[] {
  return sorted(
    manifestRoles()
      .filter((r) => r.users.includes(user))
      .map((r) => r.key),
  );
}

/**
 * What a set of rules allows, as one line per resource, API group,
 * namespace and name with its verbs merged: two sets of rules allow the
 * same exactly when these are equal.
 */
function rights(grants: readonly Grant[]): string[] {
  const verbs = new Map<string, Set<string>>();
  for (const g of grants)
    for (const resource of g.resources)
      for (const name of g.names.length > 0 ? g.names : ['*']) {
        const at = `${resource} (${g.group}) in ${g.namespace ?? '*'} named ${name}`;
        const set = verbs.get(at) ?? new Set<string>();
        for (const v of g.verbs) set.add(v);
        verbs.set(at, set);
      }
  return [...verbs].map(([at, set]) => `${at}: ${sorted([...set]).join(', ')}`).sort();
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
  it('reads the manifest: a ClusterRole per function, the lease Roles, the node-config Role', () => {
    const heartbeat = manifestGrants(functionUser('heartbeat'));
    assert.ok(heartbeat.some((g) => g.namespace === undefined && g.resources.includes('nodes')));
    assert.ok(heartbeat.some((g) => g.namespace === 'kube-node-lease' && g.group === 'coordination.k8s.io'));
    assert.ok(heartbeat.some((g) => g.namespace === 'kube-system' && g.names.length > 0));
    assert.ok(manifestGrants(functionUser('pod-sync')).some((g) => g.resources.includes('secrets')));
    const api = manifestGrants(KUBELET_API);
    assert.ok(api.some((g) => g.resources.includes('tokenreviews')));
    assert.ok(
      !manifestGrants(SHARED).some((g) => g.resources.includes('tokenreviews')),
      "the reviews are the kubelet API's only",
    );
  });

  it('binds each role to one identity of its own: one function, or the kubelet API', () => {
    const own = [...FUNCTIONS.map(functionUser), KUBELET_API];
    for (const role of manifestRoles()) {
      const owners = role.users.filter((u) => own.includes(u));
      assert.equal(owners.length, 1, `${role.key} is bound to one function's user or the kubelet API's`);
      const unknown = role.users.filter((u) => !own.includes(u) && u !== TICK && u !== SHARED);
      assert.deepEqual(unknown, [], `${role.key}: users infra/rbac.yaml does not describe`);
    }
  });

  it('binds the tick to exactly the roles of its four parts, so it holds their union', () => {
    assert.deepEqual(
      rolesOf(TICK),
      sorted([...new Set(TICK_PARTS.flatMap((fn) => rolesOf(functionUser(fn))))]),
    );
  });

  it(`binds the shared user and group ${SHARED} to every function's roles and to nothing else`, () => {
    const functionRoles = sorted([...new Set(FUNCTIONS.flatMap((fn) => rolesOf(functionUser(fn))))]);
    assert.deepEqual(rolesOf(SHARED), functionRoles, 'the user');
    const grouped = manifestRoles()
      .filter((r) => r.groups.includes(SHARED))
      .map((r) => r.key);
    assert.deepEqual(sorted(grouped), functionRoles, 'the group');
    // pod-sync and ecs-task-state need nothing the tick's parts lack: the tick's rights are the shared ones.
    assert.deepEqual(rights(manifestGrants(TICK)), rights(manifestGrants(SHARED)));
  });

  it(`"${CONTROL_LOOP}" names the roles each control-loop user is bound to`, () => {
    const rows = tableRows(section(doc('docs/deploy.md'), CONTROL_LOOP));
    const users = [...FUNCTIONS.map(functionUser), TICK, SHARED];
    const documented = new Map(
      rows.map(([user = '', roles = '']) => [
        codeSpans(user)[0] ?? user,
        // The roles' names; other code spans (a Role's namespace) are not names.
        sorted(codeSpans(roles).filter((span) => span.startsWith(`${SHARED}-`))),
      ]),
    );
    assert.deepEqual(sorted([...documented.keys()]), sorted(users), 'one row per user');
    for (const user of users) {
      const names = sorted([...new Set(rolesOf(user).map((k) => k.split('/')[2] ?? ''))]);
      assert.deepEqual(documented.get(user), names, `the roles of ${user}`);
    }
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
