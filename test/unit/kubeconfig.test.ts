/**
 * Kubeconfigs loaded through client-node's KubeConfig (lib/kube/kubeconfig.ts,
 * kube-context.ts), seen through what a request carries: the fields read,
 * kubectl's merge of KUBECONFIG's files, relative paths, exec plugins (run
 * for real), OIDC, basic auth, impersonation and proxies, and bad input
 * refused with an error that names what is wrong and never quotes a value.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { KubeConfigError, loadKubeConfig } from '../../lib/kube/client.ts';
import { defaultKubeConfig } from '../../lib/kube/kubeconfig.ts';

const dir = mkdtempSync(join(tmpdir(), 'svk-kubeconfig-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, content: string): string {
  const path = join(dir, name);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, content);
  return path;
}

const b64 = (text: string) => Buffer.from(text).toString('base64');

function kubeconfig(cluster: string, user: string, current = 'ctx'): string {
  return `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: ${cluster}
users:
- name: u
  user: ${user}
contexts:
- name: ctx
  context: { cluster: c, user: u, namespace: ns }
current-context: ${current}
`;
}

/** The KubeConfigError message of loading `yaml` inline. */
async function refusal(yaml: string): Promise<string> {
  try {
    await loadKubeConfig({ kubeconfigYaml: yaml });
  } catch (err) {
    assert.ok(err instanceof KubeConfigError, `a KubeConfigError, not ${String(err)}`);
    return err.message;
  }
  return assert.fail('loaded');
}

describe('kubeconfig loading', () => {
  it('reads server, CA data, token and TLS server name of the current context', async () => {
    const kc = await loadKubeConfig({
      kubeconfigYaml: kubeconfig(
        `{ server: 'https://10.0.0.1:6443/', certificate-authority-data: ${b64('CA PEM')}, tls-server-name: api.internal }`,
        '{ token: s3cr3t }',
      ),
    });
    assert.equal(kc.name, 'ctx');
    assert.equal(kc.server, 'https://10.0.0.1:6443', 'no trailing slash');
    assert.equal(kc.ca?.toString(), 'CA PEM');
    assert.equal(kc.token, 's3cr3t');
    assert.equal((await kc.connect()).headers.Authorization, 'Bearer s3cr3t');
    assert.equal(
      kc.url('/api/v1/pods', { limit: 5, watch: true, x: undefined }).href,
      'https://10.0.0.1:6443/api/v1/pods?limit=5&watch=true',
    );
  });

  it('reads certificate, key, CA and token files relative to the kubeconfig file', async () => {
    file('certs/ca.crt', 'CA FROM FILE');
    file('certs/client.crt', 'CERT');
    file('certs/client.key', 'KEY');
    file('certs/token', 'file-token\n');
    const path = file(
      'nested/config',
      kubeconfig(
        "{ server: 'https://k', certificate-authority: ../certs/ca.crt }",
        '{ client-certificate: ../certs/client.crt, client-key: ../certs/client.key, token-file: ../certs/token }',
      ),
    );
    const kc = await loadKubeConfig({ kubeconfigPath: path });
    assert.equal(kc.ca?.toString(), 'CA FROM FILE');
    assert.equal(kc.token, undefined, 'a token file is not a static token');
    assert.equal(
      (await kc.connect()).headers.Authorization,
      'Bearer file-token',
      'read, white space trimmed',
    );
    const { agent } = await kc.connect();
    const tls = (agent as unknown as { options: { cert?: Buffer; key?: Buffer; ca?: Buffer } }).options;
    assert.equal(tls.cert?.toString(), 'CERT');
    assert.equal(tls.key?.toString(), 'KEY');
    assert.equal(tls.ca?.toString(), 'CA FROM FILE');
  });

  it('merges KUBECONFIG as kubectl does: the first file to set a name or the current context wins', async () => {
    const first = file('merge/a', kubeconfig("{ server: 'https://first' }", '{ token: a }', 'ctx'));
    const second = file(
      'merge/b',
      `clusters: [{ name: c, cluster: { server: 'https://second' } }, { name: d, cluster: { server: 'https://d' } }]
users: [{ name: u, user: { token: b } }]
contexts: [{ name: other, context: { cluster: d, user: u } }]
current-context: other
`,
    );
    const merged = await defaultKubeConfig(
      { KUBECONFIG: [join(dir, 'missing'), first, second].join(delimiter) },
      dir,
    );
    assert.equal(merged.getCurrentContext(), 'ctx');
    assert.deepEqual(
      merged.clusters.map((c) => [c.name, c.server]),
      [
        ['c', 'https://first'],
        ['d', 'https://d'],
      ],
    );
    assert.deepEqual(
      merged.contexts.map((c) => c.name),
      ['ctx', 'other'],
    );
    await assert.rejects(
      defaultKubeConfig({ KUBECONFIG: join(dir, 'missing') }, dir),
      /none of KUBECONFIG's files exist/,
    );
  });

  it('looks for ~/.kube/config without KUBECONFIG, and says so when there is nothing', async () => {
    const home = join(dir, 'home');
    file('home/.kube/config', kubeconfig("{ server: 'https://home' }", '{ token: h }'));
    assert.equal((await defaultKubeConfig({}, home)).clusters[0]?.server, 'https://home');
    await assert.rejects(defaultKubeConfig({}, join(dir, 'nohome')), /no kubeconfig: KUBECONFIG is not set/);
  });

  it('authenticates exec plugins, OIDC, basic auth, impersonation and proxies through client-node', async () => {
    const connect = async (user: string, cluster = "{ server: 'https://k' }") =>
      (await loadKubeConfig({ kubeconfigYaml: kubeconfig(cluster, user) })).connect();
    assert.equal(
      (await connect('{ username: a, password: b }')).headers.Authorization,
      `Basic ${b64('a:b')}`,
    );
    const impersonating = await connect('{ token: t, as: admin }');
    assert.equal(impersonating.headers['Impersonate-User'], 'admin');
    assert.equal(impersonating.headers.Authorization, 'Bearer t');
    // OIDC: an unexpired id-token is sent as it is.
    const jwt = [{ alg: 'none' }, { exp: Math.floor(Date.now() / 1000) + 3600 }]
      .map((part) => Buffer.from(JSON.stringify(part)).toString('base64url'))
      .concat('sig')
      .join('.');
    assert.equal(
      (
        await connect(
          `{ auth-provider: { name: oidc, config: { id-token: '${jwt}', client-id: c, idp-issuer-url: 'https://issuer' } } }`,
        )
      ).headers.Authorization,
      `Bearer ${jwt}`,
    );
    const proxied = await connect('{ token: t }', "{ server: 'https://k', proxy-url: 'http://proxy:3128' }");
    assert.equal(proxied.agent.constructor.name, 'HttpsProxyAgent', "client-node's proxy agent");
    assert.notEqual((await connect('{ token: t }')).agent.constructor.name, 'HttpsProxyAgent');
    // An exec plugin, run by client-node's KubeConfig.
    const credential = JSON.stringify({
      apiVersion: 'client.authentication.k8s.io/v1beta1',
      kind: 'ExecCredential',
      status: { token: 'from-exec-plugin' },
    });
    const script = file('exec-plugin.mjs', `console.log(${JSON.stringify(credential)});`);
    const exec = await connect(
      `{ exec: { apiVersion: client.authentication.k8s.io/v1beta1, command: ${process.execPath}, args: [${script}] } }`,
    );
    assert.equal(exec.headers.Authorization, 'Bearer from-exec-plugin');
  });

  it('refuses bad input naming what is wrong, never quoting a value', async () => {
    const secret = 'tok-0123456789';
    const notYaml = await refusal(`users:\n- name: u\n  user: { token: ${secret}\ncontexts: [`);
    assert.match(notYaml, /^cannot load inline kubeconfig: not valid YAML \(line \d+\)$/);
    assert.doesNotMatch(notYaml, new RegExp(secret));
    assert.match(await refusal('- just\n- a list\n'), /not a kubeconfig: a YAML mapping was expected/);
    assert.match(
      await refusal(kubeconfig("{ server: 'https://k' }", '{}', "''")),
      /no current-context is set/,
    );
    assert.match(
      await refusal(kubeconfig("{ server: 'https://k' }", '{}', 'nope')),
      /current-context "nope" is not among its contexts/,
    );
    assert.match(await refusal(kubeconfig('{}', '{}')), /cluster "c" has no server/);
    assert.match(
      await refusal(kubeconfig("{ server: 'not a url' }", '{}')),
      /cluster "c": server is not a URL/,
    );
    assert.match(
      await refusal(kubeconfig("{ server: 'http://k' }", '{}')),
      /server must be https \(http only with insecure-skip-tls-verify: true\)/,
    );
    assert.equal(
      (
        await loadKubeConfig({
          kubeconfigYaml: kubeconfig("{ server: 'http://k', insecure-skip-tls-verify: true }", '{}'),
        })
      ).server,
      'http://k',
    );
    assert.match(
      await refusal(kubeconfig("{ server: 'https://k' }", `{ client-certificate-data: ${b64('CERT')} }`)),
      /user "u": client-certificate and client-key must be given together/,
    );
    assert.match(
      await refusal(kubeconfig("{ server: 'https://k', certificate-authority: /nonexistent/ca.crt }", '{}')),
      /cluster "c": cannot read certificate-authority \/nonexistent\/ca.crt: ENOENT/,
    );
    assert.match(
      await refusal(kubeconfig("{ server: 'https://k' }", '{ token: [1, 2] }')),
      /user "u": token must be a string/,
    );
    assert.match(await refusal('clusters: {}\n'), /clusters must be a list/);
    assert.match(await refusal('contexts: [{ context: {} }]\n'), /contexts\[0\] has no name/);
    assert.match(
      await refusal(
        `${kubeconfig("{ server: 'https://k' }", '{}')}`.replace(
          'user: u, namespace',
          'user: nobody, namespace',
        ),
      ),
      /context "ctx" names user "nobody", which is not defined/,
    );
    await assert.rejects(
      loadKubeConfig({ kubeconfigPath: join(dir, 'absent') }),
      /^KubeConfigError: cannot load kubeconfig .*absent: cannot read .*absent: ENOENT$/,
    );
  });
});
