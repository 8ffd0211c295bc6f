import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { inflateRawSync } from 'node:zlib';
import { HEALTHY_CONDITIONS } from '../../lib/provider/mock/mock-node.ts';
import { toTableDefinition } from '../../lib/state/table-definition.ts';
import { codeBlocks, doc, section } from '../support/readme.ts';

const root = new URL('../..', import.meta.url).pathname;
const KUBELET_API_CERTIFICATE = 'arn:aws:acm:us-east-1:123456789012:certificate/wildcard-nodes';

/** Each function's zip and its handler's file. */
const BUNDLES = {
  'tick.zip': 'functions/tick.mjs',
  'heartbeat.zip': 'functions/heartbeat.mjs',
  'podWatch.zip': 'functions/pod-watch.mjs',
  'podSync.zip': 'functions/pod-sync.mjs',
  'podStatus.zip': 'functions/pod-status.mjs',
  'reconcile.zip': 'functions/reconcile.mjs',
  'ecsTaskState.zip': 'functions/ecs-task-state.mjs',
  'kubeletApi.zip': 'functions/kubelet-api.mjs',
};

/** A string only the ECS provider's code holds (lib/provider/ecs/ecs-node.ts). */
const ECS_MARKER = 'AWS Fargate (serverless-virtual-kubelet ecs-fargate provider)';

/**
 * Strings only `@kubernetes/client-node`'s code holds: its generated APIs'
 * error for an unexpected status, and its KubeConfig's refusal of plain
 * http. No function loads client-node at import (lib/kube/client.ts); its
 * KubeConfig comes in a chunk of its own when a kubeconfig needs it.
 */
const CLIENT_NODE_MARKERS = [
  'Unknown API Status Code!',
  'HTTP protocol is not allowed when skipTLSVerify is not set or false',
];

/**
 * The fully configured package: an ECS Fargate deployment (the provider's IAM
 * and event rule with real values), reaching an EKS cluster, with alarms
 * notifying a topic, the kubelet API (created only with its domain,
 * infra/kubelet-api.yml) and X-Ray tracing.
 */
const FULL_PARAMS = {
  provider: 'ecs-fargate',
  ecsCluster: 'pods',
  ecsSubnets: 'subnet-0123456789abcdef0',
  ecsExecutionRoleArn: 'arn:aws:iam::123456789012:role/svk-task-execution',
  ecsTaskRoleArn: 'arn:aws:iam::123456789012:role/svk-pods',
  ecsLogGroup: '/svk/ci/pods',
  ecsPodTaskRoleArns: 'arn:aws:iam::123456789012:role/payments-api',
  eksClusterName: 'svk-ci',
  alarmTopicArn: 'arn:aws:sns:us-east-1:123456789012:svk-alarms',
  kubeletApiDomain: 'nodes.example.com',
  kubeletApiCertificateArn: KUBELET_API_CERTIFICATE,
  kubeletApiTruststoreUri: 's3://example-truststore/cluster-ca.pem',
  tracing: 'true',
};

/**
 * A Docker deployment whose engine is reached over TLS, its client
 * certificate in Secrets Manager (the only secret of this package: no
 * kubeconfig source, so every secretsmanager:GetSecretValue is the engine's).
 */
const DOCKER_TLS_PARAMS = {
  provider: 'docker',
  dockerHost: 'tcp://engine.internal:2376',
  dockerTlsSecretArn: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:engine-tls-AbCdEf',
};

/** What StateTablePolicy grants every role on the state table. */
const STATE_TABLE_ACTIONS = [
  'dynamodb:ConditionCheckItem',
  'dynamodb:DeleteItem',
  'dynamodb:GetItem',
  'dynamodb:PutItem',
  'dynamodb:Query',
  'dynamodb:UpdateItem',
];
const XRAY_POLICY = { 'Fn::Sub': `arn:$\{AWS::Partition}:iam::aws:policy/AWSXRayDaemonWriteAccess` };

interface Template {
  Resources: Record<string, Resource>;
  Conditions?: Record<string, unknown>;
  Outputs?: Record<string, unknown>;
}

/**
 * `serverless package` into `out`, offline: no AWS credentials, and none of
 * the deploying shell's SVK_* variables (the parameters' defaults read them).
 */
async function serverlessPackage(
  stage: string,
  out: string,
  params: Record<string, string>,
): Promise<Template> {
  const env = { ...process.env };
  for (const name of Object.keys(env)) {
    if (
      name.startsWith('SVK_') ||
      ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE'].includes(name)
    )
      delete env[name];
  }
  await promisify(execFile)(
    join(root, 'node_modules/.bin/serverless'),
    [
      'package',
      '--stage',
      stage,
      '--package',
      out,
      ...Object.entries(params).map(([k, v]) => `--param=${k}=${v}`),
    ],
    {
      cwd: root,
      env: { ...env, AWS_SHARED_CREDENTIALS_FILE: '/nonexistent', AWS_CONFIG_FILE: '/nonexistent' },
      // Bundling every function takes about a minute on a quiet 2-core machine, several when it is busy.
      timeout: 600_000,
    },
  );
  return JSON.parse(readFileSync(join(out, 'cloudformation-template-update-stack.json'), 'utf8'));
}

/**
 * cfn-lint's findings on a template, but W3005 (the DependsOn osls adds from
 * each function to its role, which the role's GetAtt already implies); null
 * when cfn-lint is not on PATH.
 */
async function cfnLint(path: string): Promise<string[] | null> {
  try {
    await promisify(execFile)('cfn-lint', ['--format', 'parseable', path], { timeout: 300_000 });
    return [];
  } catch (err) {
    const e = err as { code?: unknown; stdout?: string };
    if (e.code === 'ENOENT') return null;
    if (typeof e.stdout !== 'string') throw err;
    return e.stdout
      .split('\n')
      .filter((line) => line.trim() !== '')
      .filter((line) => !/:W3005:/.test(line));
  }
}

/** The files of a zip archive by name, as text (stored or deflated entries, read from the central directory). */
function readZip(path: string): Map<string, string> {
  const zip = readFileSync(path);
  const end = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  assert.ok(end >= 0, `${path} is a zip`);
  const files = new Map<string, string>();
  let at = zip.readUInt32LE(end + 16);
  for (let i = 0; i < zip.readUInt16LE(end + 10); i++) {
    const method = zip.readUInt16LE(at + 10);
    const size = zip.readUInt32LE(at + 20);
    const nameLength = zip.readUInt16LE(at + 28);
    const name = zip.toString('utf8', at + 46, at + 46 + nameLength);
    const local = zip.readUInt32LE(at + 42);
    const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    const data = zip.subarray(start, start + size);
    files.set(name, (method === 8 ? inflateRawSync(data) : data).toString('utf8'));
    at += 46 + nameLength + zip.readUInt16LE(at + 30) + zip.readUInt16LE(at + 32);
  }
  return files;
}

/** The relative ES module imports of a bundled file: `from"./x.mjs"`, `import"./x.mjs"`, `import("./x.mjs")`. */
function relativeImports(source: string): Array<{ path: string; dynamic: boolean }> {
  return [...source.matchAll(/\b(?:from|import)\s*(\(?)\s*"\.\/([^"]+\.mjs)"/g)].map((m) => ({
    path: m[2] ?? '',
    dynamic: m[1] === '(',
  }));
}

interface Resource {
  Type: string;
  Properties: Record<string, unknown>;
}

describe('serverless package (offline, no AWS credentials)', () => {
  const out = mkdtempSync(join(tmpdir(), 'svk-package-'));
  const defaultOut = mkdtempSync(join(tmpdir(), 'svk-package-default-'));
  /** The fully configured package (FULL_PARAMS), which most tests read. */
  let template: Template = { Resources: {} };
  let resources: Record<string, Resource> = {};
  /** `npm run package`'s: stage local, every parameter at its default. */
  let defaults: Template = { Resources: {} };
  /** The Docker provider over TLS (DOCKER_TLS_PARAMS). */
  const dockerOut = mkdtempSync(join(tmpdir(), 'svk-package-docker-'));
  let docker: Template = { Resources: {} };

  before(async () => {
    // One after the other: both bundle into the checkout's .esbuild folder.
    template = await serverlessPackage('ci', out, FULL_PARAMS);
    resources = template.Resources;
    defaults = await serverlessPackage('local', defaultOut, {});
    docker = await serverlessPackage('docker', dockerOut, DOCKER_TLS_PARAMS);
  });

  const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
  const FUNCTIONS = {
    TickLambdaFunction: { role: 'TickRole', logGroup: 'TickLogGroup' },
    HeartbeatLambdaFunction: { role: 'HeartbeatRole', logGroup: 'HeartbeatLogGroup' },
    PodWatchLambdaFunction: { role: 'PodWatchRole', logGroup: 'PodWatchLogGroup' },
    PodSyncLambdaFunction: { role: 'PodSyncRole', logGroup: 'PodSyncLogGroup' },
    PodStatusLambdaFunction: { role: 'PodStatusRole', logGroup: 'PodStatusLogGroup' },
    EcsTaskStateLambdaFunction: { role: 'EcsTaskStateRole', logGroup: 'EcsTaskStateLogGroup' },
  };

  after(() => {
    rmSync(out, { recursive: true, force: true });
    rmSync(defaultOut, { recursive: true, force: true });
    rmSync(dockerOut, { recursive: true, force: true });
  });

  it('lints clean with cfn-lint, the default package, the fully configured one and the docker one (but W3005)', async (t) => {
    for (const [name, dir] of [
      ['default', defaultOut],
      ['fully configured', out],
      ['docker over TLS', dockerOut],
    ] as const) {
      const findings = await cfnLint(join(dir, 'cloudformation-template-update-stack.json'));
      if (findings === null) {
        t.skip('cfn-lint not on PATH');
        return;
      }
      assert.deepEqual(findings, [], `cfn-lint on the ${name} package`);
    }
  });

  it('decides every Condition at package time: what the parameters leave out is not in the template', () => {
    assert.equal(template.Conditions, undefined, 'no Conditions in the fully configured template');
    assert.equal(defaults.Conditions, undefined, 'nor in the default one');
    for (const [id, r] of [...Object.entries(resources), ...Object.entries(defaults.Resources)]) {
      assert.equal((r as unknown as { Condition?: string }).Condition, undefined, id);
      assert.ok(!JSON.stringify(r).includes('"Fn::If"'), `${id}: no Fn::If left`);
      assert.ok(!JSON.stringify(r).includes('AWS::NoValue'), `${id}: no AWS::NoValue left`);
    }
    // The default package: the mock provider, no cluster access configured, no kubelet API, alarms without a topic.
    const left = (prefix: RegExp) => Object.keys(defaults.Resources).filter((id) => prefix.test(id));
    assert.deepEqual(left(/^KubeletApi/), [], 'no kubelet API without its domain');
    assert.equal(defaults.Outputs?.KubeletApiRegionalDomainName, undefined);
    assert.deepEqual(left(/^Ecs.*Policy$/), [], 'no ECS policies for the mock provider');
    assert.deepEqual(left(/^(ClusterAccessPolicy|DockerEngineTlsPolicy)$/), [], 'no credential policies');
    assert.deepEqual(
      left(/^(Heartbeat|PodWatch|PodStatus|Reconcile)ErrorsAlarm$/),
      [],
      'Errors alarms for the tick cadence only',
    );
    assert.ok(defaults.Resources.TickErrorsAlarm && defaults.Resources.LeaseRenewalLagAlarm, 'alarms on');
    assert.deepEqual(defaults.Resources.TickErrorsAlarm.Properties.AlarmActions, [], 'no topic to notify');
    for (const [id, r] of Object.entries(defaults.Resources)) {
      if (r.Type === 'AWS::IAM::Role')
        assert.deepEqual(
          r.Properties.ManagedPolicyArns,
          [{ Ref: 'StateTablePolicy' }],
          `${id}: the table only`,
        );
    }
  });

  it('traces every function with X-Ray when `tracing` is true, and none by default', () => {
    const functions = (t: Template) =>
      Object.entries(t.Resources).filter(([, r]) => r.Type === 'AWS::Lambda::Function');
    assert.equal(functions(template).length, 8);
    for (const [id, fn] of functions(template)) {
      assert.deepEqual(fn.Properties.TracingConfig, { Mode: 'Active' }, id);
      const role = (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
      assert.ok(
        ((resources[role]?.Properties.ManagedPolicyArns ?? []) as unknown[]).some(
          (arn) => JSON.stringify(arn) === JSON.stringify(XRAY_POLICY),
        ),
        `${role} may send traces`,
      );
    }
    for (const [id, fn] of functions(defaults)) assert.equal(fn.Properties.TracingConfig, undefined, id);
    assert.ok(!JSON.stringify(defaults.Resources).includes('AWSXRayDaemonWriteAccess'));
  });

  it('defines the state table from infra/dynamodb-table.yml: keys, index, TTL, PITR, encryption', () => {
    const table = resources.StateTable;
    assert.equal(table?.Type, 'AWS::DynamoDB::Table');
    const expected = toTableDefinition().createTable;
    assert.deepEqual(table.Properties.KeySchema, expected.KeySchema);
    assert.deepEqual(table.Properties.AttributeDefinitions, expected.AttributeDefinitions);
    assert.equal(table.Properties.BillingMode, 'PAY_PER_REQUEST');
    assert.deepEqual(table.Properties.TimeToLiveSpecification, { AttributeName: 'expiresAt', Enabled: true });
    assert.deepEqual(table.Properties.PointInTimeRecoverySpecification, { PointInTimeRecoveryEnabled: true });
    assert.deepEqual(table.Properties.SSESpecification, { SSEEnabled: true });
    assert.deepEqual(
      (table.Properties.GlobalSecondaryIndexes as Array<{ IndexName: string }>).map((i) => i.IndexName),
      ['gsi1'],
    );
  });

  it('defines the heartbeat function on nodejs22.x, scheduled every minute, with the table name', () => {
    const fn = resources.HeartbeatLambdaFunction;
    assert.equal(fn?.Type, 'AWS::Lambda::Function');
    assert.equal(fn.Properties.Runtime, 'nodejs22.x');
    assert.equal(fn.Properties.Handler, 'functions/heartbeat.handler');
    assert.ok((fn.Properties.Timeout as number) > 120, 'outlives two schedule periods for the hot standby');
    const env = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
    assert.deepEqual(env.SVK_TABLE_NAME, { Ref: 'StateTable' });
    const rules = Object.values(resources).filter(
      (r) =>
        r.Type === 'AWS::Events::Rule' &&
        JSON.stringify(r.Properties.Targets).includes('HeartbeatLambdaFunction'),
    );
    assert.equal(rules.length, 1);
    assert.equal(rules[0]?.Properties.ScheduleExpression, 'rate(1 minute)');
  });

  it('chains the tick function through a FIFO queue, with a keeper schedule; the continuous schedules are off', () => {
    const queue = resources.TickQueue?.Properties ?? {};
    assert.equal(queue.FifoQueue, true);
    assert.equal(queue.ContentBasedDeduplication, false, 'deduplication ids are the slots');
    assert.equal(Number(queue.DelaySeconds), 10, 'one lease renew interval');
    assert.equal(queue.RedrivePolicy, undefined, 'no dead-letter queue: it would end the chain');
    const fn = resources.TickLambdaFunction?.Properties ?? {};
    assert.equal(fn.Handler, 'functions/tick.handler');
    assert.ok(
      (fn.Timeout as number) < (queue.VisibilityTimeout as number),
      'a tick ends before its message is delivered again',
    );
    const env = (fn.Environment as { Variables: Record<string, unknown> }).Variables;
    assert.deepEqual(env.SVK_TICK_QUEUE_URL, { Ref: 'TickQueue' });
    const [[, mapping] = []] = ofType('AWS::Lambda::EventSourceMapping');
    assert.deepEqual(mapping?.Properties.EventSourceArn, { 'Fn::GetAtt': ['TickQueue', 'Arn'] });
    assert.equal(mapping?.Properties.BatchSize, 1);
    assert.equal(mapping?.Properties.Enabled, true);
    const schedules = (fn: string) =>
      ofType('AWS::Events::Rule').filter(
        ([, r]) => JSON.stringify(r.Properties.Targets).includes(fn) && r.Properties.ScheduleExpression,
      );
    const [[, keeper] = []] = schedules('TickLambdaFunction');
    assert.equal(keeper?.Properties.State, 'ENABLED');
    for (const fn of ['Heartbeat', 'PodWatch', 'PodStatus', 'Reconcile']) {
      const [[, rule] = []] = schedules(`${fn}LambdaFunction`);
      assert.equal(rule?.Properties.State, 'DISABLED', `${fn}: deployed, not scheduled`);
    }
  });

  it('schedules pod-watch and pod-status every minute, and triggers pod-sync from the pod event rule', () => {
    for (const name of ['PodWatchLambdaFunction', 'PodStatusLambdaFunction', 'PodSyncLambdaFunction']) {
      assert.equal(resources[name]?.Properties.Runtime, 'nodejs22.x', name);
    }
    const rules = Object.values(resources).filter((r) => r.Type === 'AWS::Events::Rule');
    const scheduled = (fn: string) =>
      rules.filter(
        (r) => JSON.stringify(r.Properties.Targets).includes(fn) && r.Properties.ScheduleExpression,
      );
    assert.equal(scheduled('PodWatchLambdaFunction').length, 1);
    assert.equal(scheduled('PodStatusLambdaFunction').length, 1);
    const syncRule = rules.find((r) =>
      JSON.stringify(r.Properties.Targets).includes('PodSyncLambdaFunction'),
    );
    assert.ok(syncRule, 'a rule targets pod-sync');
    assert.deepEqual(syncRule.Properties.EventPattern, {
      source: ['serverless-virtual-kubelet.pod-watch'],
      'detail-type': ['PodChanged'],
    });
    assert.deepEqual(syncRule.Properties.EventBusName, { 'Fn::GetAtt': ['PodEventBus', 'Name'] });
    const target = (syncRule.Properties.Targets as Array<Record<string, unknown>>)[0];
    assert.deepEqual(target?.DeadLetterConfig, { Arn: { 'Fn::GetAtt': ['PodSyncDeadLetterQueue', 'Arn'] } });
    assert.deepEqual(target?.RetryPolicy, { MaximumEventAgeInSeconds: 3600, MaximumRetryAttempts: 20 });
  });

  it('sends pod-sync failures after Lambda retries to the dead-letter queue', () => {
    const config = Object.values(resources).find(
      (r) => r.Type === 'AWS::Lambda::EventInvokeConfig' && JSON.stringify(r.Properties).includes('PodSync'),
    );
    assert.ok(config, 'an EventInvokeConfig for pod-sync');
    assert.equal(config.Properties.MaximumRetryAttempts, 2);
    assert.deepEqual(config.Properties.DestinationConfig, {
      OnFailure: { Destination: { 'Fn::GetAtt': ['PodSyncDeadLetterQueue', 'Arn'] } },
    });
  });

  it('gives every function its own role, bounded concurrency where it must be, and sized memory', () => {
    assert.equal(resources.IamRoleLambdaExecution, undefined, 'no shared execution role');
    for (const [fn, { role }] of Object.entries(FUNCTIONS)) {
      const props = resources[fn]?.Properties ?? {};
      assert.deepEqual(props.Role, { 'Fn::GetAtt': [role, 'Arn'] }, fn);
      assert.equal(resources[role]?.Type, 'AWS::IAM::Role', role);
      assert.ok(typeof props.MemorySize === 'number' && props.MemorySize >= 256, `${fn} memory`);
      assert.ok(typeof props.ReservedConcurrentExecutions === 'number', `${fn} reserved concurrency`);
      const env = (props.Environment as { Variables: Record<string, unknown> }).Variables;
      assert.equal(env.SVK_METRICS, 'emf');
      assert.equal(env.SVK_DEPLOYMENT_NAME, 'serverless-virtual-kubelet-ci');
      assert.equal(env.SVK_KUBECONFIG, undefined, 'no kubeconfig path or content in the environment');
    }
    assert.equal(resources.PodSyncLambdaFunction?.Properties.Timeout, 60);
    for (const group of Object.values(FUNCTIONS).map((f) => f.logGroup)) {
      assert.equal(resources[group]?.Properties.RetentionInDays, 14, group);
    }
  });

  it('names specific actions and specific resources in every IAM statement', () => {
    type Statement = { Effect: string; Action: string | string[]; Resource: unknown };
    const statements: Array<[string, Statement]> = [];
    const collect = (owner: string, doc: unknown) => {
      for (const st of (doc as { Statement: unknown[] }).Statement) {
        // A statement present only under a condition: Fn::If [cond, statement, NoValue].
        const s = (st as Record<string, unknown>)['Fn::If']
          ? (st as { 'Fn::If': unknown[] })['Fn::If'][1]
          : st;
        statements.push([owner, s as Statement]);
      }
    };
    for (const [name, r] of ofType('AWS::IAM::ManagedPolicy')) collect(name, r.Properties.PolicyDocument);
    for (const [name, r] of ofType('AWS::IAM::Role')) {
      for (const p of (r.Properties.Policies as Array<{ PolicyDocument: unknown }>) ?? [])
        collect(name, p.PolicyDocument);
    }
    assert.ok(statements.length >= 12, `found ${statements.length} statements`);
    for (const [owner, st] of statements) {
      assert.equal(st.Effect, 'Allow', owner);
      const actions = Array.isArray(st.Action) ? st.Action : [st.Action];
      for (const action of actions)
        assert.match(action, /^[a-z0-9-]+:[A-Za-z]+$/, `${owner}: action ${action}`);
      const resourcesOf = Array.isArray(st.Resource) ? st.Resource : [st.Resource];
      assert.ok(resourcesOf.length > 0, owner);
      // The one exception: RegisterTaskDefinition supports no resource-level permissions.
      if (owner === 'EcsPodCreatePolicy' && actions.join() === 'ecs:RegisterTaskDefinition') {
        assert.deepEqual(st.Resource, '*');
        continue;
      }
      for (const resource of resourcesOf) {
        const text = JSON.stringify(resource);
        assert.notEqual(resource, '*', `${owner}: resource *`);
        assert.doesNotMatch(text, /^"arn:[^"]*:\*"$/, `${owner}: wildcard resource ${text}`);
      }
    }
    const byOwner = (owner: string) =>
      statements
        .filter(([o]) => o === owner)
        .flatMap(([, st]) => (Array.isArray(st.Action) ? st.Action : [st.Action]))
        .sort();
    assert.deepEqual(byOwner('StateTablePolicy'), STATE_TABLE_ACTIONS);
    assert.deepEqual(byOwner('PodWatchRole'), [
      'events:PutEvents',
      'logs:CreateLogStream',
      'logs:PutLogEvents',
    ]);
    assert.deepEqual(byOwner('PodSyncRole'), [
      'logs:CreateLogStream',
      'logs:PutLogEvents',
      'sqs:SendMessage',
    ]);
    assert.deepEqual(byOwner('HeartbeatRole'), ['logs:CreateLogStream', 'logs:PutLogEvents']);
    assert.deepEqual(byOwner('TickRole'), [
      'dynamodb:Query',
      'events:PutEvents',
      'logs:CreateLogStream',
      'logs:PutLogEvents',
      'sqs:DeleteMessage',
      'sqs:GetQueueAttributes',
      'sqs:ReceiveMessage',
      'sqs:SendMessage',
    ]);
    const resourceOf = (owner: string, action: string) =>
      statements.find(([o, st]) => o === owner && [st.Action].flat().includes(action))?.[1].Resource;
    // An EKS cluster configured (this package): describing it is all the credential policy allows.
    assert.deepEqual(byOwner('ClusterAccessPolicy'), ['eks:DescribeCluster']);
    assert.deepEqual(resourceOf('ClusterAccessPolicy', 'eks:DescribeCluster'), [
      { 'Fn::Sub': `arn:$\{AWS::Partition}:eks:$\{AWS::Region}:$\{AWS::AccountId}:cluster/svk-ci` },
    ]);
    assert.deepEqual(resourceOf('StateTablePolicy', 'dynamodb:GetItem'), [
      { 'Fn::GetAtt': ['StateTable', 'Arn'] },
    ]);
    assert.deepEqual(resourceOf('PodWatchRole', 'events:PutEvents'), [
      { 'Fn::GetAtt': ['PodEventBus', 'Arn'] },
    ]);
    assert.deepEqual(resourceOf('PodSyncRole', 'sqs:SendMessage'), [
      { 'Fn::GetAtt': ['PodSyncDeadLetterQueue', 'Arn'] },
    ]);
    assert.deepEqual(resourceOf('PodStatusRole', 'dynamodb:Query'), [
      { 'Fn::Sub': `$\{StateTable.Arn}/index/gsi1` },
    ]);
    assert.deepEqual(resourceOf('TickRole', 'sqs:SendMessage'), [{ 'Fn::GetAtt': ['TickQueue', 'Arn'] }]);
    for (const [fn, { role, logGroup }] of Object.entries(FUNCTIONS)) {
      assert.deepEqual(resourceOf(role, 'logs:PutLogEvents'), [{ 'Fn::GetAtt': [logGroup, 'Arn'] }], fn);
    }
    // With cluster access configured (this package) the credential policy exists, without it not (the
    // default package); the docker provider's engine secret policy only with that secret (neither package).
    assert.equal(resources.ClusterAccessPolicy?.Type, 'AWS::IAM::ManagedPolicy');
    assert.equal(defaults.Resources.ClusterAccessPolicy, undefined);
    assert.equal(resources.DockerEngineTlsPolicy, undefined);
    assert.equal(defaults.Resources.DockerEngineTlsPolicy, undefined);
  });

  it('scopes the ECS provider to its cluster, its task families, its roles and its SSM path; one Resource "*"', () => {
    const policy = (name: string) => {
      const r = resources[name] as unknown as {
        Properties: { PolicyDocument: { Statement: unknown[] } };
      };
      assert.ok(r, `${name} exists for the ecs-fargate provider`);
      assert.equal(defaults.Resources[name], undefined, `${name} exists only for the ecs-fargate provider`);
      return r.Properties.PolicyDocument.Statement.map((st) => {
        const s = st as Record<string, unknown>;
        return (s['Fn::If'] ? (s['Fn::If'] as unknown[])[1] : s) as {
          Sid: string;
          Action: string[];
          Resource: unknown;
          Condition?: unknown;
        };
      });
    };
    const sub = (text: string) => ({ 'Fn::Sub': `arn:$\{AWS::Partition}:${text}` });
    const cluster = sub(`ecs:$\{AWS::Region}:$\{AWS::AccountId}:cluster/pods`);
    const tasks = ['EcsPodTasksPolicy', 'EcsPodCreatePolicy', 'EcsTaskListPolicy'].flatMap(policy);
    const bySid = Object.fromEntries(tasks.map((st) => [st.Sid, st]));
    const wildcards = tasks.filter((st) => JSON.stringify(st.Resource) === '"*"');
    assert.deepEqual(
      wildcards.map((st) => st.Action),
      [['ecs:RegisterTaskDefinition']],
      'the one Resource "*"',
    );
    assert.deepEqual(bySid.RunOurTaskDefinitionsInOurCluster, {
      Sid: 'RunOurTaskDefinitionsInOurCluster',
      Effect: 'Allow',
      Action: ['ecs:RunTask'],
      Resource: [
        sub(`ecs:$\{AWS::Region}:$\{AWS::AccountId}:task-definition/serverless-virtual-kubelet-ci-*`),
      ],
      Condition: { ArnEquals: { 'ecs:cluster': cluster } },
    });
    assert.deepEqual(bySid.TagTasksAsTheyStart?.Condition, {
      StringEquals: { 'ecs:CreateAction': 'RunTask' },
    });
    assert.deepEqual(bySid.OurClusterTasks?.Resource, [
      sub(`ecs:$\{AWS::Region}:$\{AWS::AccountId}:task/pods/*`),
    ]);
    assert.deepEqual(bySid.ListOurClusterTasks?.Condition, { ArnEquals: { 'ecs:cluster': cluster } });
    const passedToEcsTasks = { StringEquals: { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' } };
    assert.deepEqual(bySid.PassTheTaskRoles?.Condition, passedToEcsTasks);
    assert.deepEqual(bySid.PassTheTaskRoles?.Resource, [
      'arn:aws:iam::123456789012:role/svk-task-execution',
      'arn:aws:iam::123456789012:role/svk-pods',
    ]);
    assert.deepEqual(bySid.PassAllowlistedPodTaskRoles?.Condition, passedToEcsTasks);
    assert.deepEqual(bySid.PassAllowlistedPodTaskRoles?.Resource, {
      'Fn::Split': [',', 'arn:aws:iam::123456789012:role/payments-api'],
    });
    const secretsPath = [
      sub(`ssm:$\{AWS::Region}:$\{AWS::AccountId}:parameter/serverless-virtual-kubelet/ci/pod-secrets/*`),
    ];
    assert.deepEqual(bySid.PutPodSecretParameters?.Resource, secretsPath);
    assert.deepEqual(bySid.DeletePodSecretParameters?.Resource, secretsPath);
    assert.deepEqual(policy('EcsClusterPolicy')[0]?.Resource, [cluster]);
    // Who gets which policy: the next test.
  });

  describe("each control-loop role holds exactly what its function's code calls", () => {
    /** Our managed policies a role takes, by logical id (AWS's own by its name), in order. */
    const managedOf = (t: Template, role: string): string[] =>
      ((t.Resources[role]?.Properties.ManagedPolicyArns ?? []) as unknown[]).map((arn) => {
        const ref = (arn as { Ref?: string }).Ref;
        if (ref) return ref;
        return JSON.stringify(arn) === JSON.stringify(XRAY_POLICY)
          ? 'AWSXRayDaemonWriteAccess'
          : JSON.stringify(arn);
      });
    const statementsOf = (doc: unknown) =>
      ((doc as { Statement: unknown[] }).Statement ?? []).map((st) => {
        const s = st as Record<string, unknown>;
        return (s['Fn::If'] ? (s['Fn::If'] as unknown[])[1] : s) as { Action: string | string[] };
      });
    /** Every action a role is granted by our policies (managed and inline), sorted, each once. */
    const actionsOf = (t: Template, role: string): string[] => {
      const docs = [
        ...managedOf(t, role)
          .map((id) => t.Resources[id])
          .filter((r) => r?.Type === 'AWS::IAM::ManagedPolicy')
          .map((r) => r?.Properties.PolicyDocument),
        ...((t.Resources[role]?.Properties.Policies ?? []) as Array<{ PolicyDocument: unknown }>).map(
          (p) => p.PolicyDocument,
        ),
      ];
      return [...new Set(docs.flatMap(statementsOf).flatMap((st) => [st.Action].flat()))].sort();
    };
    /** `of(role)` for each role, so that one assertion shows every role that differs. */
    const byRole = (roles: readonly string[], of: (role: string) => string[]) =>
      Object.fromEntries(roles.map((role) => [role, of(role)]));
    const sorted = (...groups: string[][]) => [...new Set(groups.flat())].sort();
    const table = STATE_TABLE_ACTIONS;
    const logs = ['logs:CreateLogStream', 'logs:PutLogEvents'];
    const tickQueue = [
      'sqs:DeleteMessage',
      'sqs:GetQueueAttributes',
      'sqs:ReceiveMessage',
      'sqs:SendMessage',
    ];
    const ROLES = [
      'TickRole',
      'HeartbeatRole',
      'PodWatchRole',
      'PodSyncRole',
      'PodStatusRole',
      'ReconcileRole',
      'EcsTaskStateRole',
    ];

    it('ECS: each role the ECS calls its function makes, no more (the fully configured package)', () => {
      // The ECS provider's calls, by the part of its code that makes them (infra/ecs-iam.yml).
      const advance = [
        'ecs:DescribeTasks',
        'ecs:RunTask',
        'ecs:StopTask',
        'ecs:TagResource',
        'iam:PassRole',
        'ssm:DeleteParameter',
      ];
      const create = ['ecs:RegisterTaskDefinition', 'ssm:PutParameter'];
      const list = ['ecs:ListTasks'];
      const ping = ['ecs:DescribeClusters'];
      const eks = ['eks:DescribeCluster'];
      assert.deepEqual(
        byRole(ROLES, (role) => actionsOf(template, role)),
        {
          TickRole: sorted(table, eks, logs, tickQueue, ['events:PutEvents'], advance, create, list, ping),
          HeartbeatRole: sorted(table, eks, logs, ping),
          PodWatchRole: sorted(table, eks, logs, ['events:PutEvents']),
          PodSyncRole: sorted(table, eks, logs, ['sqs:SendMessage'], advance, create, list),
          // Restarts, deletes and orphans; never a new pod: no task definitions, no secret values written.
          PodStatusRole: sorted(table, eks, logs, advance, list),
          ReconcileRole: sorted(table, eks, logs, advance, create, list, ping),
          // An event moves one pod on (a restart is a RunTask); it creates no pod and lists no tasks.
          EcsTaskStateRole: sorted(table, eks, logs, advance),
        },
      );
      const common = ['StateTablePolicy', 'AWSXRayDaemonWriteAccess', 'ClusterAccessPolicy'];
      assert.deepEqual(
        byRole(ROLES, (role) => managedOf(template, role)),
        {
          TickRole: [
            ...common,
            'EcsClusterPolicy',
            'EcsPodTasksPolicy',
            'EcsPodCreatePolicy',
            'EcsTaskListPolicy',
          ],
          HeartbeatRole: [...common, 'EcsClusterPolicy'],
          PodWatchRole: common,
          PodSyncRole: [...common, 'EcsPodTasksPolicy', 'EcsPodCreatePolicy', 'EcsTaskListPolicy'],
          PodStatusRole: [...common, 'EcsPodTasksPolicy', 'EcsTaskListPolicy'],
          ReconcileRole: [
            ...common,
            'EcsPodTasksPolicy',
            'EcsPodCreatePolicy',
            'EcsTaskListPolicy',
            'EcsClusterPolicy',
          ],
          EcsTaskStateRole: [...common, 'EcsPodTasksPolicy'],
        },
      );
    });

    it("docker over TLS: the engine's secret only to the roles whose function calls the provider, never pod-watch's", () => {
      const engineSecret = ['secretsmanager:GetSecretValue'];
      assert.deepEqual(
        byRole(ROLES, (role) => actionsOf(docker, role)),
        {
          TickRole: sorted(table, logs, tickQueue, ['events:PutEvents'], engineSecret),
          HeartbeatRole: sorted(table, logs, engineSecret),
          // It builds no provider (loadBaseDependencies), so it never reads the engine's secret.
          PodWatchRole: sorted(table, logs, ['events:PutEvents']),
          PodSyncRole: sorted(table, logs, ['sqs:SendMessage'], engineSecret),
          PodStatusRole: sorted(table, logs, engineSecret),
          ReconcileRole: sorted(table, logs, engineSecret),
          EcsTaskStateRole: sorted(table, logs),
        },
      );
      const engine = ['StateTablePolicy', 'DockerEngineTlsPolicy'];
      assert.deepEqual(
        byRole(ROLES, (role) => managedOf(docker, role)),
        {
          TickRole: engine,
          HeartbeatRole: engine,
          PodWatchRole: ['StateTablePolicy'],
          PodSyncRole: engine,
          PodStatusRole: engine,
          ReconcileRole: engine,
          EcsTaskStateRole: ['StateTablePolicy'],
        },
      );
      const engineTls = docker.Resources.DockerEngineTlsPolicy ?? assert.fail('no DockerEngineTlsPolicy');
      const [statement] = (engineTls.Properties.PolicyDocument as { Statement: Array<{ Resource: unknown }> })
        .Statement;
      assert.deepEqual(statement?.Resource, [DOCKER_TLS_PARAMS.dockerTlsSecretArn], 'that one secret');
    });
  });

  it("delivers our cluster's task-state events from the default bus to ecs-task-state", () => {
    const rule = Object.values(resources).find(
      (r) =>
        r.Type === 'AWS::Events::Rule' &&
        JSON.stringify(r.Properties.Targets).includes('EcsTaskStateLambdaFunction'),
    );
    assert.ok(rule, 'a rule targets ecs-task-state');
    assert.equal(rule.Properties.EventBusName, undefined, 'the default bus, where ECS puts its events');
    assert.deepEqual(rule.Properties.EventPattern, {
      source: ['aws.ecs'],
      'detail-type': ['ECS Task State Change'],
      detail: {
        clusterArn: [
          { 'Fn::Sub': `arn:$\{AWS::Partition}:ecs:$\{AWS::Region}:$\{AWS::AccountId}:cluster/pods` },
        ],
        taskDefinitionArn: [
          {
            prefix: {
              'Fn::Sub': `arn:$\{AWS::Partition}:ecs:$\{AWS::Region}:$\{AWS::AccountId}:task-definition/serverless-virtual-kubelet-ci-`,
            },
          },
        ],
      },
    });
    const fn = resources.EcsTaskStateLambdaFunction ?? assert.fail('no ecs-task-state function');
    const env = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
    assert.equal(env.SVK_PROVIDER, 'ecs-fargate');
    assert.equal(env.SVK_ECS_FAMILY_PREFIX, 'serverless-virtual-kubelet-ci');
    assert.equal(env.SVK_ECS_SECRETS_PATH, '/serverless-virtual-kubelet/ci/pod-secrets');
  });

  it("maps, in docs/deploy.md's EKS access entries, each control-loop role to its function's user and the kubelet API's to its own", () => {
    // A role reaches the cluster as the control loop when it carries the cluster-access policy
    // (kubeconfig secret, parameter or EKS cluster): with EKS IAM authentication each such role
    // needs an access entry; the kubelet API's role carries its own policy and gets its own user.
    const reachesCluster = (role: string) =>
      JSON.stringify(resources[role]?.Properties.ManagedPolicyArns ?? []).includes(
        '{"Ref":"ClusterAccessPolicy"}',
      );
    const roles = ofType('AWS::Lambda::Function').map(([fn, r]) => {
      const role = (r.Properties.Role as { 'Fn::GetAtt'?: [string, string] })['Fn::GetAtt']?.[0];
      return role ?? assert.fail(`${fn} has a role of its own`);
    });
    const expected = [...new Set(roles.filter(reachesCluster))].sort();
    assert.ok(expected.includes('HeartbeatRole') && expected.includes('ReconcileRole'), expected.join());

    const block = codeBlocks(section(doc('docs/deploy.md'), 'Cluster access: choose one')).find((b) =>
      b.includes('aws eks create-access-entry'),
    );
    assert.ok(block, 'docs/deploy.md has the access-entry loop');
    // `for fn in Heartbeat:heartbeat ...; do`: each role's logical id, and the function's own user.
    const loop = /for fn in ([^;]+); do/.exec(block);
    assert.ok(loop, 'the loop names each role by its logical id and its user');
    assert.match(
      block,
      /do\n[^\n]*role_arn \$\{fn%%:\*\}Role[^\n]*\n\s*--username "serverless-virtual-kubelet:\$\{fn#\*:\}" --type STANDARD\ndone/,
    );
    const pairs = (loop[1] ?? '')
      .replaceAll('\\\n', ' ')
      .trim()
      .split(/\s+/)
      .map((item) => item.split(':'));
    // Each function's own user is bound in infra/rbac.yaml (test/integration/rbac.test.ts checks its rights).
    const rbac = readFileSync(join(root, 'infra/rbac.yaml'), 'utf8');
    for (const [id = '', user = ''] of pairs) {
      const kebab = id.replace(/(?<=[a-z])(?=[A-Z])/g, '-').toLowerCase();
      assert.equal(user, kebab, `${id}Role maps to the user of its own function`);
      assert.ok(rbac.includes(`name: serverless-virtual-kubelet:${user}\n`), `infra/rbac.yaml binds ${user}`);
    }
    assert.equal(
      reachesCluster('KubeletApiRole'),
      false,
      'the kubelet API reads no control-loop credentials',
    );
    assert.deepEqual((resources.KubeletApiRole?.Properties.ManagedPolicyArns as unknown[] | undefined)?.[0], {
      Ref: 'KubeletApiClusterAccessPolicy',
    });
    assert.match(
      block,
      /role_arn KubeletApiRole\)" \\\n\s*--username serverless-virtual-kubelet-kubelet-api --type STANDARD/,
      'the kubelet API role maps to its own user',
    );
    const named = pairs.map(([id]) => `${id}Role`);
    assert.deepEqual(named.sort(), expected, 'docs/deploy.md "Cluster access": the roles in the for loop');
  });

  it('lets only the event rules of this deployment write to the dead-letter queue', () => {
    const doc = resources.PodSyncDeadLetterQueuePolicy?.Properties.PolicyDocument as {
      Statement: Array<Record<string, unknown>>;
    };
    const [st] = doc.Statement;
    assert.deepEqual(st?.Principal, { Service: 'events.amazonaws.com' });
    assert.deepEqual(st?.Condition, {
      ArnLike: {
        'aws:SourceArn': {
          'Fn::Sub': `arn:$\{AWS::Partition}:events:$\{AWS::Region}:$\{AWS::AccountId}:rule/serverless-virtual-kubelet-ci/*`,
        },
      },
    });
  });

  it('alarms on the dead-letter queue, the errors of every function and lease renewal lag, with a dashboard', () => {
    const alarms = Object.fromEntries(ofType('AWS::CloudWatch::Alarm'));
    const dlq = alarms.PodSyncDeadLetterAlarm?.Properties;
    assert.equal(dlq?.MetricName, 'ApproximateNumberOfMessagesVisible');
    assert.deepEqual(dlq?.Dimensions, [
      { Name: 'QueueName', Value: { 'Fn::GetAtt': ['PodSyncDeadLetterQueue', 'QueueName'] } },
    ]);
    const lag = alarms.LeaseRenewalLagAlarm?.Properties;
    assert.equal(lag?.Namespace, 'ServerlessVirtualKubelet');
    assert.equal(lag?.MetricName, 'LeaseRenewalLag');
    assert.deepEqual(lag?.Dimensions, [
      { Name: 'Deployment', Value: 'serverless-virtual-kubelet-ci' },
      { Name: 'service', Value: 'serverless-virtual-kubelet' },
    ]);
    assert.ok((lag?.Threshold as number) < 40_000, 'below the node lifecycle grace period');
    assert.equal(lag?.TreatMissingData, 'breaching', 'no heartbeat at all is an alarm too');
    // Errors alarms for the functions of the deployed cadence (tick) only.
    const errorsAlarm = (fn: string) =>
      Object.values(alarms).find(
        (a) => a.Properties.MetricName === 'Errors' && JSON.stringify(a.Properties.Dimensions).includes(fn),
      );
    for (const fn of [
      'TickLambdaFunction',
      'PodSyncLambdaFunction',
      'EcsTaskStateLambdaFunction',
      'KubeletApiLambdaFunction',
    ]) {
      const errors = errorsAlarm(fn);
      assert.ok(errors, `an Errors alarm for ${fn}`);
      assert.deepEqual(
        errors.Properties.AlarmActions,
        [FULL_PARAMS.alarmTopicArn],
        `${fn}: notifies the topic`,
      );
      assert.deepEqual(errors.Properties.OKActions, [FULL_PARAMS.alarmTopicArn]);
    }
    for (const fn of ['Heartbeat', 'PodWatch', 'PodStatus', 'Reconcile'])
      assert.equal(errorsAlarm(`${fn}LambdaFunction`), undefined, `${fn}: no alarm at the tick cadence`);
    const [[, dashboard] = []] = ofType('AWS::CloudWatch::Dashboard');
    assert.ok(dashboard, 'a dashboard');
    const body0 = dashboard.Properties.DashboardBody as { 'Fn::Sub': [string, object] };
    const [text, values] = body0['Fn::Sub'];
    const body = text.replace(/\$\{[A-Za-z:]+\}/g, '0');
    assert.doesNotThrow(() => JSON.parse(body), 'the dashboard body is JSON once substituted');
    assert.ok('Deployment' in values);
    for (const metric of [
      'LeaseRenewalLag',
      'PodSyncLatency',
      'EventsPublished',
      'EventsConsumed',
      'ProviderErrors',
      'LockTakeovers',
      'ApproximateNumberOfMessagesVisible',
    ]) {
      assert.ok(body.includes(metric), `dashboard shows ${metric}`);
    }
  });

  it('serves the kubelet API: REST API, wildcard domain with mutual TLS, default endpoint off, streaming route', () => {
    const kubelet = Object.entries(resources).filter(([name]) => name.startsWith('KubeletApi'));
    assert.ok(kubelet.length >= 10);
    // Created only with kubeletApiDomain: none of them in the default package.
    assert.deepEqual(
      Object.keys(defaults.Resources).filter((name) => name.startsWith('KubeletApi')),
      [],
    );
    assert.ok(template.Outputs?.KubeletApiRegionalDomainName, 'the DNS target is an output');
    const api = resources.KubeletApiRestApi?.Properties;
    assert.equal(resources.KubeletApiRestApi?.Type, 'AWS::ApiGateway::RestApi');
    assert.equal(api?.DisableExecuteApiEndpoint, true, 'the execute-api endpoint would bypass mutual TLS');
    assert.deepEqual(api?.EndpointConfiguration, { Types: ['REGIONAL'] });

    const domain = resources.KubeletApiDomainName?.Properties;
    assert.equal(domain?.DomainName, '*.nodes.example.com');
    assert.equal(domain?.RegionalCertificateArn, KUBELET_API_CERTIFICATE);
    assert.equal(domain?.SecurityPolicy, 'TLS_1_2');
    assert.deepEqual(domain?.EndpointConfiguration, { Types: ['REGIONAL'] });
    const mtls = domain?.MutualTlsAuthentication as { TruststoreUri: string };
    assert.equal(mtls.TruststoreUri, 's3://example-truststore/cluster-ca.pem');
    assert.deepEqual(resources.KubeletApiBasePathMapping?.Properties, {
      DomainName: { Ref: 'KubeletApiDomainName' },
      RestApiId: { Ref: 'KubeletApiRestApi' },
      Stage: { Ref: 'KubeletApiStage' },
    });

    const method = resources.KubeletApiProxyMethod?.Properties;
    assert.equal(method?.HttpMethod, 'ANY');
    assert.deepEqual(method?.ResourceId, { Ref: 'KubeletApiProxyResource' });
    assert.equal(resources.KubeletApiProxyResource?.Properties.PathPart, '{proxy+}');
    const integration = method?.Integration as Record<string, unknown>;
    assert.equal(integration.Type, 'AWS_PROXY');
    assert.equal(integration.ResponseTransferMode, 'STREAM');
    assert.match(
      JSON.stringify(integration.Uri),
      /2021-11-15\/functions\/\$\{KubeletApiLambdaFunction\.Arn\}\/response-streaming-invocations/,
    );
    const permission = resources.KubeletApiInvokePermission?.Properties;
    assert.equal(permission?.Principal, 'apigateway.amazonaws.com');
    // Invoked from the API's own stage only.
    assert.match(
      JSON.stringify(permission?.SourceArn),
      /execute-api:.*\$\{KubeletApiRestApi\}\/kubelet\/\*\/\*"/,
    );

    const fn = resources.KubeletApiLambdaFunction?.Properties;
    assert.equal(fn?.Handler, 'functions/kubelet-api.handler');
    assert.equal(fn?.Timeout, 900, 'outlives the longest follow');
    assert.deepEqual(fn?.Role, { 'Fn::GetAtt': ['KubeletApiRole', 'Arn'] });
    for (const name of ['KubeletApiLambdaFunction', 'HeartbeatLambdaFunction', 'ReconcileLambdaFunction']) {
      const environment = resources[name]?.Properties.Environment as
        | { Variables: Record<string, unknown> }
        | undefined;
      const variables = environment?.Variables ?? {};
      assert.equal(
        variables.SVK_KUBELET_API_DOMAIN,
        'nodes.example.com',
        `${name} publishes the DNS-only addresses`,
      );
    }
    assert.ok(
      !Object.keys(resources).some((k) => /^KubeletApiLambdaVersion/.test(k)),
      'no version outlives the function',
    );
  });

  it('tells the kubelet API function its own API and stage, and bounds it: reserved concurrency, stage throttling', () => {
    const fn = resources.KubeletApiLambdaFunction?.Properties;
    const variables =
      (fn?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables ?? {};
    assert.deepEqual(variables.SVK_KUBELET_API_ID, { Ref: 'KubeletApiRestApi' });
    const stage = resources.KubeletApiStage?.Properties;
    assert.equal(stage?.StageName, 'kubelet');
    assert.equal(
      variables.SVK_KUBELET_API_STAGE,
      stage?.StageName,
      'the stage the function checks is the one deployed',
    );
    assert.equal(fn?.ReservedConcurrentExecutions, 100);
    assert.deepEqual(stage?.MethodSettings, [
      { ResourcePath: '/*', HttpMethod: '*', ThrottlingRateLimit: 250, ThrottlingBurstLimit: 500 },
    ]);
    // Only the kubelet API function is told an API id.
    for (const [name, resource] of Object.entries(resources)) {
      if (resource.Type !== 'AWS::Lambda::Function' || name === 'KubeletApiLambdaFunction') continue;
      const env = (resource.Properties.Environment as { Variables?: Record<string, unknown> } | undefined)
        ?.Variables;
      assert.equal(env?.SVK_KUBELET_API_ID, undefined, name);
    }
  });

  it('gives the kubelet API a least-privilege role: its logs, reads of the state table, its own cluster access, the docker engine secret, the ECS container logs', () => {
    const role = resources.KubeletApiRole?.Properties;
    // This package: its own cluster access (describing the EKS cluster: its role's access entry
    // is its identity), the ecs-fargate provider's logs and tracing; the docker provider's engine
    // secret would come with dockerTlsSecretArn (infra/kubelet-api.yml). Never the control loop's.
    assert.deepEqual(role?.ManagedPolicyArns, [
      { Ref: 'KubeletApiClusterAccessPolicy' },
      { Ref: 'EcsLogsPolicy' },
      XRAY_POLICY,
    ]);
    const access = resources.KubeletApiClusterAccessPolicy?.Properties.PolicyDocument as {
      Statement: Array<Record<string, unknown>>;
    };
    assert.deepEqual(
      access.Statement.map((st) => [st.Action, st.Resource]),
      [
        [
          ['eks:DescribeCluster'],
          [{ 'Fn::Sub': `arn:$\{AWS::Partition}:eks:$\{AWS::Region}:$\{AWS::AccountId}:cluster/svk-ci` }],
        ],
      ],
    );
    // Its function reads its own kubeconfig variables (empty here: EKS), never the control loop's.
    const fnEnvironment = resources.KubeletApiLambdaFunction?.Properties.Environment as
      | { Variables: Record<string, unknown> }
      | undefined;
    const env = fnEnvironment?.Variables ?? {};
    assert.equal(env.SVK_KUBECONFIG_SECRET, '');
    assert.equal(env.SVK_KUBECONFIG_PARAMETER, '');
    assert.equal(defaults.Resources.KubeletApiClusterAccessPolicy, undefined);
    const [policy] = (role?.Policies ?? []) as Array<{
      PolicyDocument: { Statement: Array<Record<string, unknown>> };
    }>;
    const statements = policy?.PolicyDocument.Statement ?? [];
    assert.deepEqual(
      statements.map((st) => [st.Action, st.Resource]),
      [
        [['logs:CreateLogStream', 'logs:PutLogEvents'], [{ 'Fn::GetAtt': ['KubeletApiLogGroup', 'Arn'] }]],
        [
          ['dynamodb:GetItem', 'dynamodb:Query'],
          [{ 'Fn::GetAtt': ['StateTable', 'Arn'] }, { 'Fn::Sub': `$\{StateTable.Arn}/index/gsi1` }],
        ],
      ],
    );
  });

  it('puts in each zip its own handler and chunks only, and no source map', () => {
    for (const [zip, entry] of Object.entries(BUNDLES)) {
      const own = entry.replace(/\.mjs$/, '.');
      const files = [...readZip(join(out, zip)).keys()];
      assert.deepEqual(
        files.filter((name) => name.endsWith('.map')),
        [],
        `${zip}: the source maps stay outside`,
      );
      assert.deepEqual(
        files.filter((name) => name.endsWith('.mjs') && name !== entry && !name.startsWith(own)),
        [],
        `${zip}: every chunk is ${entry}'s (named ${own}*)`,
      );
    }
  });

  it('bundles every function as ESM, the provider factory in a chunk of its own loaded by import(), client-node not at import', () => {
    // A string only the mock provider's code holds (lib/provider/mock/mock-node.ts).
    const mockMarker = HEALTHY_CONDITIONS[0]?.message ?? assert.fail('no mock condition');
    for (const [zip, entry] of Object.entries(BUNDLES)) {
      const files = readZip(join(out, zip));
      const source = (name: string) => files.get(name) ?? assert.fail(`${zip}: ${name} missing`);
      assert.ok(files.has(entry), `${zip} holds ${entry}`);
      for (const [name, text] of files) {
        if (!name.endsWith('.mjs')) continue;
        for (const { path } of relativeImports(text))
          assert.ok(files.has(join('functions', path)), `${zip}: ${name} imports ${path}, which is there`);
      }
      // What the handler loads at once: its file and the chunks it imports statically, transitively.
      const eager = new Set([entry]);
      for (const name of eager) {
        for (const imported of relativeImports(source(name)))
          if (!imported.dynamic) eager.add(join('functions', imported.path));
      }
      for (const name of eager) {
        assert.ok(!source(name).includes(mockMarker), `${zip}: ${name} holds no mock provider`);
        // The ECS provider is ecs-task-state's own code; every other function loads it only when chosen.
        if (zip !== 'ecsTaskState.zip')
          assert.ok(!source(name).includes(ECS_MARKER), `${zip}: ${name} holds no ECS provider`);
      }
      for (const name of eager) {
        for (const marker of CLIENT_NODE_MARKERS)
          assert.ok(
            !source(name).includes(marker),
            `${zip}: ${name} holds no @kubernetes/client-node (${marker})`,
          );
      }
      const lazy = relativeImports(source(entry)).filter((i) => i.dynamic);
      for (const [marker, provider] of [
        [mockMarker, 'mock'],
        [ECS_MARKER, 'ecs-fargate'],
      ] as const) {
        if (zip === 'ecsTaskState.zip' && provider === 'ecs-fargate') continue;
        assert.ok(
          lazy.some(({ path }) => source(join('functions', path)).includes(marker)),
          `${zip}: the ${provider} provider is a chunk the handler imports dynamically`,
        );
      }
    }
  });
});
